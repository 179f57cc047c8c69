// RUN: teeny-opt %s --split-input-file -p canonicalize | filecheck %s
// RUN: teeny-opt %s --split-input-file --pass-pipeline='builtin.module(canonicalize)' | filecheck %s
// RUN: teeny-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(canonicalize))' | filecheck %s

// CHECK-LABEL: func.func @identities
// CHECK-SAME:    (%[[A:.*]]: i32, %[[B:.*]]: i32)
// CHECK-NEXT:    func.return %[[A]], %[[B]] : i32, i32
func.func @identities(%a: i32, %b: i32) -> (i32, i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %0 = arith.addi %a, %c0 : i32
  %1 = arith.muli %b, %c1 : i32
  func.return %0, %1 : i32, i32
}

// -----

// CHECK-LABEL: func.func @fold_constants
// CHECK-NEXT:    %[[C:.*]] = arith.constant 5 : i32
// CHECK-NEXT:    func.return %[[C]] : i32
func.func @fold_constants() -> i32 {
  %c2 = arith.constant 2 : i32
  %c3 = arith.constant 3 : i32
  %0 = arith.addi %c2, %c3 : i32
  func.return %0 : i32
}

// -----

// A constant operand of a commutative op moves to the right.
// CHECK-LABEL: func.func @constant_to_the_right
// CHECK-SAME:    (%[[A:.*]]: i32)
// CHECK-NEXT:    %[[C:.*]] = arith.constant 4 : i32
// CHECK-NEXT:    %[[R:.*]] = arith.addi %[[A]], %[[C]] : i32
// CHECK-NEXT:    func.return %[[R]] : i32
func.func @constant_to_the_right(%a: i32) -> i32 {
  %c4 = arith.constant 4 : i32
  %0 = arith.addi %c4, %a : i32
  func.return %0 : i32
}

// -----

// The rewrite driver erases dead side-effect-free ops, graph ops included.
// CHECK-LABEL: func.func @dead_ops_erased
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>, %[[A:.*]]: i32)
// CHECK-NEXT:    func.return %[[X]] : tensor<2x3xf32>
func.func @dead_ops_erased(%x: tensor<2x3xf32>, %a: i32) -> tensor<2x3xf32> {
  %0 = graph.silu %x : tensor<2x3xf32>
  %1 = arith.muli %a, %a : i32
  func.return %x : tensor<2x3xf32>
}

// -----

// Nothing to simplify: the function comes out unchanged.
func.func private @effect(i32) -> i32

// CHECK-LABEL: func.func @nothing_applies
// CHECK-SAME:    (%[[A:.*]]: i32, %[[B:.*]]: i32, %[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT:    %[[D:.*]] = arith.subi %[[A]], %[[B]] : i32
// CHECK-NEXT:    %[[UNUSED:.*]] = func.call @effect(%[[D]]) : (i32) -> i32
// CHECK-NEXT:    %[[S:.*]] = graph.silu %[[X]] : tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[D]], %[[S]] : i32, tensor<2x3xf32>
func.func @nothing_applies(%a: i32, %b: i32, %x: tensor<2x3xf32>) -> (i32, tensor<2x3xf32>) {
  %0 = arith.subi %a, %b : i32
  %1 = func.call @effect(%0) : (i32) -> i32
  %2 = graph.silu %x : tensor<2x3xf32>
  func.return %0, %2 : i32, tensor<2x3xf32>
}

// -----

// An identity reshape or flatten (result type == input type) is its input.
// CHECK-LABEL: func.func @identity_reshape
// CHECK-SAME:    (%[[X:.*]]: tensor<?x6x5xf32>)
// CHECK-NEXT:    func.return %[[X]], %[[X]] : tensor<?x6x5xf32>, tensor<?x6x5xf32>
func.func @identity_reshape(%x: tensor<?x6x5xf32>) -> (tensor<?x6x5xf32>, tensor<?x6x5xf32>) {
  %r = graph.reshape %x shape [0, 6, -1] : (tensor<?x6x5xf32>) -> tensor<?x6x5xf32>
  %f = graph.flatten %x start_dim 2 : (tensor<?x6x5xf32>) -> tensor<?x6x5xf32>
  func.return %r, %f : tensor<?x6x5xf32>, tensor<?x6x5xf32>
}

