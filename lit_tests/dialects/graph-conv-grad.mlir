// RUN: teeny-opt %s --split-input-file | filecheck %s
// RUN: teeny-opt %s --split-input-file | teeny-opt --split-input-file | filecheck %s

// The convolution backward ops carry the forward convolution's options; absent
// (default) options print nothing. The input gradient's result type carries the
// input shape (with stride 2, both 7x7 and 8x8 inputs give a 4x4 output).
// CHECK-LABEL: func.func @conv2d_backward(
// CHECK:         %[[DX:.*]] = graph.conv2d_backward_data %[[DY:.*]], %[[W:.*]] strides [2, 2] padding [1, 1, 1, 1] : (tensor<?x16x4x4xf32>, tensor<16x3x3x3xf32>) -> tensor<?x3x8x8xf32>
// CHECK:         %{{.*}} = graph.conv2d_backward_data %[[DY]], %[[W]] strides [2, 2] padding [1, 1, 1, 1] : (tensor<?x16x4x4xf32>, tensor<16x3x3x3xf32>) -> tensor<?x3x7x7xf32>
// CHECK:         %{{.*}} = graph.conv2d_backward_weight %{{.*}}, %[[DY]] strides [2, 2] padding [1, 1, 1, 1] : (tensor<?x3x8x8xf32>, tensor<?x16x4x4xf32>) -> tensor<16x3x3x3xf32>
func.func @conv2d_backward(%x: tensor<?x3x8x8xf32>, %dy: tensor<?x16x4x4xf32>) -> (tensor<?x3x8x8xf32>, tensor<?x3x7x7xf32>, tensor<16x3x3x3xf32>) {
  %w = graph.param "w" : tensor<16x3x3x3xf32>
  %dx = graph.conv2d_backward_data %dy, %w strides [2, 2] padding [1, 1, 1, 1] : (tensor<?x16x4x4xf32>, tensor<16x3x3x3xf32>) -> tensor<?x3x8x8xf32>
  %dx7 = graph.conv2d_backward_data %dy, %w padding [1, 1, 1, 1] strides [2, 2] : (tensor<?x16x4x4xf32>, tensor<16x3x3x3xf32>) -> tensor<?x3x7x7xf32>
  %dw = graph.conv2d_backward_weight %x, %dy strides [2, 2] padding [1, 1, 1, 1] : (tensor<?x3x8x8xf32>, tensor<?x16x4x4xf32>) -> tensor<16x3x3x3xf32>
  func.return %dx, %dx7, %dw : tensor<?x3x8x8xf32>, tensor<?x3x7x7xf32>, tensor<16x3x3x3xf32>
}

// -----

// Defaults, groups and dilation; the generic form prints in the custom form.
// CHECK-LABEL: func.func @conv2d_backward_options(
// CHECK:         graph.conv2d_backward_data %{{.*}}, %{{.*}} : (tensor<2x4x3x3xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x5x5xf32>
// CHECK:         graph.conv2d_backward_weight %{{.*}}, %{{.*}} padding [2, 2, 2, 2] dilation [2, 2] groups 8 : (tensor<?x8x7x7xf32>, tensor<?x8x7x7xf32>) -> tensor<8x1x3x3xf32>
// CHECK:         graph.conv2d_backward_data %{{.*}}, %{{.*}} strides [2, 1] groups 2 {note = "kept"} : (tensor<1x6x3x4xf32>, tensor<6x2x1x1xf32>) -> tensor<1x4x6x4xf32>
func.func @conv2d_backward_options(%dy: tensor<2x4x3x3xf32>, %w: tensor<4x3x3x3xf32>, %x: tensor<?x8x7x7xf32>, %g: tensor<?x8x7x7xf32>, %dy2: tensor<1x6x3x4xf32>, %w2: tensor<6x2x1x1xf32>) {
  %a = graph.conv2d_backward_data %dy, %w : (tensor<2x4x3x3xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x5x5xf32>
  %b = graph.conv2d_backward_weight %x, %g padding [2, 2, 2, 2] dilation [2, 2] groups 8 : (tensor<?x8x7x7xf32>, tensor<?x8x7x7xf32>) -> tensor<8x1x3x3xf32>
  %c = "graph.conv2d_backward_data"(%dy2, %w2) <{strides = array<i64: 2, 1>, groups = 2 : i64}> {note = "kept"} : (tensor<1x6x3x4xf32>, tensor<6x2x1x1xf32>) -> tensor<1x4x6x4xf32>
  func.return
}
