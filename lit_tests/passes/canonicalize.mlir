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