// -----

// A reshape or flatten that changes the shape stays.
// CHECK-LABEL: func.func @reshape_stays
// CHECK-NEXT:    %[[R:.*]] = graph.reshape %{{.*}} shape [0, 30] : (tensor<?x6x5xf32>) -> tensor<?x30xf32>
// CHECK-NEXT:    %[[F:.*]] = graph.flatten %{{.*}} : (tensor<?x6x5xf32>) -> tensor<?x30xf32>
// CHECK-NEXT:    func.return %[[R]], %[[F]]
func.func @reshape_stays(%x: tensor<?x6x5xf32>) -> (tensor<?x30xf32>, tensor<?x30xf32>) {
  %r = graph.reshape %x shape [0, 30] : (tensor<?x6x5xf32>) -> tensor<?x30xf32>
  %f = graph.flatten %x : (tensor<?x6x5xf32>) -> tensor<?x30xf32>
  func.return %r, %f : tensor<?x30xf32>, tensor<?x30xf32>
}

// -----

// An identity transpose is its input, and so is one that swaps two size-1
// dimensions (same type, same element order).
// CHECK-LABEL: func.func @identity_transpose
// CHECK-SAME:    (%[[X:.*]]: tensor<?x6x5xf32>, %[[Y:.*]]: tensor<?x1x1x5xf32>)
// CHECK-NEXT:    func.return %[[X]], %[[Y]] : tensor<?x6x5xf32>, tensor<?x1x1x5xf32>
func.func @identity_transpose(%x: tensor<?x6x5xf32>, %y: tensor<?x1x1x5xf32>)
    -> (tensor<?x6x5xf32>, tensor<?x1x1x5xf32>) {
  %t = graph.transpose %x perm [0, 1, 2] : (tensor<?x6x5xf32>) -> tensor<?x6x5xf32>
  %u = graph.transpose %y perm [0, 2, 1, 3] : (tensor<?x1x1x5xf32>) -> tensor<?x1x1x5xf32>
  func.return %t, %u : tensor<?x6x5xf32>, tensor<?x1x1x5xf32>
}

// -----

// A transpose that moves data stays, even where the type does not change.
// CHECK-LABEL: func.func @transpose_stays
// CHECK-NEXT:    %[[T:.*]] = graph.transpose %{{.*}} perm [0, 2, 1] : (tensor<?x5x5xf32>) -> tensor<?x5x5xf32>
// CHECK-NEXT:    %[[U:.*]] = graph.transpose %{{.*}} perm [0, 2, 1] : (tensor<?x6x5xf32>) -> tensor<?x5x6xf32>
// CHECK-NEXT:    %[[V:.*]] = graph.transpose %{{.*}} perm [1, 0] : (tensor<3x1xf32>) -> tensor<1x3xf32>
// CHECK-NEXT:    func.return %[[T]], %[[U]], %[[V]]
func.func @transpose_stays(%x: tensor<?x5x5xf32>, %y: tensor<?x6x5xf32>, %z: tensor<3x1xf32>)
    -> (tensor<?x5x5xf32>, tensor<?x5x6xf32>, tensor<1x3xf32>) {
  %t = graph.transpose %x perm [0, 2, 1] : (tensor<?x5x5xf32>) -> tensor<?x5x5xf32>
  %u = graph.transpose %y perm [0, 2, 1] : (tensor<?x6x5xf32>) -> tensor<?x5x6xf32>
  %v = graph.transpose %z perm [1, 0] : (tensor<3x1xf32>) -> tensor<1x3xf32>
  func.return %t, %u, %v : tensor<?x5x5xf32>, tensor<?x5x6xf32>, tensor<1x3xf32>
}

// -----

