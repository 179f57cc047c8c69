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

// CHECK-LABEL: func.func @add_dynamic_both_and_scalar
// CHECK:         graph.add %{{.*}}, %{{.*}} : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
func.func @add_dynamic_both_and_scalar(%a: tensor<?x4xf32>, %b: tensor<?x1xf32>) -> tensor<?x4xf32> {
  %z = graph.add %a, %b : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
  func.return %z : tensor<?x4xf32>
}

// CHECK-LABEL: func.func @relu_sigmoid(
// CHECK-SAME:      %[[X:[^:]*]]: tensor<?x16x8x8xf32>
// CHECK:         %[[R:.*]] = graph.relu %[[X]] : tensor<?x16x8x8xf32>
// CHECK:         %[[S:.*]] = graph.sigmoid %[[R]] {tag} : tensor<?x16x8x8xf32>
// CHECK:         func.return %[[S]]
func.func @relu_sigmoid(%x: tensor<?x16x8x8xf32>) -> tensor<?x16x8x8xf32> {
  %r = graph.relu %x : tensor<?x16x8x8xf32>
  %s = graph.sigmoid %r {tag} : tensor<?x16x8x8xf32>
  func.return %s : tensor<?x16x8x8xf32>
}

// CHECK-LABEL: func.func @unary_static_and_rank0
// CHECK:         graph.relu %{{.*}} : tensor<f32>
// CHECK:         graph.sigmoid %{{.*}} : tensor<2x3xf32>
func.func @unary_static_and_rank0(%s: tensor<f32>, %t: tensor<2x3xf32>) -> (tensor<f32>, tensor<2x3xf32>) {
  %r = graph.relu %s : tensor<f32>
  %g = graph.sigmoid %t : tensor<2x3xf32>
  func.return %r, %g : tensor<f32>, tensor<2x3xf32>
}

// CHECK-LABEL: func.func @mul_broadcast(
// CHECK-SAME:      %[[X:[^:]*]]: tensor<?x16x8x8xf32>, %[[G:[^:]*]]: tensor<?x16x1x1xf32>
// CHECK:         %[[Z:.*]] = graph.mul %[[X]], %[[G]] : (tensor<?x16x8x8xf32>, tensor<?x16x1x1xf32>) -> tensor<?x16x8x8xf32>
// CHECK:         graph.mul %{{.*}}, %[[Z]] : (tensor<f32>, tensor<?x16x8x8xf32>) -> tensor<?x16x8x8xf32>
// CHECK:         graph.mul %{{.*}}, %{{.*}} : (tensor<1x3xf32>, tensor<4x1xf32>) -> tensor<4x3xf32>
func.func @mul_broadcast(%x: tensor<?x16x8x8xf32>, %g: tensor<?x16x1x1xf32>) -> (tensor<?x16x8x8xf32>, tensor<4x3xf32>) {
  %z = graph.mul %x, %g : (tensor<?x16x8x8xf32>, tensor<?x16x1x1xf32>) -> tensor<?x16x8x8xf32>
  %s = graph.param "scalar" : tensor<f32>
  %z1 = graph.mul %s, %z : (tensor<f32>, tensor<?x16x8x8xf32>) -> tensor<?x16x8x8xf32>
  %row = graph.param "row" : tensor<1x3xf32>
  %col = graph.param "col" : tensor<4x1xf32>
  %z2 = graph.mul %row, %col : (tensor<1x3xf32>, tensor<4x1xf32>) -> tensor<4x3xf32>
  func.return %z1, %z2 : tensor<?x16x8x8xf32>, tensor<4x3xf32>
}

