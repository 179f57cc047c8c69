// RUN: teeny-opt %s | teeny-opt | filecheck %s
// RUN: teeny-opt %s --mlir-print-op-generic | teeny-opt | filecheck %s

// The pools' backward ops take the forward's options; defaults stay absent.
// CHECK-LABEL: func.func @max_pool2d_backward_kernel_only(
// CHECK-SAME:      %[[X:[^:]*]]: tensor<?x16x8x8xf32>, %[[DY:[^:]*]]: tensor<?x16x4x4xf32>
// CHECK:         %[[DX:.*]] = graph.max_pool2d_backward %[[X]], %[[DY]] kernel [2, 2] : (tensor<?x16x8x8xf32>, tensor<?x16x4x4xf32>) -> tensor<?x16x8x8xf32>
// CHECK:         func.return %[[DX]]
func.func @max_pool2d_backward_kernel_only(%x: tensor<?x16x8x8xf32>, %dy: tensor<?x16x4x4xf32>) -> tensor<?x16x8x8xf32> {
  %dx = graph.max_pool2d_backward %x, %dy kernel [2, 2] : (tensor<?x16x8x8xf32>, tensor<?x16x4x4xf32>) -> tensor<?x16x8x8xf32>
  func.return %dx : tensor<?x16x8x8xf32>
}

// Options in any order; they print in a fixed order.
// CHECK-LABEL: func.func @max_pool2d_backward_all_options
// CHECK:         graph.max_pool2d_backward %{{.*}}, %{{.*}} kernel [3, 3] strides [2, 2] padding [1, 1, 1, 1] dilation [1, 1] ceil_mode : (tensor<?x16x8x8xf32>, tensor<?x16x5x5xf32>) -> tensor<?x16x8x8xf32>
func.func @max_pool2d_backward_all_options(%x: tensor<?x16x8x8xf32>, %dy: tensor<?x16x5x5xf32>) -> tensor<?x16x8x8xf32> {
  %dx = graph.max_pool2d_backward %x, %dy ceil_mode dilation [1, 1] padding [1, 1, 1, 1] strides [2, 2] kernel [3, 3] : (tensor<?x16x8x8xf32>, tensor<?x16x5x5xf32>) -> tensor<?x16x8x8xf32>
  func.return %dx : tensor<?x16x8x8xf32>
}

// CHECK-LABEL: func.func @max_pool2d_backward_dilated_asymmetric
// CHECK:         graph.max_pool2d_backward %{{.*}}, %{{.*}} kernel [2, 3] strides [1, 2] padding [0, 1, 1, 1] dilation [2, 2] {note = "kept"} : (tensor<1x4x9x9xf32>, tensor<1x4x8x4xf32>) -> tensor<1x4x9x9xf32>
func.func @max_pool2d_backward_dilated_asymmetric(%x: tensor<1x4x9x9xf32>, %dy: tensor<1x4x8x4xf32>) -> tensor<1x4x9x9xf32> {
  %dx = graph.max_pool2d_backward %x, %dy kernel [2, 3] strides [1, 2] padding [0, 1, 1, 1] dilation [2, 2] {note = "kept"} : (tensor<1x4x9x9xf32>, tensor<1x4x8x4xf32>) -> tensor<1x4x9x9xf32>
  func.return %dx : tensor<1x4x9x9xf32>
}

// The average pool's backward needs only the gradient: the result type is the input's.
// CHECK-LABEL: func.func @avg_pool2d_backward_kernel_only(
// CHECK-SAME:      %[[DY:[^:]*]]: tensor<?x16x5x5xf32>
// CHECK:         %[[DX:.*]] = graph.avg_pool2d_backward %[[DY]] kernel [2, 2] : (tensor<?x16x5x5xf32>) -> tensor<?x16x10x10xf32>
// CHECK:         func.return %[[DX]]
func.func @avg_pool2d_backward_kernel_only(%dy: tensor<?x16x5x5xf32>) -> tensor<?x16x10x10xf32> {
  %dx = graph.avg_pool2d_backward %dy kernel [2, 2] : (tensor<?x16x5x5xf32>) -> tensor<?x16x10x10xf32>
  func.return %dx : tensor<?x16x10x10xf32>
}

// CHECK-LABEL: func.func @avg_pool2d_backward_all_options
// CHECK:         graph.avg_pool2d_backward %{{.*}} kernel [3, 3] strides [2, 2] padding [1, 1, 1, 1] ceil_mode exclude_pad : (tensor<3x16x5x5xf32>) -> tensor<3x16x8x8xf32>
func.func @avg_pool2d_backward_all_options(%dy: tensor<3x16x5x5xf32>) -> tensor<3x16x8x8xf32> {
  %dx = graph.avg_pool2d_backward %dy exclude_pad ceil_mode padding [1, 1, 1, 1] strides [2, 2] kernel [3, 3] : (tensor<3x16x5x5xf32>) -> tensor<3x16x8x8xf32>
  func.return %dx : tensor<3x16x8x8xf32>
}