// A concat of one input is the input; so is a split into one part.
// CHECK-LABEL: func.func @single_concat_and_split
// CHECK-SAME:    (%[[X:.*]]: tensor<?x6x5xf32>)
// CHECK-NEXT:    func.return %[[X]], %[[X]] : tensor<?x6x5xf32>, tensor<?x6x5xf32>
func.func @single_concat_and_split(%x: tensor<?x6x5xf32>) -> (tensor<?x6x5xf32>, tensor<?x6x5xf32>) {
  %c = graph.concat %x axis 2 : (tensor<?x6x5xf32>) -> tensor<?x6x5xf32>
  %s = graph.split %x axis 1 sizes [6] : (tensor<?x6x5xf32>) -> tensor<?x6x5xf32>
  func.return %c, %s : tensor<?x6x5xf32>, tensor<?x6x5xf32>
}

// -----

// A concat of two inputs stays.
// CHECK-LABEL: func.func @concat_stays
// CHECK-NEXT:    %[[C:.*]] = graph.concat %{{.*}}, %{{.*}} axis 1 : (tensor<?x6x5xf32>, tensor<?x6x5xf32>) -> tensor<?x12x5xf32>
// CHECK-NEXT:    func.return %[[C]]
func.func @concat_stays(%x: tensor<?x6x5xf32>) -> tensor<?x12x5xf32> {
  %c = graph.concat %x, %x axis 1 : (tensor<?x6x5xf32>, tensor<?x6x5xf32>) -> tensor<?x12x5xf32>
  func.return %c : tensor<?x12x5xf32>
}

// -----

// The concat of every part of a split, in order, on the split's axis is the
// split's input; the split is then dead and goes too.
// CHECK-LABEL: func.func @concat_of_split
// CHECK-SAME:    (%[[X:.*]]: tensor<?x6x5xf32>)
// CHECK-NEXT:    func.return %[[X]] : tensor<?x6x5xf32>
func.func @concat_of_split(%x: tensor<?x6x5xf32>) -> tensor<?x6x5xf32> {
  %a, %b, %c = graph.split %x axis 1 sizes [1, 2, 3]
      : (tensor<?x6x5xf32>) -> (tensor<?x1x5xf32>, tensor<?x2x5xf32>, tensor<?x3x5xf32>)
  %y = graph.concat %a, %b, %c axis 1
      : (tensor<?x1x5xf32>, tensor<?x2x5xf32>, tensor<?x3x5xf32>) -> tensor<?x6x5xf32>
  func.return %y : tensor<?x6x5xf32>
}

// -----

// The split stays while another op uses a part.
// CHECK-LABEL: func.func @concat_of_split_part_used
// CHECK-SAME:    (%[[X:.*]]: tensor<?x6x5xf32>)
// CHECK-NEXT:    %[[A:.*]], %[[B:.*]] = graph.split %[[X]] axis 1 sizes [2, 4]
// CHECK-NEXT:    %[[S:.*]] = graph.silu %[[B]] : tensor<?x4x5xf32>
// CHECK-NEXT:    func.return %[[X]], %[[S]] : tensor<?x6x5xf32>, tensor<?x4x5xf32>
func.func @concat_of_split_part_used(%x: tensor<?x6x5xf32>) -> (tensor<?x6x5xf32>, tensor<?x4x5xf32>) {
  %a, %b = graph.split %x axis 1 sizes [2, 4] : (tensor<?x6x5xf32>) -> (tensor<?x2x5xf32>, tensor<?x4x5xf32>)
  %y = graph.concat %a, %b axis 1 : (tensor<?x2x5xf32>, tensor<?x4x5xf32>) -> tensor<?x6x5xf32>
  %s = graph.silu %b : tensor<?x4x5xf32>
  func.return %y, %s : tensor<?x6x5xf32>, tensor<?x4x5xf32>
}

// -----