// CHECK-LABEL: func.func @bias_add(
// CHECK-SAME:      %[[X:[^:]*]]: tensor<?x16x8x8xf32>
// CHECK:         %[[B:.*]] = graph.param "model.0.conv.bias" : tensor<16xf32>
// CHECK:         %[[Y:.*]] = graph.bias_add %[[X]], %[[B]] : (tensor<?x16x8x8xf32>, tensor<16xf32>) -> tensor<?x16x8x8xf32>
// CHECK:         graph.bias_add %{{.*}}, %{{.*}} {tag} : (tensor<3x5xf32>, tensor<5xf32>) -> tensor<3x5xf32>
// CHECK:         graph.bias_add %{{.*}}, %{{.*}} : (tensor<?x2x7xf32>, tensor<2xf32>) -> tensor<?x2x7xf32>
func.func @bias_add(%x: tensor<?x16x8x8xf32>, %m: tensor<3x5xf32>, %s: tensor<?x2x7xf32>) -> (tensor<?x16x8x8xf32>, tensor<3x5xf32>, tensor<?x2x7xf32>) {
  %b = graph.param "model.0.conv.bias" : tensor<16xf32>
  %y = graph.bias_add %x, %b : (tensor<?x16x8x8xf32>, tensor<16xf32>) -> tensor<?x16x8x8xf32>
  %b5 = graph.param "b5" : tensor<5xf32>
  %y2 = graph.bias_add %m, %b5 {tag} : (tensor<3x5xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  %b2 = graph.param "b2" : tensor<2xf32>
  %y3 = graph.bias_add %s, %b2 : (tensor<?x2x7xf32>, tensor<2xf32>) -> tensor<?x2x7xf32>
  func.return %y, %y2, %y3 : tensor<?x16x8x8xf32>, tensor<3x5xf32>, tensor<?x2x7xf32>
}

// The BN fold as fuse-conv-bn-act writes it, before and after select-conv-algorithm.
// CHECK-LABEL: func.func @fused_conv2d_bn_fold(
// CHECK-SAME:      %[[X:[^:]*]]: tensor<?x8x4x4xf32>
// CHECK:         %[[W:.*]] = graph.param "m.conv.weight" : tensor<16x8x1x1xf32>
// CHECK:         %[[Y:.*]] = graph.fused_conv2d %[[X]], %[[W]] scale #derive.param<bn_scale("m.bn.weight", "m.bn.running_var") eps 0.001 : [16]> shift #derive.param<bn_shift("m.bn.weight", "m.bn.bias", "m.bn.running_mean", "m.bn.running_var") eps 0.001 : [16]> activation silu : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<?x16x4x4xf32>
// CHECK:         graph.fused_conv2d %[[X]], %[[W]] scale #derive.param<{{.*}}> shift #derive.param<{{.*}}> activation silu algorithm gemm tiles [64, 64, 16] : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<?x16x4x4xf32>
func.func @fused_conv2d_bn_fold(%x: tensor<?x8x4x4xf32>) -> (tensor<?x16x4x4xf32>, tensor<?x16x4x4xf32>) {
  %w = graph.param "m.conv.weight" : tensor<16x8x1x1xf32>
  %y = graph.fused_conv2d %x, %w activation silu shift #derive.param<bn_shift("m.bn.weight", "m.bn.bias", "m.bn.running_mean", "m.bn.running_var") eps 1.0e-3 : [16]> scale #derive.param<bn_scale("m.bn.weight", "m.bn.running_var") eps 1.0e-3 : [16]> : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<?x16x4x4xf32>
  %z = graph.fused_conv2d %x, %w scale #derive.param<bn_scale("m.bn.weight", "m.bn.running_var") eps 1.0e-3 : [16]> shift #derive.param<bn_shift("m.bn.weight", "m.bn.bias", "m.bn.running_mean", "m.bn.running_var") eps 1.0e-3 : [16]> activation silu algorithm gemm tiles [64, 64, 16] : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<?x16x4x4xf32>
  func.return %y, %z : tensor<?x16x4x4xf32>, tensor<?x16x4x4xf32>
}

// A bias-only epilogue (no activation) and every window option; a keyword may be
// quoted, and prints bare unless it is no bare identifier (implicit-gemm).
// CHECK-LABEL: func.func @fused_conv2d_bias_options
// CHECK:         graph.fused_conv2d %{{.*}}, %{{.*}} strides [2, 1] padding [0, 1, 2, 3] dilation [2, 1] groups 2 scale #derive.param<fill(1.0) : [6]> shift #derive.param<identity("b") : [6]> algorithm "implicit-gemm" tiles [32, 32, 8] : (tensor<1x4x9x9xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x4x11xf32>
// CHECK:         graph.fused_conv2d %{{.*}}, %{{.*}} padding [1, 1, 1, 1] groups 8 scale #derive.param<fill(1.0) : [8]> shift #derive.param<fill(0.0) : [8]> activation relu algorithm depthwise tiles [16, 16, 16] {tag} : (tensor<?x8x5x5xf32>, tensor<8x1x3x3xf32>) -> tensor<?x8x5x5xf32>
func.func @fused_conv2d_bias_options(%x: tensor<1x4x9x9xf32>, %d: tensor<?x8x5x5xf32>) -> (tensor<1x6x4x11xf32>, tensor<?x8x5x5xf32>) {
  %w = graph.param "w" : tensor<6x2x3x3xf32>
  %y = graph.fused_conv2d %x, %w strides [2, 1] padding [0, 1, 2, 3] dilation [2, 1] groups 2 scale #derive.param<fill(1.0) : [6]> shift #derive.param<identity("b") : [6]> algorithm "implicit-gemm" tiles [32, 32, 8] : (tensor<1x4x9x9xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x4x11xf32>
  %dw = graph.param "dw" : tensor<8x1x3x3xf32>
  %z = graph.fused_conv2d %d, %dw padding [1, 1, 1, 1] groups 8 scale #derive.param<fill(1.0) : [8]> shift #derive.param<fill(0.0) : [8]> activation relu algorithm "depthwise" tiles [16, 16, 16] {tag} : (tensor<?x8x5x5xf32>, tensor<8x1x3x3xf32>) -> tensor<?x8x5x5xf32>
  func.return %y, %z : tensor<1x6x4x11xf32>, tensor<?x8x5x5xf32>
}

// CHECK-LABEL: func.func @fused_conv2d_sigmoid
// CHECK:         graph.fused_conv2d %{{.*}}, %{{.*}} scale #derive.param<fill(1.0) : [4]> shift #derive.param<fill(0.0) : [4]> activation sigmoid : (tensor<?x2x3x3xf32>, tensor<4x2x3x3xf32>) -> tensor<?x4x1x1xf32>
func.func @fused_conv2d_sigmoid(%x: tensor<?x2x3x3xf32>) -> tensor<?x4x1x1xf32> {
  %w = graph.param "w" : tensor<4x2x3x3xf32>
  %y = graph.fused_conv2d %x, %w scale #derive.param<fill(1.0) : [4]> shift #derive.param<fill(0.0) : [4]> activation sigmoid : (tensor<?x2x3x3xf32>, tensor<4x2x3x3xf32>) -> tensor<?x4x1x1xf32>
  func.return %y : tensor<?x4x1x1xf32>
}
