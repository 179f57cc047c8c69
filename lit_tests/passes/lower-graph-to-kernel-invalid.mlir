// RUN: teeny-opt %s -p lower-graph-to-kernel --split-input-file --verify-diagnostics

// Every op that cannot be lowered is reported, each at its own location, and
// the module is left unchanged.

func.func @unfused(%x: tensor<?x4x8x8xf32>) -> tensor<?x4x8x8xf32> {
  %w = graph.param "w" : tensor<4x4x1x1xf32>
  %g = graph.param "g" : tensor<4xf32>
  %b = graph.param "b" : tensor<4xf32>
  %m = graph.param "m" : tensor<4xf32>
  %v = graph.param "v" : tensor<4xf32>
  // expected-error@+1 {{cannot lower 'graph.conv2d' to a kernel: convolutions lower as graph.fused_conv2d (run fuse-epilogues and select-conv-algorithm first)}}
  %c = graph.conv2d %x, %w : (tensor<?x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<?x4x8x8xf32>
  %n = graph.batch_norm %c, %g, %b, %m, %v : (tensor<?x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x4x8x8xf32>
  %s = graph.silu %n : tensor<?x4x8x8xf32>
  func.return %s : tensor<?x4x8x8xf32>
}

// -----

func.func @no_algorithm(%x: tensor<?x4x8x8xf32>) -> tensor<?x4x8x8xf32> {
  %w = graph.param "w" : tensor<4x4x1x1xf32>
  // expected-error@+1 {{cannot lower 'graph.fused_conv2d' to a kernel: no algorithm selected (run select-conv-algorithm first)}}
  %y = graph.fused_conv2d %x, %w scale #derive.param<fill(1.0) : [4]> shift #derive.param<fill(0.0) : [4]> : (tensor<?x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<?x4x8x8xf32>
  func.return %y : tensor<?x4x8x8xf32>
}

// -----

// The graph verifier checks only 'gemm' against the geometry; the depthwise
// family's rule refuses an 'algorithm "depthwise"' conv that is not one.
func.func @depthwise_not_depthwise(%x: tensor<?x4x8x8xf32>) -> tensor<?x4x6x6xf32> {
  %w = graph.param "w" : tensor<4x2x3x3xf32>
  // expected-error@+1 {{cannot lower 'graph.fused_conv2d' to a kernel: not depthwise: groups 2, 4 input and 4 output channels}}
  %y = graph.fused_conv2d %x, %w groups 2 scale #derive.param<fill(1.0) : [4]> shift #derive.param<fill(0.0) : [4]> algorithm "depthwise" tiles [64, 64, 16] : (tensor<?x4x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<?x4x6x6xf32>
  func.return %y : tensor<?x4x6x6xf32>
}

// -----

func.func @weight_not_a_param(%x: tensor<?x4x8x8xf32>, %w: tensor<4x4x1x1xf32>) -> tensor<?x4x8x8xf32> {
  // expected-error@+1 {{cannot lower 'graph.fused_conv2d' to a kernel: its weight is not a graph.param}}
  %y = graph.fused_conv2d %x, %w scale #derive.param<fill(1.0) : [4]> shift #derive.param<fill(0.0) : [4]> algorithm gemm tiles [64, 64, 16] : (tensor<?x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<?x4x8x8xf32>
  func.return %y : tensor<?x4x8x8xf32>
}

// -----

func.func @rank_seven(%x: tensor<?x2x2x2x2x2x2xf32>) -> tensor<?x2x2x2x2x2x2xf32> {
  // expected-error@+1 {{cannot lower 'graph.relu' to a kernel: rank 7 exceeds the elementwise family's 6}}
  %y = graph.relu %x : tensor<?x2x2x2x2x2x2xf32>
  func.return %y : tensor<?x2x2x2x2x2x2xf32>
}

// -----

// The launch's own verifier runs before anything changes: here the element
// count overflows the kernel's i32 at batch 54.
func.func @too_large(%x: tensor<?x10000x100x40xf32>) -> tensor<?x10000x100x40xf32> {
  // expected-error@+1 {{cannot lower 'graph.silu' to a kernel: argument 'numel' = 'B * 40000000' is 2160000000 at B = 54, outside [0, 2147483647] (i32 sizes and strides)}}
  %y = graph.silu %x : tensor<?x10000x100x40xf32>
  func.return %y : tensor<?x10000x100x40xf32>
}

// -----

func.func @derivation_misfit(%x: tensor<?x4x8x8xf32>) -> tensor<?x4x8x8xf32> {
  %w = graph.param "w" : tensor<4x4x1x1xf32>
  %b = graph.param "b" : tensor<2x2xf32>
  // expected-error@+1 {{cannot lower 'graph.fused_conv2d' to a kernel: its shift derivation does not fit: weight 'b' has shape [2, 2], expected 4 elements as [4]}}
  %y = graph.fused_conv2d %x, %w scale #derive.param<fill(1.0) : [4]> shift #derive.param<identity("b") : [4]> algorithm gemm tiles [64, 64, 16] : (tensor<?x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<?x4x8x8xf32>
  func.return %y : tensor<?x4x8x8xf32>
}

// -----

func.func @weight_declared_twice(%x: tensor<?x4x8x8xf32>) -> tensor<?x4x8x8xf32> {
  %w = graph.param "w" : tensor<4x4x1x1xf32>
  // expected-error@+1 {{cannot lower 'graph.param' to a kernel: weight 'w' is also declared with type tensor<4x4x1x1xf32>}}
  %v = graph.param "w" : tensor<16xf32>
  %y = graph.fused_conv2d %x, %w scale #derive.param<fill(1.0) : [4]> shift #derive.param<fill(0.0) : [4]> algorithm gemm tiles [64, 64, 16] : (tensor<?x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<?x4x8x8xf32>
  func.return %y : tensor<?x4x8x8xf32>
}

// -----

func.func @foreign_op(%x: tensor<?x4xf32>) -> i32 {
  // expected-error@+1 {{cannot lower 'arith.constant' to a kernel: no kernel family implements it yet}}
  %c = arith.constant 1 : i32
  func.return %c : i32
}
