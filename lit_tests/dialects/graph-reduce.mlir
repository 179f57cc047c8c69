// RUN: teeny-opt %s | teeny-opt | filecheck %s
// RUN: teeny-opt %s --mlir-print-op-generic | teeny-opt | filecheck %s

// CHECK-LABEL: func.func @softmax_classes(
// CHECK-SAME:      %[[X:[^:]*]]: tensor<?x10xf32>
// CHECK:         %[[Y:.*]] = graph.softmax %[[X]] axis 1 : (tensor<?x10xf32>) -> tensor<?x10xf32>
// CHECK:         func.return %[[Y]]
func.func @softmax_classes(%x: tensor<?x10xf32>) -> tensor<?x10xf32> {
  %y = graph.softmax %x axis 1 : (tensor<?x10xf32>) -> tensor<?x10xf32>
  func.return %y : tensor<?x10xf32>
}

// Softmax over the batch axis is allowed.
// CHECK-LABEL: func.func @softmax_batch_axis
// CHECK:         graph.softmax %{{.*}} axis 0 {note = "kept"} : (tensor<?x7xf32>) -> tensor<?x7xf32>
func.func @softmax_batch_axis(%x: tensor<?x7xf32>) -> tensor<?x7xf32> {
  %y = graph.softmax %x axis 0 {note = "kept"} : (tensor<?x7xf32>) -> tensor<?x7xf32>
  func.return %y : tensor<?x7xf32>
}

// CHECK-LABEL: func.func @log_softmax_last_axis
// CHECK:         graph.log_softmax %{{.*}} axis 3 : (tensor<?x3x4x5xf32>) -> tensor<?x3x4x5xf32>
func.func @log_softmax_last_axis(%x: tensor<?x3x4x5xf32>) -> tensor<?x3x4x5xf32> {
  %y = graph.log_softmax %x axis 3 : (tensor<?x3x4x5xf32>) -> tensor<?x3x4x5xf32>
  func.return %y : tensor<?x3x4x5xf32>
}

// CHECK-LABEL: func.func @cross_entropy_dynamic_batch(
// CHECK-SAME:      %[[L:[^:]*]]: tensor<?x10xf32>, %[[T:[^:]*]]: tensor<?xi64>
// CHECK:         %[[LOSS:.*]] = graph.cross_entropy %[[L]], %[[T]] : (tensor<?x10xf32>, tensor<?xi64>) -> tensor<f32>
// CHECK:         func.return %[[LOSS]]
func.func @cross_entropy_dynamic_batch(%logits: tensor<?x10xf32>, %targets: tensor<?xi64>) -> tensor<f32> {
  %loss = graph.cross_entropy %logits, %targets : (tensor<?x10xf32>, tensor<?xi64>) -> tensor<f32>
  func.return %loss : tensor<f32>
}

// CHECK-LABEL: func.func @cross_entropy_static
// CHECK:         graph.cross_entropy %{{.*}}, %{{.*}} : (tensor<3x17xf32>, tensor<3xi64>) -> tensor<f32>
func.func @cross_entropy_static(%logits: tensor<3x17xf32>, %targets: tensor<3xi64>) -> tensor<f32> {
  %loss = graph.cross_entropy %logits, %targets : (tensor<3x17xf32>, tensor<3xi64>) -> tensor<f32>
  func.return %loss : tensor<f32>
}

// CHECK-LABEL: func.func @reduce_sum_spatial
// CHECK:         graph.reduce_sum %{{.*}} axes [2, 3] : (tensor<?x16x8x8xf32>) -> tensor<?x16xf32>
func.func @reduce_sum_spatial(%x: tensor<?x16x8x8xf32>) -> tensor<?x16xf32> {
  %y = graph.reduce_sum %x axes [2, 3] : (tensor<?x16x8x8xf32>) -> tensor<?x16xf32>
  func.return %y : tensor<?x16xf32>
}

// Options may be written in any order; they print in a fixed order.
// CHECK-LABEL: func.func @reduce_sum_keepdims
// CHECK:         graph.reduce_sum %{{.*}} axes [3, 1] keepdims : (tensor<?x16x8x8xf32>) -> tensor<?x1x8x1xf32>
func.func @reduce_sum_keepdims(%x: tensor<?x16x8x8xf32>) -> tensor<?x1x8x1xf32> {
  %y = graph.reduce_sum %x keepdims axes [3, 1] : (tensor<?x16x8x8xf32>) -> tensor<?x1x8x1xf32>
  func.return %y : tensor<?x1x8x1xf32>
}

// Reducing the batch axis leaves no dynamic dimension.
// CHECK-LABEL: func.func @reduce_mean_batch_axis
// CHECK:         graph.reduce_mean %{{.*}} axes [0] : (tensor<?x16xf32>) -> tensor<16xf32>
// CHECK:         graph.reduce_mean %{{.*}} axes [0] keepdims : (tensor<?x16xf32>) -> tensor<1x16xf32>
func.func @reduce_mean_batch_axis(%x: tensor<?x16xf32>) -> (tensor<16xf32>, tensor<1x16xf32>) {
  %y = graph.reduce_mean %x axes [0] : (tensor<?x16xf32>) -> tensor<16xf32>
  %k = graph.reduce_mean %x axes [0] keepdims : (tensor<?x16xf32>) -> tensor<1x16xf32>
  func.return %y, %k : tensor<16xf32>, tensor<1x16xf32>
}

// CHECK-LABEL: func.func @reduce_mean_to_scalar
// CHECK:         graph.reduce_mean %{{.*}} axes [0, 1, 2] : (tensor<?x4x5xf32>) -> tensor<f32>
func.func @reduce_mean_to_scalar(%x: tensor<?x4x5xf32>) -> tensor<f32> {
  %y = graph.reduce_mean %x axes [0, 1, 2] : (tensor<?x4x5xf32>) -> tensor<f32>
  func.return %y : tensor<f32>
}
