// RUN: teeny-opt %s --split-input-file -p lower-graph-to-kernel | filecheck %s
// RUN: teeny-opt %s --split-input-file -p lower-graph-to-kernel | teeny-opt --split-input-file | filecheck %s

// The spine's block after fuse-conv-bn-act and select-conv-algorithm. The
// folded batch-norm weights have no graph.param any more: the weight table
// declares them at the derivations' shape [C_OUT], in first-use order.
// CHECK-LABEL: func.func @slice_block
// CHECK-SAME:    (%[[X:.*]]: tensor<?x37x7x9xf32>)
// CHECK-NEXT:    kernel.weight "model.0.conv.weight" : tensor<37x37x1x1xf32>
// CHECK-NEXT:    kernel.weight "model.0.bn.weight" : tensor<37xf32>
// CHECK-NEXT:    kernel.weight "model.0.bn.running_var" : tensor<37xf32>
// CHECK-NEXT:    kernel.weight "model.0.bn.bias" : tensor<37xf32>
// CHECK-NEXT:    kernel.weight "model.0.bn.running_mean" : tensor<37xf32>
// CHECK-NEXT:    %[[Y:.*]] = kernel.launch "conv1x1_gemm" (%[[X]]) {BLOCK_M = 64, BLOCK_N = 64, BLOCK_K = 16, GROUP_M = 8, ACTIVATION = "silu"}
// CHECK-SAME:      params [w : tensor<37x37xf32> = #derive.param<reshape("model.0.conv.weight") : [37, 37]>, scale : tensor<37xf32> = #derive.param<bn_scale("model.0.bn.weight", "model.0.bn.running_var") eps 0.001 : [37]>, shift : tensor<37xf32> = #derive.param<bn_shift("model.0.bn.weight", "model.0.bn.bias", "model.0.bn.running_mean", "model.0.bn.running_var") eps 0.001 : [37]>]
// CHECK-SAME:      args [x = in0, w = param.w, scale = param.scale, shift = param.shift, r = in0, y = out0, B = "B", C_IN = "37", C_OUT = "37", M = "63", x_batch_stride = "2331", r_batch_stride = "2331", y_batch_stride = "2331", HAS_RESIDUAL = "0"]
// CHECK-SAME:      grid ["B * cdiv(63, 64) * cdiv(37, 64)", "1", "1"] warps 4 stages 2 : (tensor<?x37x7x9xf32>) -> tensor<?x37x7x9xf32>
// CHECK-NEXT:    %[[Z:.*]] = kernel.launch "elementwise" (%[[Y]]) {OP = "silu", BLOCK = 1024}
// CHECK-SAME:      args [x = in0, y = in0, out = out0, numel = "B * 2331", size1 = "1", size2 = "B", size3 = "37", size4 = "7", size5 = "9", x_stride0 = "B * 2331", x_stride1 = "B * 2331", x_stride2 = "2331", x_stride3 = "63", x_stride4 = "9", x_stride5 = "1", y_stride0 = "B * 2331", y_stride1 = "B * 2331", y_stride2 = "2331", y_stride3 = "63", y_stride4 = "9", y_stride5 = "1"]
// CHECK-SAME:      grid ["cdiv(B * 2331, 1024)", "1", "1"] warps 4 stages 1 : (tensor<?x37x7x9xf32>) -> tensor<?x37x7x9xf32>
// CHECK-NEXT:    %[[A:.*]] = kernel.launch "elementwise" (%[[Z]], %[[X]]) {OP = "add", BLOCK = 1024}
// CHECK-SAME:      args [x = in0, y = in1, out = out0, numel = "B * 2331", size1 = "1", size2 = "B", size3 = "37", size4 = "7", size5 = "9", x_stride0 = "B * 2331", x_stride1 = "B * 2331", x_stride2 = "2331", x_stride3 = "63", x_stride4 = "9", x_stride5 = "1", y_stride0 = "B * 2331", y_stride1 = "B * 2331", y_stride2 = "2331", y_stride3 = "63", y_stride4 = "9", y_stride5 = "1"]
// CHECK-NEXT:    %[[S:.*]] = kernel.launch "elementwise" (%[[A]]) {OP = "silu", BLOCK = 1024}
// CHECK-NEXT:    func.return %[[S]] : tensor<?x37x7x9xf32>
// CHECK-NOT:     graph.
func.func @slice_block(%x: tensor<?x37x7x9xf32>) -> tensor<?x37x7x9xf32> {
  %w = graph.param "model.0.conv.weight" : tensor<37x37x1x1xf32>
  %y = graph.fused_conv2d %x, %w scale #derive.param<bn_scale("model.0.bn.weight", "model.0.bn.running_var") eps 0.001 : [37]> shift #derive.param<bn_shift("model.0.bn.weight", "model.0.bn.bias", "model.0.bn.running_mean", "model.0.bn.running_var") eps 0.001 : [37]> activation silu algorithm gemm tiles [64, 64, 16] : (tensor<?x37x7x9xf32>, tensor<37x37x1x1xf32>) -> tensor<?x37x7x9xf32>
  %z = graph.silu %y : tensor<?x37x7x9xf32>
  %a = graph.add %z, %x : (tensor<?x37x7x9xf32>, tensor<?x37x7x9xf32>) -> tensor<?x37x7x9xf32>
  %s = graph.silu %a : tensor<?x37x7x9xf32>
  func.return %s : tensor<?x37x7x9xf32>
}

