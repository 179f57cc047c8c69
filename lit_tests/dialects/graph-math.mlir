// RUN: teeny-opt %s | teeny-opt | filecheck %s
// RUN: teeny-opt %s --mlir-print-op-generic | teeny-opt | filecheck %s

// CHECK-LABEL: func.func @tanh(
// CHECK-SAME:      %[[X:[^:]*]]: tensor<?x16x8x8xf32>
// CHECK:         %[[Y:.*]] = graph.tanh %[[X]] : tensor<?x16x8x8xf32>
// CHECK:         func.return %[[Y]]
func.func @tanh(%x: tensor<?x16x8x8xf32>) -> tensor<?x16x8x8xf32> {
  %y = graph.tanh %x : tensor<?x16x8x8xf32>
  func.return %y : tensor<?x16x8x8xf32>
}

// CHECK-LABEL: func.func @gelu_exact(
// CHECK:         graph.gelu %{{[^ ]+}} : tensor<?x64xf32>
func.func @gelu_exact(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %y = graph.gelu %x : tensor<?x64xf32>
  func.return %y : tensor<?x64xf32>
}

// CHECK-LABEL: func.func @gelu_tanh(
// CHECK:         graph.gelu %{{.*}} approximate tanh {note = "kept"} : tensor<?x64xf32>
func.func @gelu_tanh(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %y = graph.gelu %x approximate "tanh" {note = "kept"} : tensor<?x64xf32>
  func.return %y : tensor<?x64xf32>
}

// CHECK-LABEL: func.func @leaky_relu_default(
// CHECK:         graph.leaky_relu %{{[^ ]+}} : tensor<?x8x4x4xf32>
func.func @leaky_relu_default(%x: tensor<?x8x4x4xf32>) -> tensor<?x8x4x4xf32> {
  %y = graph.leaky_relu %x : tensor<?x8x4x4xf32>
  func.return %y : tensor<?x8x4x4xf32>
}

// CHECK-LABEL: func.func @leaky_relu_slope(
// CHECK:         graph.leaky_relu %{{.*}} negative_slope 2.000000e-01 : tensor<?x8x4x4xf32>
// CHECK:         graph.leaky_relu %{{.*}} negative_slope -0.123456789 : tensor<?x8x4x4xf32>
func.func @leaky_relu_slope(%x: tensor<?x8x4x4xf32>) -> (tensor<?x8x4x4xf32>, tensor<?x8x4x4xf32>) {
  %y = graph.leaky_relu %x negative_slope 0.2 : tensor<?x8x4x4xf32>
  %z = graph.leaky_relu %x negative_slope -0.123456789 : tensor<?x8x4x4xf32>
  func.return %y, %z : tensor<?x8x4x4xf32>, tensor<?x8x4x4xf32>
}

// CHECK-LABEL: func.func @sub_div_broadcast(
// CHECK-SAME:      %[[X:[^:]*]]: tensor<?x16x8x8xf32>
// CHECK:         %[[M:.*]] = graph.param "mean" : tensor<16x1x1xf32>
// CHECK:         %[[S:.*]] = graph.sub %[[X]], %[[M]] : (tensor<?x16x8x8xf32>, tensor<16x1x1xf32>) -> tensor<?x16x8x8xf32>
// CHECK:         %[[D:.*]] = graph.div %[[S]], %[[M]] : (tensor<?x16x8x8xf32>, tensor<16x1x1xf32>) -> tensor<?x16x8x8xf32>
// CHECK:         func.return %[[D]]
func.func @sub_div_broadcast(%x: tensor<?x16x8x8xf32>) -> tensor<?x16x8x8xf32> {
  %m = graph.param "mean" : tensor<16x1x1xf32>
  %s = graph.sub %x, %m : (tensor<?x16x8x8xf32>, tensor<16x1x1xf32>) -> tensor<?x16x8x8xf32>
  %d = graph.div %s, %m : (tensor<?x16x8x8xf32>, tensor<16x1x1xf32>) -> tensor<?x16x8x8xf32>
  func.return %d : tensor<?x16x8x8xf32>
}

