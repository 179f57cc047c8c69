// RUN: teeny-opt %s | teeny-opt | filecheck %s
// RUN: teeny-opt %s --mlir-print-op-generic | teeny-opt | filecheck %s

// Strides default to the kernel, as in PyTorch: absent, and not printed.
// CHECK-LABEL: func.func @max_pool2d_kernel_only(
// CHECK-SAME:      %[[X:[^:]*]]: tensor<?x16x8x8xf32>
// CHECK:         %[[Y:.*]] = graph.max_pool2d %[[X]] kernel [2, 2] : (tensor<?x16x8x8xf32>) -> tensor<?x16x4x4xf32>
// CHECK:         func.return %[[Y]]
func.func @max_pool2d_kernel_only(%x: tensor<?x16x8x8xf32>) -> tensor<?x16x4x4xf32> {
  %y = graph.max_pool2d %x kernel [2, 2] : (tensor<?x16x8x8xf32>) -> tensor<?x16x4x4xf32>
  func.return %y : tensor<?x16x4x4xf32>
}

// Options may be written in any order; they print in a fixed order.
// CHECK-LABEL: func.func @max_pool2d_all_options
// CHECK:         graph.max_pool2d %{{.*}} kernel [3, 3] strides [2, 2] padding [1, 1, 1, 1] dilation [1, 1] ceil_mode : (tensor<?x16x8x8xf32>) -> tensor<?x16x5x5xf32>
func.func @max_pool2d_all_options(%x: tensor<?x16x8x8xf32>) -> tensor<?x16x5x5xf32> {
  %y = graph.max_pool2d %x ceil_mode dilation [1, 1] padding [1, 1, 1, 1] strides [2, 2] kernel [3, 3] : (tensor<?x16x8x8xf32>) -> tensor<?x16x5x5xf32>
  func.return %y : tensor<?x16x5x5xf32>
}

// SPPF's pool: 5x5, stride 1, padding 2 keeps the spatial size.
// CHECK-LABEL: func.func @max_pool2d_sppf
// CHECK:         graph.max_pool2d %{{.*}} kernel [5, 5] strides [1, 1] padding [2, 2, 2, 2] : (tensor<?x64x2x2xf32>) -> tensor<?x64x2x2xf32>
func.func @max_pool2d_sppf(%x: tensor<?x64x2x2xf32>) -> tensor<?x64x2x2xf32> {
  %y = graph.max_pool2d %x kernel [5, 5] strides [1, 1] padding [2, 2, 2, 2] : (tensor<?x64x2x2xf32>) -> tensor<?x64x2x2xf32>
  func.return %y : tensor<?x64x2x2xf32>
}

// CHECK-LABEL: func.func @max_pool2d_dilated_asymmetric
// CHECK:         graph.max_pool2d %{{.*}} kernel [2, 3] strides [1, 2] padding [0, 1, 1, 1] dilation [2, 2] {note = "kept"} : (tensor<1x4x9x9xf32>) -> tensor<1x4x8x4xf32>
func.func @max_pool2d_dilated_asymmetric(%x: tensor<1x4x9x9xf32>) -> tensor<1x4x8x4xf32> {
  %y = graph.max_pool2d %x kernel [2, 3] strides [1, 2] padding [0, 1, 1, 1] dilation [2, 2] {note = "kept"} : (tensor<1x4x9x9xf32>) -> tensor<1x4x8x4xf32>
  func.return %y : tensor<1x4x8x4xf32>
}

// CHECK-LABEL: func.func @avg_pool2d_lenet
// CHECK:         graph.avg_pool2d %{{.*}} kernel [2, 2] : (tensor<?x16x10x10xf32>) -> tensor<?x16x5x5xf32>
func.func @avg_pool2d_lenet(%x: tensor<?x16x10x10xf32>) -> tensor<?x16x5x5xf32> {
  %y = graph.avg_pool2d %x kernel [2, 2] : (tensor<?x16x10x10xf32>) -> tensor<?x16x5x5xf32>
  func.return %y : tensor<?x16x5x5xf32>
}

// exclude_pad is PyTorch's count_include_pad=False.
// CHECK-LABEL: func.func @avg_pool2d_all_options
// CHECK:         graph.avg_pool2d %{{.*}} kernel [3, 2] strides [2, 2] padding [1, 0, 1, 0] ceil_mode exclude_pad : (tensor<2x3x8x7xf32>) -> tensor<2x3x5x4xf32>
func.func @avg_pool2d_all_options(%x: tensor<2x3x8x7xf32>) -> tensor<2x3x5x4xf32> {
  %y = graph.avg_pool2d %x exclude_pad kernel [3, 2] ceil_mode padding [1, 0, 1, 0] strides [2, 2] : (tensor<2x3x8x7xf32>) -> tensor<2x3x5x4xf32>
  func.return %y : tensor<2x3x5x4xf32>
}

// Ceil mode adds a width window hanging off the end (3, not 2) but drops a height
// window that would start in the bottom padding (3, not 4).
// CHECK-LABEL: func.func @avg_pool2d_ceil_mode_windows
// CHECK:         graph.avg_pool2d %{{.*}} kernel [2, 3] strides [2, 2] padding [1, 0, 1, 0] ceil_mode : (tensor<?x2x5x6xf32>) -> tensor<?x2x3x3xf32>
func.func @avg_pool2d_ceil_mode_windows(%x: tensor<?x2x5x6xf32>) -> tensor<?x2x3x3xf32> {
  %y = graph.avg_pool2d %x kernel [2, 3] strides [2, 2] padding [1, 0, 1, 0] ceil_mode : (tensor<?x2x5x6xf32>) -> tensor<?x2x3x3xf32>
  func.return %y : tensor<?x2x3x3xf32>
}

// CHECK-LABEL: func.func @global_avg_pool2d(
// CHECK-SAME:      %[[X:[^:]*]]: tensor<?x16x8x8xf32>
// CHECK:         %[[Y:.*]] = graph.global_avg_pool2d %[[X]] : (tensor<?x16x8x8xf32>) -> tensor<?x16x1x1xf32>
// CHECK:         func.return %[[Y]]
func.func @global_avg_pool2d(%x: tensor<?x16x8x8xf32>) -> tensor<?x16x1x1xf32> {
  %y = graph.global_avg_pool2d %x : (tensor<?x16x8x8xf32>) -> tensor<?x16x1x1xf32>
  func.return %y : tensor<?x16x1x1xf32>
}

// CHECK-LABEL: func.func @upsample_nearest2d(
// CHECK-SAME:      %[[X:[^:]*]]: tensor<?x64x4x4xf32>
// CHECK:         %[[Y:.*]] = graph.upsample_nearest2d %[[X]] scales [2, 2] : (tensor<?x64x4x4xf32>) -> tensor<?x64x8x8xf32>
// CHECK:         %[[Z:.*]] = graph.upsample_nearest2d %[[Y]] scales [1, 3] {note = 1 : i64} : (tensor<?x64x8x8xf32>) -> tensor<?x64x8x24xf32>
// CHECK:         func.return %[[Z]]
func.func @upsample_nearest2d(%x: tensor<?x64x4x4xf32>) -> tensor<?x64x8x24xf32> {
  %y = graph.upsample_nearest2d %x scales [2, 2] : (tensor<?x64x4x4xf32>) -> tensor<?x64x8x8xf32>
  %z = graph.upsample_nearest2d %y scales [1, 3] {note = 1 : i64} : (tensor<?x64x8x8xf32>) -> tensor<?x64x8x24xf32>
  func.return %z : tensor<?x64x8x24xf32>
}