// -----

// A static batch stays a number; 128x128 tiles get 8 warps; a graph.param no
// derivation reads gets no kernel.weight. relu, sigmoid and mul have OP codes 1, 2, 4.
// CHECK-LABEL: func.func @static_batch
// CHECK-NEXT:    kernel.weight "w" : tensor<16x8x1x1xf32>
// CHECK-NEXT:    kernel.weight "b" : tensor<16xf32>
// CHECK-NEXT:    %[[Y:.*]] = kernel.launch "conv1x1_gemm" (%{{.*}}) {BLOCK_M = 128, BLOCK_N = 128, BLOCK_K = 32, GROUP_M = 8, ACTIVATION = "none"}
// CHECK-SAME:      scale : tensor<16xf32> = #derive.param<fill(1.0) : [16]>, shift : tensor<16xf32> = #derive.param<identity("b") : [16]>]
// CHECK-SAME:      B = "2", C_IN = "8", C_OUT = "16", M = "16", x_batch_stride = "128", r_batch_stride = "128", y_batch_stride = "256", HAS_RESIDUAL = "0"]
// CHECK-SAME:      grid ["2 * cdiv(16, 128) * cdiv(16, 128)", "1", "1"] warps 8 stages 2 : (tensor<2x8x4x4xf32>) -> tensor<2x16x4x4xf32>
// CHECK-NEXT:    %[[R:.*]] = kernel.launch "elementwise" (%[[Y]]) {OP = "relu", BLOCK = 1024} args [x = in0, y = in0, out = out0, numel = "512", size1 = "1", size2 = "2", size3 = "16", size4 = "4", size5 = "4", x_stride0 = "512", x_stride1 = "512", x_stride2 = "256",
// CHECK-SAME:      grid ["cdiv(512, 1024)", "1", "1"]
// CHECK-NEXT:    %[[G:.*]] = kernel.launch "elementwise" (%[[R]]) {OP = "sigmoid", BLOCK = 1024}
// CHECK-NEXT:    %[[M:.*]] = kernel.launch "elementwise" (%[[G]], %[[R]]) {OP = "mul", BLOCK = 1024}
// CHECK-NEXT:    func.return %[[M]]
// CHECK-NOT:     kernel.weight "unused"
func.func @static_batch(%x: tensor<2x8x4x4xf32>) -> tensor<2x16x4x4xf32> {
  %w = graph.param "w" : tensor<16x8x1x1xf32>
  %unused = graph.param "unused" : tensor<3xf32>
  %y = graph.fused_conv2d %x, %w scale #derive.param<fill(1.0) : [16]> shift #derive.param<identity("b") : [16]> algorithm gemm tiles [128, 128, 32] : (tensor<2x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<2x16x4x4xf32>
  %r = graph.relu %y : tensor<2x16x4x4xf32>
  %g = graph.sigmoid %r : tensor<2x16x4x4xf32>
  %m = graph.mul %g, %r : (tensor<2x16x4x4xf32>, tensor<2x16x4x4xf32>) -> tensor<2x16x4x4xf32>
  func.return %m : tensor<2x16x4x4xf32>
}

// -----

