// Floats print in a form that reads back as the same bits (as MLIR prints them:
// decimal when that round-trips, else the bits in hex), and a hex literal where
// a float is expected is read as bits, with the width of the element type.
// RUN: teeny-opt %s | teeny-opt | filecheck %s
// RUN: teeny-opt %s --mlir-print-op-generic | teeny-opt | filecheck %s
// RUN: teeny-opt %s --mlir-print-op-generic | teeny-opt --mlir-print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @integral_f32
// CHECK:         graph.constant dense<0x4B800000> : tensor<f32>
// CHECK:         graph.constant dense<0xCB800000> : tensor<2xf32>
// CHECK:         graph.constant dense<[0x4B800000, 1.000000e+00]> : tensor<2xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "integral_f32"
// GENERIC:         "graph.constant"() <{value = dense<0x4B800000> : tensor<f32>}>
// GENERIC:         "graph.constant"() <{value = dense<0xCB800000> : tensor<2xf32>}>
func.func @integral_f32() -> (tensor<f32>, tensor<2xf32>, tensor<2xf32>) {
  %a = graph.constant dense<16777216.0> : tensor<f32>
  %b = graph.constant dense<-16777216.0> : tensor<2xf32>
  %c = graph.constant dense<[0x4B800000, 1.0]> : tensor<2xf32>
  func.return %a, %b, %c : tensor<f32>, tensor<2xf32>, tensor<2xf32>
}

// CHECK-LABEL: func.func @non_finite
// CHECK:         graph.constant dense<0x7FC00000> : tensor<2xf32>
// CHECK:         graph.constant dense<[0x7F800000, 0xFF800000, 0xFFC00000, 0x7FC00001]> : tensor<4xf32>
// CHECK:         graph.constant dense<[0x7FC00000, 1.000000e+00]> : tensor<2xf32>
// GENERIC:       "graph.constant"() <{value = dense<[0x7F800000, 0xFF800000, 0xFFC00000, 0x7FC00001]> : tensor<4xf32>}>
func.func @non_finite() -> (tensor<2xf32>, tensor<4xf32>, tensor<2xf32>) {
  %nan = graph.constant dense<0x7FC00000> : tensor<2xf32>
  %inf = graph.constant dense<[0x7F800000, 0xff800000, 0xFFC00000, 0x7FC00001]> : tensor<4xf32>
  // Leading zeros are fine, as in MLIR: what counts is the significant bits.
  %z = graph.constant dense<[0x000000007FC00000, 0x3F800000]> : tensor<2xf32>
  func.return %nan, %inf, %z : tensor<2xf32>, tensor<4xf32>, tensor<2xf32>
}

// CHECK-LABEL: func.func @zeros_and_extremes
// CHECK:         graph.constant dense<[0.000000e+00, -0.000000e+00]> : tensor<2xf32>
// CHECK:         graph.constant dense<[1.401300e-45, -1.401300e-45, 1.17549435e-38, 3.40282347e+38, -3.40282347e+38]> : tensor<5xf32>
func.func @zeros_and_extremes() -> (tensor<2xf32>, tensor<5xf32>) {
  %z = graph.constant dense<[0.0, -0.0]> : tensor<2xf32>
  %e = graph.constant dense<[0x00000001, 0x80000001, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF]> : tensor<5xf32>
  func.return %z, %e : tensor<2xf32>, tensor<5xf32>
}

// CHECK-LABEL: func.func @f64_options
// CHECK:         graph.batch_norm %{{.*}} eps 0x4132D68700000000 momentum 2.500000e-01 :
// CHECK:         graph.batch_norm %{{.*}} eps 1.000000e-03 :
// CHECK:         graph.leaky_relu %{{.*}} negative_slope 0x4170000000000000 :
// CHECK:         graph.leaky_relu %{{.*}} negative_slope -0.000000e+00 :
// GENERIC:       "graph.batch_norm"({{.*}}) <{eps = 0x4132D68700000000 : f64, momentum = 2.500000e-01 : f64}>
// GENERIC:       "graph.leaky_relu"({{.*}}) <{negative_slope = 0x4170000000000000 : f64}>
func.func @f64_options(%x: tensor<?x4x2x2xf32>, %p: tensor<4xf32>) -> (tensor<?x4x2x2xf32>, tensor<?x4x2x2xf32>, tensor<?x4x2x2xf32>, tensor<?x4x2x2xf32>) {
  %a = graph.batch_norm %x, %p, %p, %p, %p eps 1234567.0 momentum 0x3FD0000000000000 : (tensor<?x4x2x2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x4x2x2xf32>
  %b = graph.batch_norm %x, %p, %p, %p, %p eps 0x3F50624DD2F1A9FC : (tensor<?x4x2x2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x4x2x2xf32>
  %c = graph.leaky_relu %x negative_slope 16777216.0 : tensor<?x4x2x2xf32>
  %d = graph.leaky_relu %x negative_slope 0x8000000000000000 : tensor<?x4x2x2xf32>
  func.return %a, %b, %c, %d : tensor<?x4x2x2xf32>, tensor<?x4x2x2xf32>, tensor<?x4x2x2xf32>, tensor<?x4x2x2xf32>
}

// CHECK-LABEL: func.func @builtin_and_derivations
// CHECK:         graph.constant {a = 0x7FC00000 : f32, b = 0xFFF0000000000000 : f64, fill = #derive.param<fill(1.0) : [4]>, scale = #derive.param<bn_scale("g", "v") eps 1234567.0 : [4]>} dense<1.000000e+00> : tensor<2xf32>
func.func @builtin_and_derivations() -> tensor<2xf32> {
  %c = graph.constant {a = 0x7FC00000 : f32, b = 0xFFF0000000000000 : f64, fill = #derive.param<fill(0x3FF0000000000000) : [4]>, scale = #derive.param<bn_scale("g", "v") eps 0x4132D68700000000 : [4]>} dense<1.0> : tensor<2xf32>
  func.return %c : tensor<2xf32>
}
