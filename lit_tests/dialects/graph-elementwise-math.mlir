// RUN: teeny-opt %s | teeny-opt | filecheck %s
// RUN: teeny-opt %s --mlir-print-op-generic | teeny-opt | filecheck %s

// The unary math ops and the options of elu and celu (an explicit 1.0 stays: the parser keeps what it reads).
// CHECK-LABEL: func.func @unary(
// CHECK:         graph.abs %{{.*}} : tensor<?x4x3xf32>
// CHECK:         graph.neg
// CHECK:         graph.exp
// CHECK:         graph.log
// CHECK:         graph.sqrt
// CHECK:         graph.reciprocal
// CHECK:         graph.erf
// CHECK:         graph.softplus
// CHECK:         graph.softsign
// CHECK:         graph.sin
// CHECK:         graph.cos
// CHECK:         graph.elu %{{.*}} alpha 5.000000e-01 : tensor<?x4x3xf32>
// CHECK:         graph.elu %{{.*}} alpha 1.000000e+00 : tensor<?x4x3xf32>
// CHECK:         graph.celu %{{.*}} alpha 2.000000e+00 : tensor<?x4x3xf32>
func.func @unary(%x: tensor<?x4x3xf32>) -> tensor<?x4x3xf32> {
  %a = graph.abs %x : tensor<?x4x3xf32>
  %b = graph.neg %a : tensor<?x4x3xf32>
  %c = graph.exp %b : tensor<?x4x3xf32>
  %d = graph.log %c : tensor<?x4x3xf32>
  %e = graph.sqrt %d : tensor<?x4x3xf32>
  %f = graph.reciprocal %e : tensor<?x4x3xf32>
  %g = graph.erf %f : tensor<?x4x3xf32>
  %h = graph.softplus %g : tensor<?x4x3xf32>
  %i = graph.softsign %h : tensor<?x4x3xf32>
  %j = graph.sin %i : tensor<?x4x3xf32>
  %k = graph.cos %j : tensor<?x4x3xf32>
  %l = graph.elu %k alpha 0.5 : tensor<?x4x3xf32>
  %m = graph.elu %l alpha 1.0 : tensor<?x4x3xf32>
  %n = graph.celu %m alpha 2.0 : tensor<?x4x3xf32>
  func.return %n : tensor<?x4x3xf32>
}

// CHECK-LABEL: func.func @binary(
// CHECK:         graph.maximum %{{.*}}, %{{.*}} : (tensor<?x4x3xf32>, tensor<3xf32>) -> tensor<?x4x3xf32>
// CHECK:         graph.minimum
// CHECK:         graph.pow %{{.*}}, %{{.*}} : (tensor<?x4x3xf32>, tensor<f32>) -> tensor<?x4x3xf32>
func.func @binary(%x: tensor<?x4x3xf32>, %y: tensor<3xf32>, %s: tensor<f32>) -> tensor<?x4x3xf32> {
  %a = graph.maximum %x, %y : (tensor<?x4x3xf32>, tensor<3xf32>) -> tensor<?x4x3xf32>
  %b = graph.minimum %a, %x : (tensor<?x4x3xf32>, tensor<?x4x3xf32>) -> tensor<?x4x3xf32>
  %c = graph.pow %b, %s : (tensor<?x4x3xf32>, tensor<f32>) -> tensor<?x4x3xf32>
  func.return %c : tensor<?x4x3xf32>
}