// CHECK-LABEL: func.func @linear_bias(
// CHECK-SAME:      %[[X:[^:]*]]: tensor<?x400xf32>
// CHECK:         %[[W:.*]] = graph.param "fc1.weight" : tensor<120x400xf32>
// CHECK:         %[[B:.*]] = graph.param "fc1.bias" : tensor<120xf32>
// CHECK:         %[[Y:.*]] = graph.linear %[[X]], %[[W]], %[[B]] : (tensor<?x400xf32>, tensor<120x400xf32>, tensor<120xf32>) -> tensor<?x120xf32>
// CHECK:         func.return %[[Y]]
func.func @linear_bias(%x: tensor<?x400xf32>) -> tensor<?x120xf32> {
  %w = graph.param "fc1.weight" : tensor<120x400xf32>
  %b = graph.param "fc1.bias" : tensor<120xf32>
  %y = graph.linear %x, %w, %b : (tensor<?x400xf32>, tensor<120x400xf32>, tensor<120xf32>) -> tensor<?x120xf32>
  func.return %y : tensor<?x120xf32>
}

// CHECK-LABEL: func.func @linear_rank3_no_bias(
// CHECK:         graph.linear %{{.*}}, %{{.*}} : (tensor<?x7x32xf32>, tensor<10x32xf32>) -> tensor<?x7x10xf32>
func.func @linear_rank3_no_bias(%x: tensor<?x7x32xf32>) -> tensor<?x7x10xf32> {
  %w = graph.param "w" : tensor<10x32xf32>
  %y = graph.linear %x, %w : (tensor<?x7x32xf32>, tensor<10x32xf32>) -> tensor<?x7x10xf32>
  func.return %y : tensor<?x7x10xf32>
}

// CHECK-LABEL: func.func @matmul_broadcast(
// CHECK-SAME:      %[[A:[^:]*]]: tensor<?x1x8x16xf32>
// CHECK:         %[[B:.*]] = graph.param "b" : tensor<4x16x5xf32>
// CHECK:         %[[Y:.*]] = graph.matmul %[[A]], %[[B]] : (tensor<?x1x8x16xf32>, tensor<4x16x5xf32>) -> tensor<?x4x8x5xf32>
// CHECK:         func.return %[[Y]]
func.func @matmul_broadcast(%a: tensor<?x1x8x16xf32>) -> tensor<?x4x8x5xf32> {
  %b = graph.param "b" : tensor<4x16x5xf32>
  %y = graph.matmul %a, %b : (tensor<?x1x8x16xf32>, tensor<4x16x5xf32>) -> tensor<?x4x8x5xf32>
  func.return %y : tensor<?x4x8x5xf32>
}

// CHECK-LABEL: func.func @matmul_dynamic_both(
// CHECK:         graph.matmul %{{.*}}, %{{.*}} : (tensor<?x7x3xf32>, tensor<?x3x9xf32>) -> tensor<?x7x9xf32>
func.func @matmul_dynamic_both(%a: tensor<?x7x3xf32>, %b: tensor<?x3x9xf32>) -> tensor<?x7x9xf32> {
  %y = graph.matmul %a, %b : (tensor<?x7x3xf32>, tensor<?x3x9xf32>) -> tensor<?x7x9xf32>
  func.return %y : tensor<?x7x9xf32>
}

// CHECK-LABEL: func.func @constants(
// CHECK:         graph.constant dense<[1.500000e+00, -2.000000e+00, 2.500000e-01]> : tensor<3xf32>
// CHECK:         graph.constant {note} dense<5.000000e-01> : tensor<2x2xf32>
// CHECK:         graph.constant dense<[{{\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
// CHECK:         graph.constant dense<2.000000e+00> : tensor<f32>
func.func @constants() -> (tensor<3xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<f32>) {
  %a = graph.constant dense<[1.5, -2.0, 0.25]> : tensor<3xf32>
  %b = graph.constant {note} dense<0.5> : tensor<2x2xf32>
  %c = graph.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %d = graph.constant dense<2.0> : tensor<f32>
  func.return %a, %b, %c, %d : tensor<3xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<f32>
}
