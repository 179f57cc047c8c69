// RUN: teeny-opt %s | teeny-opt | filecheck %s
// RUN: teeny-opt %s --mlir-print-op-generic | teeny-opt | filecheck %s

// CHECK-LABEL: func.func @gradient_mean(
// CHECK-SAME:      %[[G:[^:]*]]: tensor<16x3x3x3xf32>
// CHECK:         %[[Y:.*]] = graph.all_reduce %[[G]] reduction mean world 2 : (tensor<16x3x3x3xf32>) -> tensor<16x3x3x3xf32>
// CHECK:         func.return %[[Y]]
func.func @gradient_mean(%g: tensor<16x3x3x3xf32>) -> tensor<16x3x3x3xf32> {
  %y = graph.all_reduce %g reduction mean world 2 : (tensor<16x3x3x3xf32>) -> tensor<16x3x3x3xf32>
  func.return %y : tensor<16x3x3x3xf32>
}

// A scalar sum over one rank (the identity), properties in either order, and
// discardable attributes after them.
// CHECK-LABEL: func.func @count_sum
// CHECK:         graph.all_reduce %{{.*}} reduction sum world 1 {teeny.backward} : (tensor<f32>) -> tensor<f32>
func.func @count_sum(%n: tensor<f32>) -> tensor<f32> {
  %y = graph.all_reduce %n world 1 reduction "sum" {teeny.backward} : (tensor<f32>) -> tensor<f32>
  func.return %y : tensor<f32>
}
