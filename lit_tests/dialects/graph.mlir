// RUN: teeny-opt %s | teeny-opt | filecheck %s
// RUN: teeny-opt %s --mlir-print-op-generic | teeny-opt | filecheck %s

// CHECK-LABEL: func.func @param_names
// CHECK:         %[[W:.*]] = graph.param "model.0.conv.weight" : tensor<16x3x3x3xf32>
// CHECK:         %[[S:.*]] = graph.param "odd \22name\22 \\ \09" : tensor<f32>
// CHECK:         func.return %[[W]], %[[S]]
func.func @param_names() -> (tensor<16x3x3x3xf32>, tensor<f32>) {
  %w = graph.param "model.0.conv.weight" : tensor<16x3x3x3xf32>
  %s = graph.param "odd \"name\" \\ \t" : tensor<f32>
  func.return %w, %s : tensor<16x3x3x3xf32>, tensor<f32>
}

// CHECK-LABEL: func.func @param_attr_dict
// CHECK:         graph.param "w" {note = "kept"} : tensor<4xf32>
func.func @param_attr_dict() -> tensor<4xf32> {
  %w = graph.param "w" {note = "kept"} : tensor<4xf32>
  func.return %w : tensor<4xf32>
}

// CHECK-LABEL: func.func @conv2d_defaults(
// CHECK-SAME:      %[[X:[^:]*]]: tensor<?x3x8x8xf32>
// CHECK:         %[[W:.*]] = graph.param "w" : tensor<16x3x3x3xf32>
// CHECK:         %[[Y:.*]] = graph.conv2d %[[X]], %[[W]] : (tensor<?x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<?x16x6x6xf32>
// CHECK:         func.return %[[Y]]
func.func @conv2d_defaults(%x: tensor<?x3x8x8xf32>) -> tensor<?x16x6x6xf32> {
  %w = graph.param "w" : tensor<16x3x3x3xf32>
  %y = graph.conv2d %x, %w : (tensor<?x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<?x16x6x6xf32>
  func.return %y : tensor<?x16x6x6xf32>
}

// CHECK-LABEL: func.func @conv2d_bias_all_options(
// CHECK-SAME:      %[[X:[^:]*]]: tensor<?x3x8x8xf32>
// CHECK:         %[[W:.*]] = graph.param "w" : tensor<16x3x3x3xf32>
// CHECK:         %[[B:.*]] = graph.param "b" : tensor<16xf32>
// CHECK:         %[[Y:.*]] = graph.conv2d %[[X]], %[[W]], %[[B]] strides [2, 2] padding [1, 1, 1, 1] dilation [1, 1] groups 1 : (tensor<?x3x8x8xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<?x16x4x4xf32>
// CHECK:         func.return %[[Y]]
func.func @conv2d_bias_all_options(%x: tensor<?x3x8x8xf32>) -> tensor<?x16x4x4xf32> {
  %w = graph.param "w" : tensor<16x3x3x3xf32>
  %b = graph.param "b" : tensor<16xf32>
  %y = graph.conv2d %x, %w, %b strides [2, 2] padding [1, 1, 1, 1] dilation [1, 1] groups 1 : (tensor<?x3x8x8xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<?x16x4x4xf32>
  func.return %y : tensor<?x16x4x4xf32>
}

// Options may be written in any order; they print in a fixed order.
// CHECK-LABEL: func.func @conv2d_option_order
// CHECK:         graph.conv2d %{{.*}}, %{{.*}} strides [2, 1] padding [0, 1, 2, 3] : (tensor<2x4x9x9xf32>, tensor<8x4x3x3xf32>) -> tensor<2x8x5x11xf32>
func.func @conv2d_option_order(%x: tensor<2x4x9x9xf32>) -> tensor<2x8x5x11xf32> {
  %w = graph.param "w" : tensor<8x4x3x3xf32>
  %y = graph.conv2d %x, %w padding [0, 1, 2, 3] strides [2, 1] : (tensor<2x4x9x9xf32>, tensor<8x4x3x3xf32>) -> tensor<2x8x5x11xf32>
  func.return %y : tensor<2x8x5x11xf32>
}

// CHECK-LABEL: func.func @conv2d_depthwise_dilated
// CHECK:         graph.conv2d %{{.*}}, %{{.*}} padding [2, 2, 2, 2] dilation [2, 2] groups 8 : (tensor<?x8x7x7xf32>, tensor<8x1x3x3xf32>) -> tensor<?x8x7x7xf32>
func.func @conv2d_depthwise_dilated(%x: tensor<?x8x7x7xf32>) -> tensor<?x8x7x7xf32> {
  %w = graph.param "w" : tensor<8x1x3x3xf32>
  %y = graph.conv2d %x, %w padding [2, 2, 2, 2] dilation [2, 2] groups 8 : (tensor<?x8x7x7xf32>, tensor<8x1x3x3xf32>) -> tensor<?x8x7x7xf32>
  func.return %y : tensor<?x8x7x7xf32>
}

// CHECK-LABEL: func.func @conv2d_grouped_attr_dict
// CHECK:         graph.conv2d %{{.*}}, %{{.*}} groups 2 {algorithm = "implicit-gemm"} : (tensor<1x4x5x5xf32>, tensor<6x2x1x1xf32>) -> tensor<1x6x5x5xf32>
func.func @conv2d_grouped_attr_dict(%x: tensor<1x4x5x5xf32>) -> tensor<1x6x5x5xf32> {
  %w = graph.param "w" : tensor<6x2x1x1xf32>
  %y = graph.conv2d %x, %w groups 2 {algorithm = "implicit-gemm"} : (tensor<1x4x5x5xf32>, tensor<6x2x1x1xf32>) -> tensor<1x6x5x5xf32>
  func.return %y : tensor<1x6x5x5xf32>
}

// CHECK-LABEL: func.func @batch_norm_inference(
// CHECK-SAME:      %[[X:[^:]*]]: tensor<?x16x8x8xf32>
// CHECK:         %[[G:.*]] = graph.param "bn.weight"
// CHECK:         %[[B:.*]] = graph.param "bn.bias"
// CHECK:         %[[M:.*]] = graph.param "bn.running_mean"
// CHECK:         %[[V:.*]] = graph.param "bn.running_var"
// CHECK:         %[[Y:.*]] = graph.batch_norm %[[X]], %[[G]], %[[B]], %[[M]], %[[V]] : (tensor<?x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x16x8x8xf32>
// CHECK:         func.return %[[Y]]
func.func @batch_norm_inference(%x: tensor<?x16x8x8xf32>) -> tensor<?x16x8x8xf32> {
  %g = graph.param "bn.weight" : tensor<16xf32>
  %b = graph.param "bn.bias" : tensor<16xf32>
  %m = graph.param "bn.running_mean" : tensor<16xf32>
  %v = graph.param "bn.running_var" : tensor<16xf32>
  %y = graph.batch_norm %x, %g, %b, %m, %v : (tensor<?x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x16x8x8xf32>
  func.return %y : tensor<?x16x8x8xf32>
}

// CHECK-LABEL: func.func @batch_norm_eps_momentum
// CHECK:         graph.batch_norm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} eps 1.000000e-03 momentum 3.000000e-02 : (tensor<?x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x16xf32>
func.func @batch_norm_eps_momentum(%x: tensor<?x16xf32>, %p: tensor<16xf32>) -> tensor<?x16xf32> {
  %y = graph.batch_norm %x, %p, %p, %p, %p momentum 0.03 eps 0.001 : (tensor<?x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x16xf32>
  func.return %y : tensor<?x16xf32>
}

// CHECK-LABEL: func.func @batch_norm_training
// CHECK:         %[[Y:.*]], %[[MEAN:.*]], %[[VAR:.*]] = graph.batch_norm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} momentum 1.000000e-01 training {tag} : (tensor<?x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<?x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>)
// CHECK:         func.return %[[Y]], %[[MEAN]], %[[VAR]]
func.func @batch_norm_training(%x: tensor<?x4x3x3xf32>, %p: tensor<4xf32>) -> (tensor<?x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>) {
  %y:3 = graph.batch_norm %x, %p, %p, %p, %p training momentum 0.1 {tag} : (tensor<?x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<?x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>)
  func.return %y#0, %y#1, %y#2 : tensor<?x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @silu(
// CHECK-SAME:      %[[X:[^:]*]]: tensor<?x16x8x8xf32>
// CHECK:         %[[Y:.*]] = graph.silu %[[X]] : tensor<?x16x8x8xf32>
// CHECK:         func.return %[[Y]]
func.func @silu(%x: tensor<?x16x8x8xf32>) -> tensor<?x16x8x8xf32> {
  %y = graph.silu %x : tensor<?x16x8x8xf32>
  func.return %y : tensor<?x16x8x8xf32>
}

// CHECK-LABEL: func.func @add_same_shape(
// CHECK-SAME:      %[[A:[^:]*]]: tensor<?x16xf32>, %[[B:[^:]*]]: tensor<?x16xf32>
// CHECK:         %[[Z:.*]] = graph.add %[[A]], %[[B]] : (tensor<?x16xf32>, tensor<?x16xf32>) -> tensor<?x16xf32>
// CHECK:         func.return %[[Z]]
func.func @add_same_shape(%a: tensor<?x16xf32>, %b: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %z = graph.add %a, %b : (tensor<?x16xf32>, tensor<?x16xf32>) -> tensor<?x16xf32>
  func.return %z : tensor<?x16xf32>
}

// CHECK-LABEL: func.func @add_broadcast
// CHECK:         graph.add %{{.*}}, %{{.*}} : (tensor<?x16x8x8xf32>, tensor<16x1x1xf32>) -> tensor<?x16x8x8xf32>
// CHECK:         graph.add %{{.*}}, %{{.*}} : (tensor<f32>, tensor<?x1x8x8xf32>) -> tensor<?x1x8x8xf32>
// CHECK:         graph.add %{{.*}}, %{{.*}} : (tensor<1x3xf32>, tensor<4x1xf32>) -> tensor<4x3xf32>
func.func @add_broadcast(%x: tensor<?x16x8x8xf32>, %y: tensor<?x1x8x8xf32>) -> (tensor<?x16x8x8xf32>, tensor<?x1x8x8xf32>, tensor<4x3xf32>) {
  %bias = graph.param "bias" : tensor<16x1x1xf32>
  %z0 = graph.add %x, %bias : (tensor<?x16x8x8xf32>, tensor<16x1x1xf32>) -> tensor<?x16x8x8xf32>
  %s = graph.param "scalar" : tensor<f32>
  %z1 = graph.add %s, %y : (tensor<f32>, tensor<?x1x8x8xf32>) -> tensor<?x1x8x8xf32>
  %row = graph.param "row" : tensor<1x3xf32>
  %col = graph.param "col" : tensor<4x1xf32>
  %z2 = graph.add %row, %col : (tensor<1x3xf32>, tensor<4x1xf32>) -> tensor<4x3xf32>
  func.return %z0, %z1, %z2 : tensor<?x16x8x8xf32>, tensor<?x1x8x8xf32>, tensor<4x3xf32>
}

// CHECK-LABEL: func.func @add_dynamic_against_one
// CHECK:         graph.add %{{.*}}, %{{.*}} : (tensor<?x4xf32>, tensor<1x4xf32>) -> tensor<?x4xf32>
func.func @add_dynamic_against_one(%a: tensor<?x4xf32>, %b: tensor<1x4xf32>) -> tensor<?x4xf32> {
  %z = graph.add %a, %b : (tensor<?x4xf32>, tensor<1x4xf32>) -> tensor<?x4xf32>
  func.return %z : tensor<?x4xf32>
}
