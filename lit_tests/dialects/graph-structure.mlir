// RUN: teeny-opt %s | teeny-opt | filecheck %s
// RUN: teeny-opt %s --mlir-print-op-generic | teeny-opt | filecheck %s

// CHECK-LABEL: func.func @concat_three(
// CHECK-SAME:      %[[A:[^:]*]]: tensor<?x16x8x8xf32>, %[[B:[^:]*]]: tensor<?x16x8x8xf32>, %[[C:[^:]*]]: tensor<?x32x8x8xf32>
// CHECK:         %[[Y:.*]] = graph.concat %[[A]], %[[B]], %[[C]] axis 1 : (tensor<?x16x8x8xf32>, tensor<?x16x8x8xf32>, tensor<?x32x8x8xf32>) -> tensor<?x64x8x8xf32>
// CHECK:         func.return %[[Y]]
func.func @concat_three(%a: tensor<?x16x8x8xf32>, %b: tensor<?x16x8x8xf32>, %c: tensor<?x32x8x8xf32>) -> tensor<?x64x8x8xf32> {
  %y = graph.concat %a, %b, %c axis 1 : (tensor<?x16x8x8xf32>, tensor<?x16x8x8xf32>, tensor<?x32x8x8xf32>) -> tensor<?x64x8x8xf32>
  func.return %y : tensor<?x64x8x8xf32>
}

// CHECK-LABEL: func.func @concat_one_input
// CHECK:         graph.concat %{{.*}} axis 3 : (tensor<?x4x5x6xf32>) -> tensor<?x4x5x6xf32>
func.func @concat_one_input(%a: tensor<?x4x5x6xf32>) -> tensor<?x4x5x6xf32> {
  %y = graph.concat %a axis 3 : (tensor<?x4x5x6xf32>) -> tensor<?x4x5x6xf32>
  func.return %y : tensor<?x4x5x6xf32>
}

// A static dimension 0 is an ordinary dimension.
// CHECK-LABEL: func.func @concat_static_batch_axis
// CHECK:         graph.concat %{{.*}}, %{{.*}} axis 0 {note = "kept"} : (tensor<2x3xf32>, tensor<5x3xf32>) -> tensor<7x3xf32>
func.func @concat_static_batch_axis(%a: tensor<2x3xf32>, %b: tensor<5x3xf32>) -> tensor<7x3xf32> {
  %y = graph.concat %a, %b axis 0 {note = "kept"} : (tensor<2x3xf32>, tensor<5x3xf32>) -> tensor<7x3xf32>
  func.return %y : tensor<7x3xf32>
}

// CHECK-LABEL: func.func @split_halves(
// CHECK-SAME:      %[[X:[^:]*]]: tensor<?x32x8x8xf32>
// CHECK:         %[[A:.*]], %[[B:.*]] = graph.split %[[X]] axis 1 sizes [16, 16] : (tensor<?x32x8x8xf32>) -> (tensor<?x16x8x8xf32>, tensor<?x16x8x8xf32>)
// CHECK:         func.return %[[A]], %[[B]]
func.func @split_halves(%x: tensor<?x32x8x8xf32>) -> (tensor<?x16x8x8xf32>, tensor<?x16x8x8xf32>) {
  %a, %b = graph.split %x axis 1 sizes [16, 16] : (tensor<?x32x8x8xf32>) -> (tensor<?x16x8x8xf32>, tensor<?x16x8x8xf32>)
  func.return %a, %b : tensor<?x16x8x8xf32>, tensor<?x16x8x8xf32>
}

// Options may be written in any order; they print in a fixed order.
// CHECK-LABEL: func.func @split_uneven_last_axis
// CHECK:         graph.split %{{.*}} axis 2 sizes [1, 4, 2] : (tensor<?x3x7xf32>) -> (tensor<?x3x1xf32>, tensor<?x3x4xf32>, tensor<?x3x2xf32>)
func.func @split_uneven_last_axis(%x: tensor<?x3x7xf32>) -> tensor<?x3x4xf32> {
  %s:3 = graph.split %x sizes [1, 4, 2] axis 2 : (tensor<?x3x7xf32>) -> (tensor<?x3x1xf32>, tensor<?x3x4xf32>, tensor<?x3x2xf32>)
  func.return %s#1 : tensor<?x3x4xf32>
}

// CHECK-LABEL: func.func @split_one_piece
// CHECK:         graph.split %{{.*}} axis 1 sizes [5] : (tensor<?x5xf32>) -> tensor<?x5xf32>
func.func @split_one_piece(%x: tensor<?x5xf32>) -> tensor<?x5xf32> {
  %a = graph.split %x axis 1 sizes [5] : (tensor<?x5xf32>) -> tensor<?x5xf32>
  func.return %a : tensor<?x5xf32>
}

