// RUN: teeny-opt %s | teeny-opt | filecheck %s
// RUN: teeny-opt %s --mlir-print-op-generic | teeny-opt | filecheck %s

// A GEMM launch with its weight table (the spine's fused conv + BN + SiLU).
// CHECK-LABEL: func.func @gemm
// CHECK-SAME:    (%[[X:.*]]: tensor<?x8x4x4xf32>)
// CHECK-NEXT:    kernel.weight "m.conv.weight" : tensor<16x8x1x1xf32>
// CHECK-NEXT:    kernel.weight "m.bn.weight" : tensor<16xf32>
// CHECK-NEXT:    kernel.weight "m.bn.bias" : tensor<16xf32>
// CHECK-NEXT:    kernel.weight "m.bn.running_mean" : tensor<16xf32>
// CHECK-NEXT:    kernel.weight "m.bn.running_var" : tensor<16xf32>
// CHECK-NEXT:    %[[Y:.*]] = kernel.launch "conv1x1_gemm" (%[[X]]) {BLOCK_M = 64, BLOCK_N = 64, BLOCK_K = 16, GROUP_M = 8, ACTIVATION = "silu"}
// CHECK-SAME:      params [w : tensor<16x8xf32> = #derive.param<reshape("m.conv.weight") : [16, 8]>, scale : tensor<16xf32> = #derive.param<bn_scale("m.bn.weight", "m.bn.running_var") eps 0.001 : [16]>, shift : tensor<16xf32> = #derive.param<bn_shift("m.bn.weight", "m.bn.bias", "m.bn.running_mean", "m.bn.running_var") eps 0.001 : [16]>]
// CHECK-SAME:      args [x = in0, w = param.w, scale = param.scale, shift = param.shift, r = in0, y = out0, B = "B", C_IN = "8", C_OUT = "16", M = "16", x_batch_stride = "128", r_batch_stride = "128", y_batch_stride = "256", HAS_RESIDUAL = "0"]
// CHECK-SAME:      grid ["B * cdiv(16, 64) * cdiv(16, 64)", "1", "1"] warps 4 stages 2
// CHECK-SAME:      : (tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32>
// CHECK-NEXT:    func.return %[[Y]]
func.func @gemm(%x: tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32> {
  kernel.weight "m.conv.weight" : tensor<16x8x1x1xf32>
  kernel.weight "m.bn.weight" : tensor<16xf32>
  kernel.weight "m.bn.bias" : tensor<16xf32>
  kernel.weight "m.bn.running_mean" : tensor<16xf32>
  kernel.weight "m.bn.running_var" : tensor<16xf32>
  %y = kernel.launch "conv1x1_gemm" (%x) {BLOCK_M = 64, BLOCK_N = 64, BLOCK_K = 16, GROUP_M = 8, ACTIVATION = "silu"}
      params [w : tensor<16x8xf32> = #derive.param<reshape("m.conv.weight") : [16, 8]>,
              scale : tensor<16xf32> = #derive.param<bn_scale("m.bn.weight", "m.bn.running_var") eps 0.001 : [16]>,
              shift : tensor<16xf32> = #derive.param<bn_shift("m.bn.weight", "m.bn.bias", "m.bn.running_mean", "m.bn.running_var") eps 0.001 : [16]>]
      args [x = in0, w = param.w, scale = param.scale, shift = param.shift, r = in0, y = out0,
            B = "B", C_IN = "8", C_OUT = "16", M = "16", x_batch_stride = "128", r_batch_stride = "128", y_batch_stride = "256", HAS_RESIDUAL = "0"]
      grid ["B * cdiv(16, 64) * cdiv(16, 64)", "1", "1"] warps 4 stages 2
      : (tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32>
  func.return %y : tensor<?x16x4x4xf32>
}

// A broadcasting add at a static batch: no parameter slots, so no `params`.
// CHECK-LABEL: func.func @broadcast_add
// CHECK-SAME:    (%[[A:.*]]: tensor<2x4x3x3xf32>, %[[B:.*]]: tensor<4x1x1xf32>)
// CHECK-NEXT:    %[[Z:.*]] = kernel.launch "elementwise" (%[[A]], %[[B]]) {OP = "add", BLOCK = 1024} args [x = in0, y = in1, out = out0, numel = "72", size1 = "1", size2 = "2", size3 = "4", size4 = "3", size5 = "3", x_stride0 = "72", x_stride1 = "72", x_stride2 = "36", x_stride3 = "9", x_stride4 = "3", x_stride5 = "1", y_stride0 = "4", y_stride1 = "4", y_stride2 = "0", y_stride3 = "1", y_stride4 = "0", y_stride5 = "0"] grid ["cdiv(72, 1024)", "1", "1"] warps 4 stages 1 : (tensor<2x4x3x3xf32>, tensor<4x1x1xf32>) -> tensor<2x4x3x3xf32>
// CHECK-NEXT:    func.return %[[Z]]
func.func @broadcast_add(%a: tensor<2x4x3x3xf32>, %b: tensor<4x1x1xf32>) -> tensor<2x4x3x3xf32> {
  %z = kernel.launch "elementwise" (%a, %b) {OP = "add", BLOCK = 1024}
      args [x = in0, y = in1, out = out0, numel = "72", size1 = "1", size2 = "2", size3 = "4", size4 = "3", size5 = "3",
            x_stride0 = "72", x_stride1 = "72", x_stride2 = "36", x_stride3 = "9", x_stride4 = "3", x_stride5 = "1",
            y_stride0 = "4", y_stride1 = "4", y_stride2 = "0", y_stride3 = "1", y_stride4 = "0", y_stride5 = "0"]
      grid ["cdiv(72, 1024)", "1", "1"] warps 4 stages 1
      : (tensor<2x4x3x3xf32>, tensor<4x1x1xf32>) -> tensor<2x4x3x3xf32>
  func.return %z : tensor<2x4x3x3xf32>
}

// Names that are not identifiers print as strings; discardable attributes
// follow `attributes`; an unquoted expression symbol prints quoted; constexprs
// keep their order.
// CHECK-LABEL: func.func @spellings
// CHECK-NEXT:    kernel.weight "odd \22name\22 \\ \09" {note = "kept"} : tensor<4xf32>
// CHECK-NEXT:    kernel.launch "elementwise" (%{{.*}}) {BLOCK = 256, OP = "relu"} args [x = in0, y = in0, out = out0, numel = "B", size1 = "1", size2 = "1", size3 = "1", size4 = "1", size5 = "B", x_stride0 = "B", x_stride1 = "B", x_stride2 = "B", x_stride3 = "B", x_stride4 = "B", x_stride5 = "1", y_stride0 = "B", y_stride1 = "B", y_stride2 = "B", y_stride3 = "B", y_stride4 = "B", y_stride5 = "1"] grid ["cdiv(B, 256)", "1", "1"] warps 1 stages 1 attributes {note = "kept"} : (tensor<?xf32>) -> tensor<?xf32>
func.func @spellings(%x: tensor<?xf32>) -> tensor<?xf32> {
  kernel.weight "odd \"name\" \\ \t" {note = "kept"} : tensor<4xf32>
  %y = kernel.launch "elementwise" (%x) {BLOCK = 256, OP = "relu"}
      args [x = in0, y = in0, out = out0, numel = B, size1 = "1", size2 = "1", size3 = "1", size4 = "1", size5 = B,
            x_stride0 = B, x_stride1 = B, x_stride2 = B, x_stride3 = B, x_stride4 = B, x_stride5 = "1",
            y_stride0 = B, y_stride1 = B, y_stride2 = B, y_stride3 = B, y_stride4 = B, y_stride5 = "1"]
      grid ["cdiv(B, 256)", "1", "1"] warps 1 stages 1 attributes {note = "kept"}
      : (tensor<?xf32>) -> tensor<?xf32>
  func.return %y : tensor<?xf32>
}

// The attributes' own syntax (the generic form's spelling).
// CHECK-LABEL: func.func @generic
// CHECK:         kernel.launch "conv1x1_gemm" (%{{.*}}) {BLOCK_M = 32, BLOCK_N = 32, BLOCK_K = 32, GROUP_M = 8, ACTIVATION = "none"} params [w : tensor<4x2xf32> = #derive.param<reshape("w") : [4, 2]>, scale : tensor<4xf32> = #derive.param<fill(1.0) : [4]>, shift : tensor<4xf32> = #derive.param<identity("b") : [4]>] args [x = in0, w = param.w, scale = param.scale, shift = param.shift, r = in0, y = out0, B = "3", C_IN = "2", C_OUT = "4", M = "1", x_batch_stride = "2", r_batch_stride = "2", y_batch_stride = "4", HAS_RESIDUAL = "0"] grid ["3", "1", "1"] warps 4 stages 2 : (tensor<3x2x1x1xf32>) -> tensor<3x4x1x1xf32>
func.func @generic(%x: tensor<3x2x1x1xf32>) -> tensor<3x4x1x1xf32> {
  "kernel.weight"() <{weight_name = "w", type = tensor<4x2x1x1xf32>}> : () -> ()
  "kernel.weight"() <{weight_name = "b", type = tensor<4xf32>}> : () -> ()
  %y = "kernel.launch"(%x) <{family = "conv1x1_gemm", constexprs = {BLOCK_M = 32 : i64, BLOCK_N = 32 : i64, BLOCK_K = 32 : i64, GROUP_M = 8 : i64, ACTIVATION = "none"}, params = [#kernel.slot<w : tensor<4x2xf32> = #derive.param<reshape("w") : [4, 2]>>, #kernel.slot<scale : tensor<4xf32> = #derive.param<fill(1.0) : [4]>>, #kernel.slot<shift : tensor<4xf32> = #derive.param<identity("b") : [4]>>], args = [#kernel.arg<x = in0>, #kernel.arg<w = param.w>, #kernel.arg<scale = param.scale>, #kernel.arg<shift = param.shift>, #kernel.arg<r = in0>, #kernel.arg<y = out0>, #kernel.arg<B = "3">, #kernel.arg<C_IN = "2">, #kernel.arg<C_OUT = "4">, #kernel.arg<M = "1">, #kernel.arg<x_batch_stride = "2">, #kernel.arg<r_batch_stride = "2">, #kernel.arg<y_batch_stride = "4">, #kernel.arg<HAS_RESIDUAL = "0">], grid = ["3", "1", "1"], num_warps = 4 : i64, num_stages = 2 : i64}> : (tensor<3x2x1x1xf32>) -> tensor<3x4x1x1xf32>
  func.return %y : tensor<3x4x1x1xf32>
}
