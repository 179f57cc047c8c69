// RUN: teeny-opt %s | teeny-opt | filecheck %s
// RUN: teeny-opt %s --mlir-print-op-generic | teeny-opt | filecheck %s

// The backward ops of softmax, log-softmax and cross-entropy.

// CHECK-LABEL: func.func @softmax_backward(
// CHECK-SAME:      %[[Y:[^:]*]]: tensor<?x10xf32>, %[[DY:[^:]*]]: tensor<?x10xf32>
// CHECK:         %[[DX:.*]] = graph.softmax_backward %[[Y]], %[[DY]] axis 1 : (tensor<?x10xf32>, tensor<?x10xf32>) -> tensor<?x10xf32>
// CHECK:         func.return %[[DX]]
func.func @softmax_backward(%y: tensor<?x10xf32>, %dy: tensor<?x10xf32>) -> tensor<?x10xf32> {
  %dx = graph.softmax_backward %y, %dy axis 1 : (tensor<?x10xf32>, tensor<?x10xf32>) -> tensor<?x10xf32>
  func.return %dx : tensor<?x10xf32>
}

// The batch axis is allowed, and a discardable attribute is kept.
// CHECK-LABEL: func.func @softmax_backward_batch_axis
// CHECK:         graph.softmax_backward %{{.*}}, %{{.*}} axis 0 {note = "kept"} : (tensor<?x7xf32>, tensor<?x7xf32>) -> tensor<?x7xf32>
func.func @softmax_backward_batch_axis(%y: tensor<?x7xf32>, %dy: tensor<?x7xf32>) -> tensor<?x7xf32> {
  %dx = graph.softmax_backward %y, %dy axis 0 {note = "kept"} : (tensor<?x7xf32>, tensor<?x7xf32>) -> tensor<?x7xf32>
  func.return %dx : tensor<?x7xf32>
}

// CHECK-LABEL: func.func @log_softmax_backward_last_axis
// CHECK:         graph.log_softmax_backward %{{.*}}, %{{.*}} axis 3 : (tensor<?x3x4x5xf32>, tensor<?x3x4x5xf32>) -> tensor<?x3x4x5xf32>
func.func @log_softmax_backward_last_axis(%y: tensor<?x3x4x5xf32>, %dy: tensor<?x3x4x5xf32>) -> tensor<?x3x4x5xf32> {
  %dx = graph.log_softmax_backward %y, %dy axis 3 : (tensor<?x3x4x5xf32>, tensor<?x3x4x5xf32>) -> tensor<?x3x4x5xf32>
  func.return %dx : tensor<?x3x4x5xf32>
}

// CHECK-LABEL: func.func @cross_entropy_backward(
// CHECK-SAME:      %[[L:[^:]*]]: tensor<?x10xf32>, %[[T:[^:]*]]: tensor<?xi64>, %[[G:[^:]*]]: tensor<f32>
// CHECK:         %[[DL:.*]] = graph.cross_entropy_backward %[[L]], %[[T]], %[[G]] : (tensor<?x10xf32>, tensor<?xi64>, tensor<f32>) -> tensor<?x10xf32>
// CHECK:         func.return %[[DL]]
func.func @cross_entropy_backward(%logits: tensor<?x10xf32>, %targets: tensor<?xi64>, %g: tensor<f32>) -> tensor<?x10xf32> {
  %dl = graph.cross_entropy_backward %logits, %targets, %g : (tensor<?x10xf32>, tensor<?xi64>, tensor<f32>) -> tensor<?x10xf32>
  func.return %dl : tensor<?x10xf32>
}

// CHECK-LABEL: func.func @cross_entropy_backward_static
// CHECK:         graph.cross_entropy_backward %{{.*}}, %{{.*}}, %{{.*}} : (tensor<3x17xf32>, tensor<3xi64>, tensor<f32>) -> tensor<3x17xf32>
func.func @cross_entropy_backward_static(%logits: tensor<3x17xf32>, %targets: tensor<3xi64>, %g: tensor<f32>) -> tensor<3x17xf32> {
  %dl = graph.cross_entropy_backward %logits, %targets, %g : (tensor<3x17xf32>, tensor<3xi64>, tensor<f32>) -> tensor<3x17xf32>
  func.return %dl : tensor<3x17xf32>
}