// CHECK-LABEL: func.func @reshape_keep_batch(
// CHECK-SAME:      %[[X:[^:]*]]: tensor<?x16x5x5xf32>
// CHECK:         %[[Y:.*]] = graph.reshape %[[X]] shape [0, -1] : (tensor<?x16x5x5xf32>) -> tensor<?x400xf32>
// CHECK:         func.return %[[Y]]
func.func @reshape_keep_batch(%x: tensor<?x16x5x5xf32>) -> tensor<?x400xf32> {
  %y = graph.reshape %x shape [0, -1] : (tensor<?x16x5x5xf32>) -> tensor<?x400xf32>
  func.return %y : tensor<?x400xf32>
}

// CHECK-LABEL: func.func @reshape_copy_and_split_dims
// CHECK:         graph.reshape %{{.*}} shape [0, 0, 4, -1, 2] : (tensor<?x3x16xf32>) -> tensor<?x3x4x2x2xf32>
func.func @reshape_copy_and_split_dims(%x: tensor<?x3x16xf32>) -> tensor<?x3x4x2x2xf32> {
  %y = graph.reshape %x shape [0, 0, 4, -1, 2] : (tensor<?x3x16xf32>) -> tensor<?x3x4x2x2xf32>
  func.return %y : tensor<?x3x4x2x2xf32>
}

// A static tensor may be reshaped freely.
// CHECK-LABEL: func.func @reshape_static
// CHECK:         graph.reshape %{{.*}} shape [6, 4] : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
func.func @reshape_static(%x: tensor<2x3x4xf32>) -> tensor<6x4xf32> {
  %y = graph.reshape %x shape [6, 4] : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  func.return %y : tensor<6x4xf32>
}

// CHECK-LABEL: func.func @flatten_default
// CHECK:         graph.flatten %{{.*}} : (tensor<?x16x5x5xf32>) -> tensor<?x400xf32>
func.func @flatten_default(%x: tensor<?x16x5x5xf32>) -> tensor<?x400xf32> {
  %y = graph.flatten %x : (tensor<?x16x5x5xf32>) -> tensor<?x400xf32>
  func.return %y : tensor<?x400xf32>
}

// CHECK-LABEL: func.func @flatten_range
// CHECK:         graph.flatten %{{.*}} start_dim 2 end_dim 3 : (tensor<?x16x5x5xf32>) -> tensor<?x16x25xf32>
func.func @flatten_range(%x: tensor<?x16x5x5xf32>) -> tensor<?x16x25xf32> {
  %y = graph.flatten %x end_dim 3 start_dim 2 : (tensor<?x16x5x5xf32>) -> tensor<?x16x25xf32>
  func.return %y : tensor<?x16x25xf32>
}

// CHECK-LABEL: func.func @flatten_end_dim
// CHECK:         graph.flatten %{{.*}} end_dim 2 : (tensor<?x2x3x4xf32>) -> tensor<?x6x4xf32>
func.func @flatten_end_dim(%x: tensor<?x2x3x4xf32>) -> tensor<?x6x4xf32> {
  %y = graph.flatten %x end_dim 2 : (tensor<?x2x3x4xf32>) -> tensor<?x6x4xf32>
  func.return %y : tensor<?x6x4xf32>
}

// CHECK-LABEL: func.func @flatten_static_all
// CHECK:         graph.flatten %{{.*}} start_dim 0 : (tensor<2x3x4xf32>) -> tensor<24xf32>
func.func @flatten_static_all(%x: tensor<2x3x4xf32>) -> tensor<24xf32> {
  %y = graph.flatten %x start_dim 0 : (tensor<2x3x4xf32>) -> tensor<24xf32>
  func.return %y : tensor<24xf32>
}

// CHECK-LABEL: func.func @transpose_nhwc
// CHECK:         graph.transpose %{{.*}} perm [0, 2, 3, 1] : (tensor<?x16x8x4xf32>) -> tensor<?x8x4x16xf32>
func.func @transpose_nhwc(%x: tensor<?x16x8x4xf32>) -> tensor<?x8x4x16xf32> {
  %y = graph.transpose %x perm [0, 2, 3, 1] : (tensor<?x16x8x4xf32>) -> tensor<?x8x4x16xf32>
  func.return %y : tensor<?x8x4x16xf32>
}

// CHECK-LABEL: func.func @transpose_static_batch
// CHECK:         graph.transpose %{{.*}} perm [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
func.func @transpose_static_batch(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %y = graph.transpose %x perm [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return %y : tensor<3x2xf32>
}