// Broadcasting: stride 0 where the operand's size is 1 or missing and the
// output's is not, including a static batch 1 against the dynamic batch.
// CHECK-LABEL: func.func @broadcasting
// CHECK-NEXT:    kernel.launch "elementwise" (%{{.*}}, %{{.*}}) {OP = "add", BLOCK = 1024} args [x = in0, y = in1, out = out0, numel = "B * 36", size1 = "1", size2 = "B", size3 = "4", size4 = "3", size5 = "3", x_stride0 = "B * 36", x_stride1 = "B * 36", x_stride2 = "36", x_stride3 = "9", x_stride4 = "3", x_stride5 = "1", y_stride0 = "4", y_stride1 = "4", y_stride2 = "0", y_stride3 = "1", y_stride4 = "0", y_stride5 = "0"] grid ["cdiv(B * 36, 1024)", "1", "1"] warps 4 stages 1 : (tensor<?x4x3x3xf32>, tensor<4x1x1xf32>) -> tensor<?x4x3x3xf32>
// CHECK-NEXT:    kernel.launch "elementwise" (%{{.*}}, %{{.*}}) {OP = "mul", BLOCK = 1024} args [x = in0, y = in1, out = out0, numel = "B * 36", size1 = "1", size2 = "B", size3 = "4", size4 = "3", size5 = "3", x_stride0 = "36", x_stride1 = "36", x_stride2 = "0", x_stride3 = "9", x_stride4 = "3", x_stride5 = "1", y_stride0 = "B * 36", y_stride1 = "B * 36", y_stride2 = "36", y_stride3 = "9", y_stride4 = "3", y_stride5 = "1"]
// CHECK-NEXT:    kernel.launch "elementwise" (%{{.*}}, %{{.*}}) {OP = "add", BLOCK = 1024} args [x = in0, y = in1, out = out0, numel = "B * 36", size1 = "1", size2 = "B", size3 = "4", size4 = "3", size5 = "3", x_stride0 = "B * 36", x_stride1 = "B * 36", x_stride2 = "36", x_stride3 = "9", x_stride4 = "3", x_stride5 = "1", y_stride0 = "3", y_stride1 = "3", y_stride2 = "0", y_stride3 = "0", y_stride4 = "0", y_stride5 = "1"]
func.func @broadcasting(%x: tensor<?x4x3x3xf32>, %c: tensor<4x1x1xf32>, %one: tensor<1x4x3x3xf32>, %row: tensor<3xf32>) -> (tensor<?x4x3x3xf32>, tensor<?x4x3x3xf32>, tensor<?x4x3x3xf32>) {
  %a = graph.add %x, %c : (tensor<?x4x3x3xf32>, tensor<4x1x1xf32>) -> tensor<?x4x3x3xf32>
  %b = graph.mul %one, %x : (tensor<1x4x3x3xf32>, tensor<?x4x3x3xf32>) -> tensor<?x4x3x3xf32>
  %r = graph.add %x, %row : (tensor<?x4x3x3xf32>, tensor<3xf32>) -> tensor<?x4x3x3xf32>
  func.return %a, %b, %r : tensor<?x4x3x3xf32>, tensor<?x4x3x3xf32>, tensor<?x4x3x3xf32>
}

// -----

// A bias_add whose bias is an activation is an add with the bias viewed as
// [1, C, 1, 1]; a rank-2 output is left-padded (to rank 6), so the batch lands on size4.
// CHECK-LABEL: func.func @bias_add_and_low_rank
// CHECK-NEXT:    kernel.launch "elementwise" (%{{.*}}, %{{.*}}) {OP = "add", BLOCK = 1024} args [x = in0, y = in1, out = out0, numel = "B * 10", size1 = "1", size2 = "1", size3 = "1", size4 = "B", size5 = "10", x_stride0 = "B * 10", x_stride1 = "B * 10", x_stride2 = "B * 10", x_stride3 = "B * 10", x_stride4 = "10", x_stride5 = "1", y_stride0 = "0", y_stride1 = "0", y_stride2 = "0", y_stride3 = "0", y_stride4 = "0", y_stride5 = "1"] grid ["cdiv(B * 10, 1024)", "1", "1"]
// CHECK-NEXT:    kernel.launch "elementwise" (%{{.*}}, %{{.*}}) {OP = "add", BLOCK = 1024} args [x = in0, y = in1, out = out0, numel = "B * 36", size1 = "1", size2 = "B", size3 = "4", size4 = "3", size5 = "3", x_stride0 = "B * 36", x_stride1 = "B * 36", x_stride2 = "36", x_stride3 = "9", x_stride4 = "3", x_stride5 = "1", y_stride0 = "0", y_stride1 = "0", y_stride2 = "0", y_stride3 = "1", y_stride4 = "0", y_stride5 = "0"]
func.func @bias_add_and_low_rank(%x: tensor<?x10xf32>, %bias: tensor<10xf32>, %y: tensor<?x4x3x3xf32>, %c: tensor<4xf32>) -> (tensor<?x10xf32>, tensor<?x4x3x3xf32>) {
  %a = graph.bias_add %x, %bias : (tensor<?x10xf32>, tensor<10xf32>) -> tensor<?x10xf32>
  %b = graph.bias_add %y, %c : (tensor<?x4x3x3xf32>, tensor<4xf32>) -> tensor<?x4x3x3xf32>
  func.return %a, %b : tensor<?x10xf32>, tensor<?x4x3x3xf32>
}

