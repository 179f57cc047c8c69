// RUN: teeny-opt %s | teeny-opt | filecheck %s
// RUN: teeny-opt %s --mlir-print-op-generic | teeny-opt | filecheck %s

// graph.fused_conv2d's optional residual operand: y = act(scale * conv + shift) + residual.
// It is written `residual %r` right after the input and weight; its type is the
// third in the signature (the result's type).

// CHECK-LABEL: func.func @fused_conv2d_residual(
// CHECK-SAME:      %[[X:[^:]*]]: tensor<?x8x4x4xf32>
// CHECK:         %[[W:.*]] = graph.param "w" : tensor<8x8x3x3xf32>
// CHECK:         %[[Y:.*]] = graph.fused_conv2d %[[X]], %[[W]] residual %[[X]] padding [1, 1, 1, 1] scale #derive.param<bn_scale("g", "v") eps 0.001 : [8]> shift #derive.param<bn_shift("g", "b", "m", "v") eps 0.001 : [8]> activation silu : (tensor<?x8x4x4xf32>, tensor<8x8x3x3xf32>, tensor<?x8x4x4xf32>) -> tensor<?x8x4x4xf32>
// CHECK:         %[[Z:.*]] = graph.fused_conv2d %[[Y]], %[[W]] residual %[[Y]] padding [1, 1, 1, 1] scale #derive.param<fill(1.0) : [8]> shift #derive.param<identity("c") : [8]> algorithm "implicit-gemm" tiles [32, 32, 8] {tag} : (tensor<?x8x4x4xf32>, tensor<8x8x3x3xf32>, tensor<?x8x4x4xf32>) -> tensor<?x8x4x4xf32>
// CHECK:         func.return %[[Z]]
func.func @fused_conv2d_residual(%x: tensor<?x8x4x4xf32>) -> tensor<?x8x4x4xf32> {
  %w = graph.param "w" : tensor<8x8x3x3xf32>
  %y = graph.fused_conv2d %x, %w residual %x activation silu padding [1, 1, 1, 1] scale #derive.param<bn_scale("g", "v") eps 1.0e-3 : [8]> shift #derive.param<bn_shift("g", "b", "m", "v") eps 1.0e-3 : [8]> : (tensor<?x8x4x4xf32>, tensor<8x8x3x3xf32>, tensor<?x8x4x4xf32>) -> tensor<?x8x4x4xf32>
  %z = graph.fused_conv2d %y, %w residual %y padding [1, 1, 1, 1] scale #derive.param<fill(1.0) : [8]> shift #derive.param<identity("c") : [8]> algorithm "implicit-gemm" tiles [32, 32, 8] {tag} : (tensor<?x8x4x4xf32>, tensor<8x8x3x3xf32>, tensor<?x8x4x4xf32>) -> tensor<?x8x4x4xf32>
  func.return %z : tensor<?x8x4x4xf32>
}

// The residual may be any value of the result's type; without one the form is unchanged.
// CHECK-LABEL: func.func @fused_conv2d_gemm_residual(
// CHECK-SAME:      %[[X:[^:]*]]: tensor<2x8x4x4xf32>, %[[R:[^:]*]]: tensor<2x16x4x4xf32>
// CHECK:         graph.fused_conv2d %[[X]], %{{.*}} residual %[[R]] scale #derive.param<fill(1.0) : [16]> shift #derive.param<fill(0.0) : [16]> algorithm gemm tiles [64, 64, 16] : (tensor<2x8x4x4xf32>, tensor<16x8x1x1xf32>, tensor<2x16x4x4xf32>) -> tensor<2x16x4x4xf32>
// CHECK:         graph.fused_conv2d %[[X]], %{{.*}} scale #derive.param<fill(1.0) : [16]> shift #derive.param<fill(0.0) : [16]> : (tensor<2x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<2x16x4x4xf32>
func.func @fused_conv2d_gemm_residual(%x: tensor<2x8x4x4xf32>, %r: tensor<2x16x4x4xf32>) -> (tensor<2x16x4x4xf32>, tensor<2x16x4x4xf32>) {
  %w = graph.param "w" : tensor<16x8x1x1xf32>
  %y = graph.fused_conv2d %x, %w residual %r scale #derive.param<fill(1.0) : [16]> shift #derive.param<fill(0.0) : [16]> algorithm gemm tiles [64, 64, 16] : (tensor<2x8x4x4xf32>, tensor<16x8x1x1xf32>, tensor<2x16x4x4xf32>) -> tensor<2x16x4x4xf32>
  %z = graph.fused_conv2d %x, %w scale #derive.param<fill(1.0) : [16]> shift #derive.param<fill(0.0) : [16]> : (tensor<2x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<2x16x4x4xf32>
  func.return %y, %z : tensor<2x16x4x4xf32>, tensor<2x16x4x4xf32>
}