// Does not apply: parts out of order, a part repeated, a part missing, parts
// of two splits.
// CHECK-LABEL: func.func @concat_of_split_stays
// CHECK-NEXT:    %[[A:.*]], %[[B:.*]] = graph.split
// CHECK-NEXT:    %[[P:.*]], %[[Q:.*]] = graph.split
// CHECK-NEXT:    %[[SW:.*]] = graph.concat %[[B]], %[[A]] axis 1
// CHECK-NEXT:    %[[RE:.*]] = graph.concat %[[A]], %[[B]], %[[B]] axis 1
// CHECK-NEXT:    %[[MI:.*]] = graph.concat %[[A]], %[[A]] axis 1
// CHECK-NEXT:    %[[TW:.*]] = graph.concat %[[A]], %[[Q]] axis 1
// CHECK-NEXT:    func.return %[[SW]], %[[RE]], %[[MI]], %[[TW]], %[[P]]
func.func @concat_of_split_stays(%x: tensor<?x4x4xf32>)
    -> (tensor<?x4x4xf32>, tensor<?x6x4xf32>, tensor<?x4x4xf32>, tensor<?x4x4xf32>, tensor<?x2x4xf32>) {
  %a, %b = graph.split %x axis 1 sizes [2, 2] : (tensor<?x4x4xf32>) -> (tensor<?x2x4xf32>, tensor<?x2x4xf32>)
  %p, %q = graph.split %x axis 1 sizes [2, 2] : (tensor<?x4x4xf32>) -> (tensor<?x2x4xf32>, tensor<?x2x4xf32>)
  %swapped = graph.concat %b, %a axis 1 : (tensor<?x2x4xf32>, tensor<?x2x4xf32>) -> tensor<?x4x4xf32>
  %repeated = graph.concat %a, %b, %b axis 1
      : (tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>) -> tensor<?x6x4xf32>
  %missing = graph.concat %a, %a axis 1 : (tensor<?x2x4xf32>, tensor<?x2x4xf32>) -> tensor<?x4x4xf32>
  %two = graph.concat %a, %q axis 1 : (tensor<?x2x4xf32>, tensor<?x2x4xf32>) -> tensor<?x4x4xf32>
  func.return %swapped, %repeated, %missing, %two, %p
      : tensor<?x4x4xf32>, tensor<?x6x4xf32>, tensor<?x4x4xf32>, tensor<?x4x4xf32>, tensor<?x2x4xf32>
}

// -----

// A split and a concat along another axis than the split's: no rewrite.
// CHECK-LABEL: func.func @concat_of_split_other_axis
// CHECK-NEXT:    graph.split
// CHECK-NEXT:    graph.concat
// CHECK-NEXT:    func.return
func.func @concat_of_split_other_axis(%x: tensor<?x4x4xf32>) -> tensor<?x2x8xf32> {
  %a, %b = graph.split %x axis 1 sizes [2, 2] : (tensor<?x4x4xf32>) -> (tensor<?x2x4xf32>, tensor<?x2x4xf32>)
  %y = graph.concat %a, %b axis 2 : (tensor<?x2x4xf32>, tensor<?x2x4xf32>) -> tensor<?x2x8xf32>
  func.return %y : tensor<?x2x8xf32>
}

// -----

// A graph.param without uses is erased (graph ops are Pure, and the rewrite
// driver drops dead pure ops); a used one stays.
// CHECK-LABEL: func.func @dead_params
// CHECK-NEXT:    %[[W:.*]] = graph.param "used" : tensor<6x5xf32>
// CHECK-NEXT:    %[[S:.*]] = graph.add
// CHECK-NEXT:    func.return %[[S]]
func.func @dead_params(%x: tensor<?x6x5xf32>) -> tensor<?x6x5xf32> {
  %dead = graph.param "dead" : tensor<3xf32>
  %w = graph.param "used" : tensor<6x5xf32>
  %dead2 = graph.param "dead.too" : tensor<6x5xf32>
  %s = graph.add %x, %w : (tensor<?x6x5xf32>, tensor<6x5xf32>) -> tensor<?x6x5xf32>
  func.return %s : tensor<?x6x5xf32>
}