// -----

// A depthwise conv lowers to one depthwise_conv launch: the weight as it is,
// the geometry as dims, r bound to the input without a residual.
// CHECK-LABEL: func.func @depthwise
// CHECK-NEXT:    kernel.weight "w" : tensor<4x1x3x3xf32>
// CHECK-NEXT:    kernel.launch "depthwise_conv" (%{{.*}}) {BLOCK_P = 64, BLOCK_C = 64, BLOCK_T = 16, ACTIVATION = "none"}
// CHECK-SAME:      params [w : tensor<4x1x3x3xf32> = #derive.param<identity("w") : [4, 1, 3, 3]>,
// CHECK-SAME:      args [x = in0, w = param.w, scale = param.scale, shift = param.shift, r = in0, y = out0, B = "B", C = "4", H = "8", W = "8", OH = "6", OW = "6", KH = "3", KW = "3", STRIDE_H = "1", STRIDE_W = "1", PAD_T = "0", PAD_L = "0", DIL_H = "1", DIL_W = "1", x_batch_stride = "256", r_batch_stride = "256", y_batch_stride = "144", HAS_RESIDUAL = "0"]
// CHECK-SAME:      grid ["cdiv(B * 36, 64)", "cdiv(4, 64)", "1"]
func.func @depthwise(%x: tensor<?x4x8x8xf32>) -> tensor<?x4x6x6xf32> {
  %w = graph.param "w" : tensor<4x1x3x3xf32>
  %y = graph.fused_conv2d %x, %w groups 4 scale #derive.param<fill(1.0) : [4]> shift #derive.param<fill(0.0) : [4]> algorithm "depthwise" tiles [64, 64, 16] : (tensor<?x4x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<?x4x6x6xf32>
  func.return %y : tensor<?x4x6x6xf32>
}

// -----

// Already-lowered IR passes through unchanged (the pass is idempotent).
// CHECK-LABEL: func.func @already_lowered
// CHECK-NEXT:    kernel.weight "w" : tensor<4x2x1x1xf32>
// CHECK-NEXT:    kernel.weight "b" : tensor<4xf32>
// CHECK-NEXT:    kernel.launch "conv1x1_gemm"
// CHECK-NEXT:    func.return
func.func @already_lowered(%x: tensor<3x2x1x1xf32>) -> tensor<3x4x1x1xf32> {
  kernel.weight "w" : tensor<4x2x1x1xf32>
  kernel.weight "b" : tensor<4xf32>
  %y = kernel.launch "conv1x1_gemm" (%x) {BLOCK_M = 32, BLOCK_N = 32, BLOCK_K = 32, GROUP_M = 8, ACTIVATION = "none"} params [w : tensor<4x2xf32> = #derive.param<reshape("w") : [4, 2]>, scale : tensor<4xf32> = #derive.param<fill(1.0) : [4]>, shift : tensor<4xf32> = #derive.param<identity("b") : [4]>] args [x = in0, w = param.w, scale = param.scale, shift = param.shift, r = in0, y = out0, B = "3", C_IN = "2", C_OUT = "4", M = "1", x_batch_stride = "2", r_batch_stride = "2", y_batch_stride = "4", HAS_RESIDUAL = "0"] grid ["3", "1", "1"] warps 4 stages 2 : (tensor<3x2x1x1xf32>) -> tensor<3x4x1x1xf32>
  func.return %y : tensor<3x4x1x1xf32>
}
