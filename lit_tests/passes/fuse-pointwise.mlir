// RUN: teeny-opt %s --split-input-file -p fuse-pointwise | filecheck %s

// A chain of pointwise ops becomes one graph.fused_pointwise: the program
// names each op's table entry, inputs %k, earlier steps $j; broadcast operands
// are read as they are (a [1, 2, 84] constant against a batch).

// CHECK-LABEL: func.func @decode
// CHECK-NEXT:    %y = graph.fused_pointwise %a, %b, %s program "sub %0 %1; mul $0 %2; silu $1" : (tensor<?x2x84xf32>, tensor<1x2x84xf32>, tensor<1x84xf32>) -> tensor<?x2x84xf32>
// CHECK-NEXT:    func.return %y
func.func @decode(%a: tensor<?x2x84xf32>, %b: tensor<1x2x84xf32>, %s: tensor<1x84xf32>) -> tensor<?x2x84xf32> {
  %d = graph.sub %a, %b : (tensor<?x2x84xf32>, tensor<1x2x84xf32>) -> tensor<?x2x84xf32>
  %m = graph.mul %d, %s : (tensor<?x2x84xf32>, tensor<1x84xf32>) -> tensor<?x2x84xf32>
  %y = graph.silu %m : tensor<?x2x84xf32>
  func.return %y : tensor<?x2x84xf32>
}

// -----

// A value read twice inside the chain is one step; an exporter's decomposed
// SiLU (x * sigmoid(x)) is one launch.

// CHECK-LABEL: func.func @decomposed_silu
// CHECK-NEXT:    %y = graph.fused_pointwise %x program "sigmoid %0; mul %0 $0"
// CHECK-NEXT:    func.return %y
func.func @decomposed_silu(%x: tensor<?x8x5x5xf32>) -> tensor<?x8x5x5xf32> {
  %s = graph.sigmoid %x : tensor<?x8x5x5xf32>
  %y = graph.mul %x, %s : (tensor<?x8x5x5xf32>, tensor<?x8x5x5xf32>) -> tensor<?x8x5x5xf32>
  func.return %y : tensor<?x8x5x5xf32>
}

// -----

// A producer whose every user is pointwise is recomputed in each user's chain
// and never reaches memory (YOLOv8's box decoding: x1y1 and x2y2 feed both the
// centre and the size).

// CHECK-LABEL: func.func @recomputed
// CHECK-NEXT:    %c = graph.fused_pointwise %a, %l, %r, %two program "sub %0 %1; add %0 %2; add $0 $1; div $2 %3"
// CHECK-NEXT:    %w = graph.fused_pointwise %a, %l, %r program "sub %0 %1; add %0 %2; sub $1 $0"
// CHECK-NEXT:    func.return %c, %w
func.func @recomputed(%a: tensor<1x2x84xf32>, %l: tensor<1x2x84xf32>, %r: tensor<1x2x84xf32>, %two: tensor<1xf32>) -> (tensor<1x2x84xf32>, tensor<1x2x84xf32>) {
  %x1 = graph.sub %a, %l : (tensor<1x2x84xf32>, tensor<1x2x84xf32>) -> tensor<1x2x84xf32>
  %x2 = graph.add %a, %r : (tensor<1x2x84xf32>, tensor<1x2x84xf32>) -> tensor<1x2x84xf32>
  %s = graph.add %x1, %x2 : (tensor<1x2x84xf32>, tensor<1x2x84xf32>) -> tensor<1x2x84xf32>
  %c = graph.div %s, %two : (tensor<1x2x84xf32>, tensor<1xf32>) -> tensor<1x2x84xf32>
  %w = graph.sub %x2, %x1 : (tensor<1x2x84xf32>, tensor<1x2x84xf32>) -> tensor<1x2x84xf32>
  func.return %c, %w : tensor<1x2x84xf32>, tensor<1x2x84xf32>
}

// -----

// A lone op stays as it is (the elementwise family runs it), unless it reads a
// split's part or feeds a concat: then it is fused, so the split and the concat
// can be views (the fused family reads and writes batch-strided tensors).

// CHECK-LABEL: func.func @lone
// CHECK-NEXT:    %n = graph.neg %x
// CHECK-NEXT:    %p, %q = graph.split %n axis 1 sizes [2, 2]
// CHECK-NEXT:    %e = graph.fused_pointwise %p program "exp %0"
// CHECK-NEXT:    %y = graph.concat %e, %q axis 1
func.func @lone(%x: tensor<?x4x3xf32>) -> tensor<?x4x3xf32> {
  %n = graph.neg %x : tensor<?x4x3xf32>
  %p, %q = graph.split %n axis 1 sizes [2, 2] : (tensor<?x4x3xf32>) -> (tensor<?x2x3xf32>, tensor<?x2x3xf32>)
  %e = graph.exp %p : tensor<?x2x3xf32>
  %y = graph.concat %e, %q axis 1 : (tensor<?x2x3xf32>, tensor<?x2x3xf32>) -> tensor<?x4x3xf32>
  func.return %y : tensor<?x4x3xf32>
}

// -----

// Options travel with the entry's spelling.

// CHECK-LABEL: func.func @options
// CHECK-NEXT:    %y = graph.fused_pointwise %x program "leaky_relu(negative_slope=0.2) %0; hardtanh(min_val=-1.0, max_val=2.0) $0"
func.func @options(%x: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %l = graph.leaky_relu %x negative_slope 0.2 : tensor<3x5xf32>
  %y = graph.hardtanh %l min_val -1.0 max_val 2.0 : tensor<3x5xf32>
  func.return %y : tensor<3x5xf32>
}

// -----

// A trailing sum or mean is absorbed: the squared difference is computed where
// it is reduced and never reaches memory (one fused_reduce launch each, the
// chain recomputed for both reductions).

// CHECK-LABEL: func.func @losses
// CHECK-NEXT:    %s = graph.fused_pointwise %a, %b program "sub %0 %1; mul $0 $0" reduce sum axes [2, 3] : (tensor<?x3x5x7xf32>, tensor<?x3x5x7xf32>) -> tensor<?x3xf32>
// CHECK-NEXT:    %m = graph.fused_pointwise %a, %b program "sub %0 %1; mul $0 $0" reduce mean axes [0, 1, 2, 3] keepdims : (tensor<?x3x5x7xf32>, tensor<?x3x5x7xf32>) -> tensor<1x1x1x1xf32>
// CHECK-NEXT:    func.return %s, %m
func.func @losses(%a: tensor<?x3x5x7xf32>, %b: tensor<?x3x5x7xf32>) -> (tensor<?x3xf32>, tensor<1x1x1x1xf32>) {
  %d = graph.sub %a, %b : (tensor<?x3x5x7xf32>, tensor<?x3x5x7xf32>) -> tensor<?x3x5x7xf32>
  %e = graph.mul %d, %d : (tensor<?x3x5x7xf32>, tensor<?x3x5x7xf32>) -> tensor<?x3x5x7xf32>
  %s = graph.reduce_sum %e axes [2, 3] : (tensor<?x3x5x7xf32>) -> tensor<?x3xf32>
  %m = graph.reduce_mean %e axes [0, 1, 2, 3] keepdims : (tensor<?x3x5x7xf32>) -> tensor<1x1x1x1xf32>
  func.return %s, %m : tensor<?x3xf32>, tensor<1x1x1x1xf32>
}
