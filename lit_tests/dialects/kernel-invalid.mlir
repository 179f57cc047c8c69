// RUN: teeny-opt %s --split-input-file --verify-diagnostics

// One case per verifier message of the kernel dialect.

func.func @weight_empty_name() {
  // expected-error@+1 {{expected a non-empty weight name}}
  kernel.weight "" : tensor<4xf32>
  func.return
}

// -----

func.func @weight_dynamic() {
  // expected-error@+1 {{weight 'w' must be a static f32 tensor with sizes >= 1, got tensor<?x4xf32>}}
  kernel.weight "w" : tensor<?x4xf32>
  func.return
}

// -----

func.func @weight_dtype() {
  // expected-error@+1 {{weight 'w' must be a static f32 tensor with sizes >= 1, got tensor<4xi32>}}
  kernel.weight "w" : tensor<4xi32>
  func.return
}

// -----

func.func @weight_twice() {
  kernel.weight "w" : tensor<4xf32>
  // expected-error@+1 {{weight 'w' is already declared}}
  kernel.weight "w" : tensor<4xf32>
  func.return
}

// -----

func.func @weight_not_a_tensor() {
  // expected-error@+1 {{expected a tensor type, got i32}}
  kernel.weight "w" : i32
  func.return
}

// -----

func.func @unknown_family(%x: tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32> {
  // expected-error@+1 {{unknown kernel family 'no_such_family' (known: }}
  %y = kernel.launch "no_such_family" (%x) {OP = "silu", BLOCK = 1024} args [x = in0, y = in0, out = out0, numel = "B * 64", size1 = "1", size2 = "B", size3 = "4", size4 = "4", size5 = "4", x_stride0 = "B * 64", x_stride1 = "B * 64", x_stride2 = "64", x_stride3 = "16", x_stride4 = "4", x_stride5 = "1", y_stride0 = "B * 64", y_stride1 = "B * 64", y_stride2 = "64", y_stride3 = "16", y_stride4 = "4", y_stride5 = "1"] grid ["cdiv(B * 64, 1024)", "1", "1"] warps 4 stages 1 : (tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32>
  func.return %y : tensor<?x4x4x4xf32>
}

// -----

func.func @operand_dtype(%x: tensor<?x4x4x4xf16>) -> tensor<?x4x4x4xf32> {
  // expected-error@+1 {{operand #0 must be an f32 tensor with sizes >= 1 whose only dynamic dimension is the batch (0), contiguous or with a #kernel.batch_stride covering an image, got tensor<?x4x4x4xf16>}}
  %y = kernel.launch "elementwise" (%x) {OP = "silu", BLOCK = 1024} args [x = in0, y = in0, out = out0, numel = "B * 64", size1 = "1", size2 = "B", size3 = "4", size4 = "4", size5 = "4", x_stride0 = "B * 64", x_stride1 = "B * 64", x_stride2 = "64", x_stride3 = "16", x_stride4 = "4", x_stride5 = "1", y_stride0 = "B * 64", y_stride1 = "B * 64", y_stride2 = "64", y_stride3 = "16", y_stride4 = "4", y_stride5 = "1"] grid ["cdiv(B * 64, 1024)", "1", "1"] warps 4 stages 1 : (tensor<?x4x4x4xf16>) -> tensor<?x4x4x4xf32>
  func.return %y : tensor<?x4x4x4xf32>
}

// -----

func.func @result_dynamic_channel(%x: tensor<?x4x4x4xf32>) -> tensor<?x?x4x4xf32> {
  // expected-error@+1 {{result #0 must be an f32 tensor with sizes >= 1 whose only dynamic dimension is the batch (0), contiguous or with a #kernel.batch_stride covering an image, got tensor<?x?x4x4xf32>}}
  %y = kernel.launch "elementwise" (%x) {OP = "silu", BLOCK = 1024} args [x = in0, y = in0, out = out0, numel = "B * 64", size1 = "1", size2 = "B", size3 = "4", size4 = "4", size5 = "4", x_stride0 = "B * 64", x_stride1 = "B * 64", x_stride2 = "64", x_stride3 = "16", x_stride4 = "4", x_stride5 = "1", y_stride0 = "B * 64", y_stride1 = "B * 64", y_stride2 = "64", y_stride3 = "16", y_stride4 = "4", y_stride5 = "1"] grid ["cdiv(B * 64, 1024)", "1", "1"] warps 4 stages 1 : (tensor<?x4x4x4xf32>) -> tensor<?x?x4x4xf32>
  func.return %y : tensor<?x?x4x4xf32>
}

// -----

func.func @constexpr_unknown(%x: tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32> {
  // expected-error@+1 {{family 'elementwise' has no constexpr 'BLOCK_M' (its constexprs: OP, BLOCK)}}
  %y = kernel.launch "elementwise" (%x) {OP = "silu", BLOCK = 1024, BLOCK_M = 64} args [x = in0, y = in0, out = out0, numel = "B * 64", size1 = "1", size2 = "B", size3 = "4", size4 = "4", size5 = "4", x_stride0 = "B * 64", x_stride1 = "B * 64", x_stride2 = "64", x_stride3 = "16", x_stride4 = "4", x_stride5 = "1", y_stride0 = "B * 64", y_stride1 = "B * 64", y_stride2 = "64", y_stride3 = "16", y_stride4 = "4", y_stride5 = "1"] grid ["cdiv(B * 64, 1024)", "1", "1"] warps 4 stages 1 : (tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32>
  func.return %y : tensor<?x4x4x4xf32>
}

// -----

func.func @constexpr_missing(%x: tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32> {
  // expected-error@+1 {{missing constexpr 'BLOCK' of family 'elementwise'}}
  %y = kernel.launch "elementwise" (%x) {OP = "silu"} args [x = in0, y = in0, out = out0, numel = "B * 64", size1 = "1", size2 = "B", size3 = "4", size4 = "4", size5 = "4", x_stride0 = "B * 64", x_stride1 = "B * 64", x_stride2 = "64", x_stride3 = "16", x_stride4 = "4", x_stride5 = "1", y_stride0 = "B * 64", y_stride1 = "B * 64", y_stride2 = "64", y_stride3 = "16", y_stride4 = "4", y_stride5 = "1"] grid ["cdiv(B * 64, 1024)", "1", "1"] warps 4 stages 1 : (tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32>
  func.return %y : tensor<?x4x4x4xf32>
}

// -----

func.func @constexpr_type(%x: tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32> {
  // expected-error@+1 {{constexpr 'BLOCK' must be an i64 integer, got 1024 : i32}}
  %y = kernel.launch "elementwise" (%x) {OP = "silu", BLOCK = 1024 : i32} args [x = in0, y = in0, out = out0, numel = "B * 64", size1 = "1", size2 = "B", size3 = "4", size4 = "4", size5 = "4", x_stride0 = "B * 64", x_stride1 = "B * 64", x_stride2 = "64", x_stride3 = "16", x_stride4 = "4", x_stride5 = "1", y_stride0 = "B * 64", y_stride1 = "B * 64", y_stride2 = "64", y_stride3 = "16", y_stride4 = "4", y_stride5 = "1"] grid ["cdiv(B * 64, 1024)", "1", "1"] warps 4 stages 1 : (tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32>
  func.return %y : tensor<?x4x4x4xf32>
}

// -----

func.func @constexpr_choice(%x: tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32> {
  // expected-error@+1 {{constexpr 'OP': 'no_such_op' is not an entry of the pointwise table}}
  %y = kernel.launch "elementwise" (%x) {OP = "no_such_op", BLOCK = 1024} args [x = in0, y = in0, out = out0, numel = "B * 64", size1 = "1", size2 = "B", size3 = "4", size4 = "4", size5 = "4", x_stride0 = "B * 64", x_stride1 = "B * 64", x_stride2 = "64", x_stride3 = "16", x_stride4 = "4", x_stride5 = "1", y_stride0 = "B * 64", y_stride1 = "B * 64", y_stride2 = "64", y_stride3 = "16", y_stride4 = "4", y_stride5 = "1"] grid ["cdiv(B * 64, 1024)", "1", "1"] warps 4 stages 1 : (tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32>
  func.return %y : tensor<?x4x4x4xf32>
}

// -----

func.func @constexpr_power_of_two(%x: tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32> {
  // expected-error@+1 {{constexpr 'BLOCK' = 1000 must be a power of two}}
  %y = kernel.launch "elementwise" (%x) {OP = "silu", BLOCK = 1000} args [x = in0, y = in0, out = out0, numel = "B * 64", size1 = "1", size2 = "B", size3 = "4", size4 = "4", size5 = "4", x_stride0 = "B * 64", x_stride1 = "B * 64", x_stride2 = "64", x_stride3 = "16", x_stride4 = "4", x_stride5 = "1", y_stride0 = "B * 64", y_stride1 = "B * 64", y_stride2 = "64", y_stride3 = "16", y_stride4 = "4", y_stride5 = "1"] grid ["cdiv(B * 64, 1024)", "1", "1"] warps 4 stages 1 : (tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32>
  func.return %y : tensor<?x4x4x4xf32>
}

// -----

func.func @constexpr_minimum(%x: tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32> {
  kernel.weight "w" : tensor<16x8x1x1xf32>
  kernel.weight "b" : tensor<16xf32>
  // expected-error@+1 {{constexpr 'BLOCK_K' = 4 is below its minimum 8}}
  %y = kernel.launch "conv1x1_gemm" (%x) {BLOCK_M = 64, BLOCK_N = 64, BLOCK_K = 4, GROUP_M = 8, ACTIVATION = "none"} params [w : tensor<16x8xf32> = #derive.param<reshape("w") : [16, 8]>, scale : tensor<16xf32> = #derive.param<fill(1.0) : [16]>, shift : tensor<16xf32> = #derive.param<identity("b") : [16]>] args [x = in0, w = param.w, scale = param.scale, shift = param.shift, r = in0, y = out0, B = "B", C_IN = "8", C_OUT = "16", M = "16", x_batch_stride = "128", r_batch_stride = "128", y_batch_stride = "256", HAS_RESIDUAL = "0"] grid ["B * cdiv(16, 64) * cdiv(16, 64)", "1", "1"] warps 4 stages 2 : (tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32>
  func.return %y : tensor<?x16x4x4xf32>
}

// -----

func.func @slot_name(%x: tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32> {
  kernel.weight "w" : tensor<16x8x1x1xf32>
  kernel.weight "b" : tensor<16xf32>
  // expected-error@+1 {{parameter slot name 'a.b' is not an identifier}}
  %y = kernel.launch "conv1x1_gemm" (%x) {BLOCK_M = 64, BLOCK_N = 64, BLOCK_K = 16, GROUP_M = 8, ACTIVATION = "none"} params ["a.b" : tensor<16x8xf32> = #derive.param<reshape("w") : [16, 8]>, scale : tensor<16xf32> = #derive.param<fill(1.0) : [16]>, shift : tensor<16xf32> = #derive.param<identity("b") : [16]>] args [x = in0, w = param.w, scale = param.scale, shift = param.shift, r = in0, y = out0, B = "B", C_IN = "8", C_OUT = "16", M = "16", x_batch_stride = "128", r_batch_stride = "128", y_batch_stride = "256", HAS_RESIDUAL = "0"] grid ["B * cdiv(16, 64) * cdiv(16, 64)", "1", "1"] warps 4 stages 2 : (tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32>
  func.return %y : tensor<?x16x4x4xf32>
}

// -----

func.func @slot_twice(%x: tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32> {
  kernel.weight "w" : tensor<16x8x1x1xf32>
  kernel.weight "b" : tensor<16xf32>
  // expected-error@+1 {{parameter slot 'w' is declared twice}}
  %y = kernel.launch "conv1x1_gemm" (%x) {BLOCK_M = 64, BLOCK_N = 64, BLOCK_K = 16, GROUP_M = 8, ACTIVATION = "none"} params [w : tensor<16x8xf32> = #derive.param<reshape("w") : [16, 8]>, w : tensor<16xf32> = #derive.param<fill(1.0) : [16]>, shift : tensor<16xf32> = #derive.param<identity("b") : [16]>] args [x = in0, w = param.w, scale = param.scale, shift = param.shift, r = in0, y = out0, B = "B", C_IN = "8", C_OUT = "16", M = "16", x_batch_stride = "128", r_batch_stride = "128", y_batch_stride = "256", HAS_RESIDUAL = "0"] grid ["B * cdiv(16, 64) * cdiv(16, 64)", "1", "1"] warps 4 stages 2 : (tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32>
  func.return %y : tensor<?x16x4x4xf32>
}

// -----

func.func @slot_type(%x: tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32> {
  kernel.weight "w" : tensor<16x8x1x1xf32>
  kernel.weight "b" : tensor<16xf32>
  // expected-error@+1 {{parameter slot 'w' must be a static f32 tensor with sizes >= 1, got tensor<?x8xf32>}}
  %y = kernel.launch "conv1x1_gemm" (%x) {BLOCK_M = 64, BLOCK_N = 64, BLOCK_K = 16, GROUP_M = 8, ACTIVATION = "none"} params [w : tensor<?x8xf32> = #derive.param<reshape("w") : [16, 8]>, scale : tensor<16xf32> = #derive.param<fill(1.0) : [16]>, shift : tensor<16xf32> = #derive.param<identity("b") : [16]>] args [x = in0, w = param.w, scale = param.scale, shift = param.shift, r = in0, y = out0, B = "B", C_IN = "8", C_OUT = "16", M = "16", x_batch_stride = "128", r_batch_stride = "128", y_batch_stride = "256", HAS_RESIDUAL = "0"] grid ["B * cdiv(16, 64) * cdiv(16, 64)", "1", "1"] warps 4 stages 2 : (tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32>
  func.return %y : tensor<?x16x4x4xf32>
}

// -----

func.func @slot_shape(%x: tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32> {
  kernel.weight "w" : tensor<16x8x1x1xf32>
  kernel.weight "b" : tensor<16xf32>
  // expected-error@+1 {{parameter slot 'w' has shape [8, 16] but its derivation gives [16, 8]}}
  %y = kernel.launch "conv1x1_gemm" (%x) {BLOCK_M = 64, BLOCK_N = 64, BLOCK_K = 16, GROUP_M = 8, ACTIVATION = "none"} params [w : tensor<8x16xf32> = #derive.param<reshape("w") : [16, 8]>, scale : tensor<16xf32> = #derive.param<fill(1.0) : [16]>, shift : tensor<16xf32> = #derive.param<identity("b") : [16]>] args [x = in0, w = param.w, scale = param.scale, shift = param.shift, r = in0, y = out0, B = "B", C_IN = "8", C_OUT = "16", M = "16", x_batch_stride = "128", r_batch_stride = "128", y_batch_stride = "256", HAS_RESIDUAL = "0"] grid ["B * cdiv(16, 64) * cdiv(16, 64)", "1", "1"] warps 4 stages 2 : (tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32>
  func.return %y : tensor<?x16x4x4xf32>
}

// -----

func.func @args_count(%x: tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32> {
  kernel.weight "w" : tensor<16x8x1x1xf32>
  kernel.weight "b" : tensor<16xf32>
  // expected-error@+1 {{family 'conv1x1_gemm' takes 14 arguments (x, w, scale, shift, r, y, B, C_IN, C_OUT, M, x_batch_stride, r_batch_stride, y_batch_stride, HAS_RESIDUAL), got 13 bindings}}
  %y = kernel.launch "conv1x1_gemm" (%x) {BLOCK_M = 64, BLOCK_N = 64, BLOCK_K = 16, GROUP_M = 8, ACTIVATION = "none"} params [w : tensor<16x8xf32> = #derive.param<reshape("w") : [16, 8]>, scale : tensor<16xf32> = #derive.param<fill(1.0) : [16]>, shift : tensor<16xf32> = #derive.param<identity("b") : [16]>] args [x = in0, w = param.w, scale = param.scale, shift = param.shift, r = in0, y = out0, B = "B", C_IN = "8", C_OUT = "16", M = "16", x_batch_stride = "128", r_batch_stride = "128", HAS_RESIDUAL = "0"] grid ["B * cdiv(16, 64) * cdiv(16, 64)", "1", "1"] warps 4 stages 2 : (tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32>
  func.return %y : tensor<?x16x4x4xf32>
}

// -----

func.func @args_order(%x: tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32> {
  kernel.weight "w" : tensor<16x8x1x1xf32>
  kernel.weight "b" : tensor<16xf32>
  // expected-error@+1 {{argument binding #1 names 'scale', expected 'w' (the family's ABI order: x, w, scale, shift, r, y, B, C_IN, C_OUT, M, x_batch_stride, r_batch_stride, y_batch_stride, HAS_RESIDUAL)}}
  %y = kernel.launch "conv1x1_gemm" (%x) {BLOCK_M = 64, BLOCK_N = 64, BLOCK_K = 16, GROUP_M = 8, ACTIVATION = "none"} params [w : tensor<16x8xf32> = #derive.param<reshape("w") : [16, 8]>, scale : tensor<16xf32> = #derive.param<fill(1.0) : [16]>, shift : tensor<16xf32> = #derive.param<identity("b") : [16]>] args [x = in0, scale = param.scale, w = param.w, shift = param.shift, r = in0, y = out0, B = "B", C_IN = "8", C_OUT = "16", M = "16", x_batch_stride = "128", r_batch_stride = "128", y_batch_stride = "256", HAS_RESIDUAL = "0"] grid ["B * cdiv(16, 64) * cdiv(16, 64)", "1", "1"] warps 4 stages 2 : (tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32>
  func.return %y : tensor<?x16x4x4xf32>
}

// -----

func.func @input_bound_to_param(%x: tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32> {
  kernel.weight "w" : tensor<16x8x1x1xf32>
  kernel.weight "b" : tensor<16xf32>
  // expected-error@+1 {{argument 'x' (kind input) must bind to in<N>, got 'param.w'}}
  %y = kernel.launch "conv1x1_gemm" (%x) {BLOCK_M = 64, BLOCK_N = 64, BLOCK_K = 16, GROUP_M = 8, ACTIVATION = "none"} params [w : tensor<16x8xf32> = #derive.param<reshape("w") : [16, 8]>, scale : tensor<16xf32> = #derive.param<fill(1.0) : [16]>, shift : tensor<16xf32> = #derive.param<identity("b") : [16]>] args [x = param.w, w = param.w, scale = param.scale, shift = param.shift, r = in0, y = out0, B = "B", C_IN = "8", C_OUT = "16", M = "16", x_batch_stride = "128", r_batch_stride = "128", y_batch_stride = "256", HAS_RESIDUAL = "0"] grid ["B * cdiv(16, 64) * cdiv(16, 64)", "1", "1"] warps 4 stages 2 : (tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32>
  func.return %y : tensor<?x16x4x4xf32>
}

// -----

func.func @param_bound_to_input(%x: tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32> {
  kernel.weight "w" : tensor<16x8x1x1xf32>
  kernel.weight "b" : tensor<16xf32>
  // expected-error@+1 {{argument 'w' (kind param) must bind to param.<slot>, got 'in0'}}
  %y = kernel.launch "conv1x1_gemm" (%x) {BLOCK_M = 64, BLOCK_N = 64, BLOCK_K = 16, GROUP_M = 8, ACTIVATION = "none"} params [w : tensor<16x8xf32> = #derive.param<reshape("w") : [16, 8]>, scale : tensor<16xf32> = #derive.param<fill(1.0) : [16]>, shift : tensor<16xf32> = #derive.param<identity("b") : [16]>] args [x = in0, w = in0, scale = param.scale, shift = param.shift, r = in0, y = out0, B = "B", C_IN = "8", C_OUT = "16", M = "16", x_batch_stride = "128", r_batch_stride = "128", y_batch_stride = "256", HAS_RESIDUAL = "0"] grid ["B * cdiv(16, 64) * cdiv(16, 64)", "1", "1"] warps 4 stages 2 : (tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32>
  func.return %y : tensor<?x16x4x4xf32>
}

// -----

func.func @output_bound_to_expression(%x: tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32> {
  kernel.weight "w" : tensor<16x8x1x1xf32>
  kernel.weight "b" : tensor<16xf32>
  // expected-error@+1 {{argument 'y' (kind output) must bind to out<N>, got 'B'}}
  %y = kernel.launch "conv1x1_gemm" (%x) {BLOCK_M = 64, BLOCK_N = 64, BLOCK_K = 16, GROUP_M = 8, ACTIVATION = "none"} params [w : tensor<16x8xf32> = #derive.param<reshape("w") : [16, 8]>, scale : tensor<16xf32> = #derive.param<fill(1.0) : [16]>, shift : tensor<16xf32> = #derive.param<identity("b") : [16]>] args [x = in0, w = param.w, scale = param.scale, shift = param.shift, r = in0, y = "B", B = "B", C_IN = "8", C_OUT = "16", M = "16", x_batch_stride = "128", r_batch_stride = "128", y_batch_stride = "256", HAS_RESIDUAL = "0"] grid ["B * cdiv(16, 64) * cdiv(16, 64)", "1", "1"] warps 4 stages 2 : (tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32>
  func.return %y : tensor<?x16x4x4xf32>
}

// -----

func.func @unknown_slot(%x: tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32> {
  kernel.weight "w" : tensor<16x8x1x1xf32>
  kernel.weight "b" : tensor<16xf32>
  // expected-error@+1 {{argument 'shift' binds to unknown parameter slot 'bias'}}
  %y = kernel.launch "conv1x1_gemm" (%x) {BLOCK_M = 64, BLOCK_N = 64, BLOCK_K = 16, GROUP_M = 8, ACTIVATION = "none"} params [w : tensor<16x8xf32> = #derive.param<reshape("w") : [16, 8]>, scale : tensor<16xf32> = #derive.param<fill(1.0) : [16]>, shift : tensor<16xf32> = #derive.param<identity("b") : [16]>] args [x = in0, w = param.w, scale = param.scale, shift = param.bias, r = in0, y = out0, B = "B", C_IN = "8", C_OUT = "16", M = "16", x_batch_stride = "128", r_batch_stride = "128", y_batch_stride = "256", HAS_RESIDUAL = "0"] grid ["B * cdiv(16, 64) * cdiv(16, 64)", "1", "1"] warps 4 stages 2 : (tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32>
  func.return %y : tensor<?x16x4x4xf32>
}

// -----

func.func @input_out_of_range(%x: tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32> {
  kernel.weight "w" : tensor<16x8x1x1xf32>
  kernel.weight "b" : tensor<16xf32>
  // expected-error@+1 {{argument 'x' binds to in1, but the launch has 1 operand}}
  %y = kernel.launch "conv1x1_gemm" (%x) {BLOCK_M = 64, BLOCK_N = 64, BLOCK_K = 16, GROUP_M = 8, ACTIVATION = "none"} params [w : tensor<16x8xf32> = #derive.param<reshape("w") : [16, 8]>, scale : tensor<16xf32> = #derive.param<fill(1.0) : [16]>, shift : tensor<16xf32> = #derive.param<identity("b") : [16]>] args [x = in1, w = param.w, scale = param.scale, shift = param.shift, r = in0, y = out0, B = "B", C_IN = "8", C_OUT = "16", M = "16", x_batch_stride = "128", r_batch_stride = "128", y_batch_stride = "256", HAS_RESIDUAL = "0"] grid ["B * cdiv(16, 64) * cdiv(16, 64)", "1", "1"] warps 4 stages 2 : (tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32>
  func.return %y : tensor<?x16x4x4xf32>
}

// -----

func.func @output_out_of_range(%x: tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32> {
  kernel.weight "w" : tensor<16x8x1x1xf32>
  kernel.weight "b" : tensor<16xf32>
  // expected-error@+1 {{argument 'y' binds to out1, but the launch has 1 result}}
  %y = kernel.launch "conv1x1_gemm" (%x) {BLOCK_M = 64, BLOCK_N = 64, BLOCK_K = 16, GROUP_M = 8, ACTIVATION = "none"} params [w : tensor<16x8xf32> = #derive.param<reshape("w") : [16, 8]>, scale : tensor<16xf32> = #derive.param<fill(1.0) : [16]>, shift : tensor<16xf32> = #derive.param<identity("b") : [16]>] args [x = in0, w = param.w, scale = param.scale, shift = param.shift, r = in0, y = out1, B = "B", C_IN = "8", C_OUT = "16", M = "16", x_batch_stride = "128", r_batch_stride = "128", y_batch_stride = "256", HAS_RESIDUAL = "0"] grid ["B * cdiv(16, 64) * cdiv(16, 64)", "1", "1"] warps 4 stages 2 : (tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32>
  func.return %y : tensor<?x16x4x4xf32>
}

// -----

func.func @dim_not_expression(%x: tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32> {
  kernel.weight "w" : tensor<16x8x1x1xf32>
  kernel.weight "b" : tensor<16xf32>
  // expected-error@+1 {{argument 'M' = '4 *' is not an expression: expected a number, a symbol or '(', found 'end' in '4 *'}}
  %y = kernel.launch "conv1x1_gemm" (%x) {BLOCK_M = 64, BLOCK_N = 64, BLOCK_K = 16, GROUP_M = 8, ACTIVATION = "none"} params [w : tensor<16x8xf32> = #derive.param<reshape("w") : [16, 8]>, scale : tensor<16xf32> = #derive.param<fill(1.0) : [16]>, shift : tensor<16xf32> = #derive.param<identity("b") : [16]>] args [x = in0, w = param.w, scale = param.scale, shift = param.shift, r = in0, y = out0, B = "B", C_IN = "8", C_OUT = "16", M = "4 *", x_batch_stride = "128", r_batch_stride = "128", y_batch_stride = "256", HAS_RESIDUAL = "0"] grid ["B * cdiv(16, 64) * cdiv(16, 64)", "1", "1"] warps 4 stages 2 : (tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32>
  func.return %y : tensor<?x16x4x4xf32>
}

// -----

func.func @dim_symbol(%x: tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32> {
  kernel.weight "w" : tensor<16x8x1x1xf32>
  kernel.weight "b" : tensor<16xf32>
  // expected-error@+1 {{argument 'M' = 'H * W' uses symbol 'H': only the batch 'B' may appear}}
  %y = kernel.launch "conv1x1_gemm" (%x) {BLOCK_M = 64, BLOCK_N = 64, BLOCK_K = 16, GROUP_M = 8, ACTIVATION = "none"} params [w : tensor<16x8xf32> = #derive.param<reshape("w") : [16, 8]>, scale : tensor<16xf32> = #derive.param<fill(1.0) : [16]>, shift : tensor<16xf32> = #derive.param<identity("b") : [16]>] args [x = in0, w = param.w, scale = param.scale, shift = param.shift, r = in0, y = out0, B = "B", C_IN = "8", C_OUT = "16", M = "H * W", x_batch_stride = "128", r_batch_stride = "128", y_batch_stride = "256", HAS_RESIDUAL = "0"] grid ["B * cdiv(16, 64) * cdiv(16, 64)", "1", "1"] warps 4 stages 2 : (tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32>
  func.return %y : tensor<?x16x4x4xf32>
}

// -----

func.func @operand_unbound(%x: tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32> {
  // expected-error@+1 {{operand #1 is not bound to any input argument}}
  %y = kernel.launch "elementwise" (%x, %x) {OP = "silu", BLOCK = 1024} args [x = in0, y = in0, out = out0, numel = "B * 64", size1 = "1", size2 = "B", size3 = "4", size4 = "4", size5 = "4", x_stride0 = "B * 64", x_stride1 = "B * 64", x_stride2 = "64", x_stride3 = "16", x_stride4 = "4", x_stride5 = "1", y_stride0 = "B * 64", y_stride1 = "B * 64", y_stride2 = "64", y_stride3 = "16", y_stride4 = "4", y_stride5 = "1"] grid ["cdiv(B * 64, 1024)", "1", "1"] warps 4 stages 1 : (tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32>
  func.return %y : tensor<?x4x4x4xf32>
}

// -----

func.func @result_unbound(%x: tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32> {
  // expected-error@+1 {{result #1 is not bound to any output argument}}
  %y, %unused = kernel.launch "elementwise" (%x) {OP = "silu", BLOCK = 1024} args [x = in0, y = in0, out = out0, numel = "B * 64", size1 = "1", size2 = "B", size3 = "4", size4 = "4", size5 = "4", x_stride0 = "B * 64", x_stride1 = "B * 64", x_stride2 = "64", x_stride3 = "16", x_stride4 = "4", x_stride5 = "1", y_stride0 = "B * 64", y_stride1 = "B * 64", y_stride2 = "64", y_stride3 = "16", y_stride4 = "4", y_stride5 = "1"] grid ["cdiv(B * 64, 1024)", "1", "1"] warps 4 stages 1 : (tensor<?x4x4x4xf32>) -> (tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>)
  func.return %y : tensor<?x4x4x4xf32>
}

// -----

func.func @slot_unbound(%x: tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32> {
  kernel.weight "w" : tensor<16x8x1x1xf32>
  kernel.weight "b" : tensor<16xf32>
  // expected-error@+1 {{parameter slot 'bias' is not bound to any argument}}
  %y = kernel.launch "conv1x1_gemm" (%x) {BLOCK_M = 64, BLOCK_N = 64, BLOCK_K = 16, GROUP_M = 8, ACTIVATION = "none"} params [w : tensor<16x8xf32> = #derive.param<reshape("w") : [16, 8]>, scale : tensor<16xf32> = #derive.param<fill(1.0) : [16]>, shift : tensor<16xf32> = #derive.param<identity("b") : [16]>, bias : tensor<16xf32> = #derive.param<identity("b") : [16]>] args [x = in0, w = param.w, scale = param.scale, shift = param.shift, r = in0, y = out0, B = "B", C_IN = "8", C_OUT = "16", M = "16", x_batch_stride = "128", r_batch_stride = "128", y_batch_stride = "256", HAS_RESIDUAL = "0"] grid ["B * cdiv(16, 64) * cdiv(16, 64)", "1", "1"] warps 4 stages 2 : (tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32>
  func.return %y : tensor<?x16x4x4xf32>
}

// -----

func.func @num_warps(%x: tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32> {
  // expected-error@+1 {{num_warps must be a power of two in 1..32, got 3}}
  %y = kernel.launch "elementwise" (%x) {OP = "silu", BLOCK = 1024} args [x = in0, y = in0, out = out0, numel = "B * 64", size1 = "1", size2 = "B", size3 = "4", size4 = "4", size5 = "4", x_stride0 = "B * 64", x_stride1 = "B * 64", x_stride2 = "64", x_stride3 = "16", x_stride4 = "4", x_stride5 = "1", y_stride0 = "B * 64", y_stride1 = "B * 64", y_stride2 = "64", y_stride3 = "16", y_stride4 = "4", y_stride5 = "1"] grid ["cdiv(B * 64, 1024)", "1", "1"] warps 3 stages 1 : (tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32>
  func.return %y : tensor<?x4x4x4xf32>
}

// -----

func.func @num_warps_above_limit(%x: tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32> {
  // expected-error@+1 {{num_warps must be a power of two in 1..32, got 64}}
  %y = kernel.launch "elementwise" (%x) {OP = "silu", BLOCK = 1024} args [x = in0, y = in0, out = out0, numel = "B * 64", size1 = "1", size2 = "B", size3 = "4", size4 = "4", size5 = "4", x_stride0 = "B * 64", x_stride1 = "B * 64", x_stride2 = "64", x_stride3 = "16", x_stride4 = "4", x_stride5 = "1", y_stride0 = "B * 64", y_stride1 = "B * 64", y_stride2 = "64", y_stride3 = "16", y_stride4 = "4", y_stride5 = "1"] grid ["cdiv(B * 64, 1024)", "1", "1"] warps 64 stages 1 : (tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32>
  func.return %y : tensor<?x4x4x4xf32>
}

// -----

func.func @num_stages(%x: tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32> {
  // expected-error@+1 {{num_stages must be >= 1, got 0}}
  %y = kernel.launch "elementwise" (%x) {OP = "silu", BLOCK = 1024} args [x = in0, y = in0, out = out0, numel = "B * 64", size1 = "1", size2 = "B", size3 = "4", size4 = "4", size5 = "4", x_stride0 = "B * 64", x_stride1 = "B * 64", x_stride2 = "64", x_stride3 = "16", x_stride4 = "4", x_stride5 = "1", y_stride0 = "B * 64", y_stride1 = "B * 64", y_stride2 = "64", y_stride3 = "16", y_stride4 = "4", y_stride5 = "1"] grid ["cdiv(B * 64, 1024)", "1", "1"] warps 4 stages 0 : (tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32>
  func.return %y : tensor<?x4x4x4xf32>
}

// -----

func.func @grid_rank(%x: tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32> {
  // expected-error@+1 {{expected 3 grid expressions (x, y, z), got 2}}
  %y = kernel.launch "elementwise" (%x) {OP = "silu", BLOCK = 1024} args [x = in0, y = in0, out = out0, numel = "B * 64", size1 = "1", size2 = "B", size3 = "4", size4 = "4", size5 = "4", x_stride0 = "B * 64", x_stride1 = "B * 64", x_stride2 = "64", x_stride3 = "16", x_stride4 = "4", x_stride5 = "1", y_stride0 = "B * 64", y_stride1 = "B * 64", y_stride2 = "64", y_stride3 = "16", y_stride4 = "4", y_stride5 = "1"] grid ["cdiv(B * 64, 1024)", "1"] warps 4 stages 1 : (tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32>
  func.return %y : tensor<?x4x4x4xf32>
}

// -----

func.func @grid_not_expression(%x: tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32> {
  // expected-error@+1 {{grid[0] = '__import__(os)' is not an expression: call of '__import__' is not allowed (functions: cdiv, floordiv, min, max)}}
  %y = kernel.launch "elementwise" (%x) {OP = "silu", BLOCK = 1024} args [x = in0, y = in0, out = out0, numel = "B * 64", size1 = "1", size2 = "B", size3 = "4", size4 = "4", size5 = "4", x_stride0 = "B * 64", x_stride1 = "B * 64", x_stride2 = "64", x_stride3 = "16", x_stride4 = "4", x_stride5 = "1", y_stride0 = "B * 64", y_stride1 = "B * 64", y_stride2 = "64", y_stride3 = "16", y_stride4 = "4", y_stride5 = "1"] grid ["__import__(os)", "1", "1"] warps 4 stages 1 : (tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32>
  func.return %y : tensor<?x4x4x4xf32>
}

// -----

func.func @grid_symbol(%x: tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32> {
  // expected-error@+1 {{grid[1] = 'numel' uses symbol 'numel': only the batch 'B' may appear}}
  %y = kernel.launch "elementwise" (%x) {OP = "silu", BLOCK = 1024} args [x = in0, y = in0, out = out0, numel = "B * 64", size1 = "1", size2 = "B", size3 = "4", size4 = "4", size5 = "4", x_stride0 = "B * 64", x_stride1 = "B * 64", x_stride2 = "64", x_stride3 = "16", x_stride4 = "4", x_stride5 = "1", y_stride0 = "B * 64", y_stride1 = "B * 64", y_stride2 = "64", y_stride3 = "16", y_stride4 = "4", y_stride5 = "1"] grid ["cdiv(B * 64, 1024)", "numel", "1"] warps 4 stages 1 : (tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32>
  func.return %y : tensor<?x4x4x4xf32>
}

// -----

func.func @dim_evaluation(%x: tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32> {
  // expected-error@+1 {{argument 'size3' = 'cdiv(B, 0)' cannot be evaluated at B = 1: division by zero in cdiv}}
  %y = kernel.launch "elementwise" (%x) {OP = "silu", BLOCK = 1024} args [x = in0, y = in0, out = out0, numel = "B * 64", size1 = "1", size2 = "B", size3 = "cdiv(B, 0)", size4 = "4", size5 = "4", x_stride0 = "B * 64", x_stride1 = "B * 64", x_stride2 = "64", x_stride3 = "16", x_stride4 = "4", x_stride5 = "1", y_stride0 = "B * 64", y_stride1 = "B * 64", y_stride2 = "64", y_stride3 = "16", y_stride4 = "4", y_stride5 = "1"] grid ["cdiv(B * 64, 1024)", "1", "1"] warps 4 stages 1 : (tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32>
  func.return %y : tensor<?x4x4x4xf32>
}

// -----

func.func @grid_evaluation(%x: tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32> {
  // expected-error@+1 {{grid[2] = 'floordiv(1, B - 1)' cannot be evaluated at B = 1: division by zero in floordiv}}
  %y = kernel.launch "elementwise" (%x) {OP = "silu", BLOCK = 1024} args [x = in0, y = in0, out = out0, numel = "B * 64", size1 = "1", size2 = "B", size3 = "4", size4 = "4", size5 = "4", x_stride0 = "B * 64", x_stride1 = "B * 64", x_stride2 = "64", x_stride3 = "16", x_stride4 = "4", x_stride5 = "1", y_stride0 = "B * 64", y_stride1 = "B * 64", y_stride2 = "64", y_stride3 = "16", y_stride4 = "4", y_stride5 = "1"] grid ["cdiv(B * 64, 1024)", "1", "floordiv(1, B - 1)"] warps 4 stages 1 : (tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32>
  func.return %y : tensor<?x4x4x4xf32>
}

// -----

func.func @dim_negative(%x: tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32> {
  // expected-error@+1 {{argument 'x_stride3' = '16 - B' is 15 at B = 1, but the bound tensors (x [1, 4, 4, 4], y [1, 4, 4, 4], out [1, 4, 4, 4]) imply 16}}
  %y = kernel.launch "elementwise" (%x) {OP = "silu", BLOCK = 1024} args [x = in0, y = in0, out = out0, numel = "B * 64", size1 = "1", size2 = "B", size3 = "4", size4 = "4", size5 = "4", x_stride0 = "B * 64", x_stride1 = "B * 64", x_stride2 = "64", x_stride3 = "16 - B", x_stride4 = "4", x_stride5 = "1", y_stride0 = "B * 64", y_stride1 = "B * 64", y_stride2 = "64", y_stride3 = "16", y_stride4 = "4", y_stride5 = "1"] grid ["cdiv(B * 64, 1024)", "1", "1"] warps 4 stages 1 : (tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32>
  func.return %y : tensor<?x4x4x4xf32>
}

// -----

func.func @dim_overflow(%x: tensor<?x1000x200x200xf32>) -> tensor<?x1000x200x200xf32> {
  // expected-error@+1 {{argument 'numel' = 'B * 40000000' is 2160000000 at B = 54, outside [0, 2147483647] (i32 sizes and strides)}}
  %y = kernel.launch "elementwise" (%x) {OP = "silu", BLOCK = 1024} args [x = in0, y = in0, out = out0, numel = "B * 40000000", size1 = "1", size2 = "B", size3 = "1000", size4 = "200", size5 = "200", x_stride0 = "B * 40000000", x_stride1 = "B * 40000000", x_stride2 = "40000000", x_stride3 = "40000", x_stride4 = "200", x_stride5 = "1", y_stride0 = "B * 40000000", y_stride1 = "B * 40000000", y_stride2 = "40000000", y_stride3 = "40000", y_stride4 = "200", y_stride5 = "1"] grid ["cdiv(B * 40000000, 1024)", "1", "1"] warps 4 stages 1 : (tensor<?x1000x200x200xf32>) -> tensor<?x1000x200x200xf32>
  func.return %y : tensor<?x1000x200x200xf32>
}

// -----

func.func @grid_zero(%x: tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32> {
  // expected-error@+1 {{grid[1] = 'B - 1' is 0 at B = 1: each grid dimension must be >= 1}}
  %y = kernel.launch "elementwise" (%x) {OP = "silu", BLOCK = 1024} args [x = in0, y = in0, out = out0, numel = "B * 64", size1 = "1", size2 = "B", size3 = "4", size4 = "4", size5 = "4", x_stride0 = "B * 64", x_stride1 = "B * 64", x_stride2 = "64", x_stride3 = "16", x_stride4 = "4", x_stride5 = "1", y_stride0 = "B * 64", y_stride1 = "B * 64", y_stride2 = "64", y_stride3 = "16", y_stride4 = "4", y_stride5 = "1"] grid ["cdiv(B * 64, 1024)", "B - 1", "1"] warps 4 stages 1 : (tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32>
  func.return %y : tensor<?x4x4x4xf32>
}

// -----

func.func @grid_above_limit(%x: tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32> {
  // expected-error@+1 {{grid[2] = 'B * 1024' is 65536 at B = 64, above the hardware limit 65535}}
  %y = kernel.launch "elementwise" (%x) {OP = "silu", BLOCK = 1024} args [x = in0, y = in0, out = out0, numel = "B * 64", size1 = "1", size2 = "B", size3 = "4", size4 = "4", size5 = "4", x_stride0 = "B * 64", x_stride1 = "B * 64", x_stride2 = "64", x_stride3 = "16", x_stride4 = "4", x_stride5 = "1", y_stride0 = "B * 64", y_stride1 = "B * 64", y_stride2 = "64", y_stride3 = "16", y_stride4 = "4", y_stride5 = "1"] grid ["cdiv(B * 64, 1024)", "1", "B * 1024"] warps 4 stages 1 : (tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32>
  func.return %y : tensor<?x4x4x4xf32>
}

// -----

func.func @grid_one_short(%x: tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32> {
  // expected-error@+1 {{grid[0] = 'cdiv(B * 64, 1024) - floordiv(B, 64)' is 3 at B = 64, but the tile model of 'elementwise' needs cdiv(numel, BLOCK) = 4}}
  %y = kernel.launch "elementwise" (%x) {OP = "silu", BLOCK = 1024} args [x = in0, y = in0, out = out0, numel = "B * 64", size1 = "1", size2 = "B", size3 = "4", size4 = "4", size5 = "4", x_stride0 = "B * 64", x_stride1 = "B * 64", x_stride2 = "64", x_stride3 = "16", x_stride4 = "4", x_stride5 = "1", y_stride0 = "B * 64", y_stride1 = "B * 64", y_stride2 = "64", y_stride3 = "16", y_stride4 = "4", y_stride5 = "1"] grid ["cdiv(B * 64, 1024) - floordiv(B, 64)", "1", "1"] warps 4 stages 1 : (tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32>
  func.return %y : tensor<?x4x4x4xf32>
}

// -----

func.func @gemm_grid_short(%x: tensor<?x8x5x13xf32>) -> tensor<?x16x5x13xf32> {
  kernel.weight "w" : tensor<16x8x1x1xf32>
  kernel.weight "b" : tensor<16xf32>
  // expected-error@+1 {{grid[0] = 'B' is 1 at B = 1, but the tile model of 'conv1x1_gemm' needs cdiv(B, 1) * cdiv(M, BLOCK_M) * cdiv(C_OUT, BLOCK_N) = 2}}
  %y = kernel.launch "conv1x1_gemm" (%x) {BLOCK_M = 64, BLOCK_N = 64, BLOCK_K = 16, GROUP_M = 8, ACTIVATION = "none"} params [w : tensor<16x8xf32> = #derive.param<reshape("w") : [16, 8]>, scale : tensor<16xf32> = #derive.param<fill(1.0) : [16]>, shift : tensor<16xf32> = #derive.param<identity("b") : [16]>] args [x = in0, w = param.w, scale = param.scale, shift = param.shift, r = in0, y = out0, B = "B", C_IN = "8", C_OUT = "16", M = "65", x_batch_stride = "520", r_batch_stride = "520", y_batch_stride = "1040", HAS_RESIDUAL = "0"] grid ["B", "1", "1"] warps 4 stages 2 : (tensor<?x8x5x13xf32>) -> tensor<?x16x5x13xf32>
  func.return %y : tensor<?x16x5x13xf32>
}

// -----

func.func @weight_undeclared(%x: tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32> {
  kernel.weight "w" : tensor<16x8x1x1xf32>
  // expected-error@+1 {{parameter slot 'shift' reads weight 'b', which no kernel.weight of the enclosing function declares}}
  %y = kernel.launch "conv1x1_gemm" (%x) {BLOCK_M = 64, BLOCK_N = 64, BLOCK_K = 16, GROUP_M = 8, ACTIVATION = "none"} params [w : tensor<16x8xf32> = #derive.param<reshape("w") : [16, 8]>, scale : tensor<16xf32> = #derive.param<fill(1.0) : [16]>, shift : tensor<16xf32> = #derive.param<identity("b") : [16]>] args [x = in0, w = param.w, scale = param.scale, shift = param.shift, r = in0, y = out0, B = "B", C_IN = "8", C_OUT = "16", M = "16", x_batch_stride = "128", r_batch_stride = "128", y_batch_stride = "256", HAS_RESIDUAL = "0"] grid ["B * cdiv(16, 64) * cdiv(16, 64)", "1", "1"] warps 4 stages 2 : (tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32>
  func.return %y : tensor<?x16x4x4xf32>
}

// -----

func.func @weight_shape(%x: tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32> {
  kernel.weight "w" : tensor<16x4x1x1xf32>
  kernel.weight "b" : tensor<16xf32>
  // expected-error@+1 {{parameter slot 'w': weight 'w' has shape [16, 4, 1, 1], expected 128 elements as [16, 8]}}
  %y = kernel.launch "conv1x1_gemm" (%x) {BLOCK_M = 64, BLOCK_N = 64, BLOCK_K = 16, GROUP_M = 8, ACTIVATION = "none"} params [w : tensor<16x8xf32> = #derive.param<reshape("w") : [16, 8]>, scale : tensor<16xf32> = #derive.param<fill(1.0) : [16]>, shift : tensor<16xf32> = #derive.param<identity("b") : [16]>] args [x = in0, w = param.w, scale = param.scale, shift = param.shift, r = in0, y = out0, B = "B", C_IN = "8", C_OUT = "16", M = "16", x_batch_stride = "128", r_batch_stride = "128", y_batch_stride = "256", HAS_RESIDUAL = "0"] grid ["B * cdiv(16, 64) * cdiv(16, 64)", "1", "1"] warps 4 stages 2 : (tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32>
  func.return %y : tensor<?x16x4x4xf32>
}

// -----

func.func @weight_identity_shape(%x: tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32> {
  kernel.weight "w" : tensor<16x8x1x1xf32>
  kernel.weight "b" : tensor<4x4xf32>
  // expected-error@+1 {{parameter slot 'shift': weight 'b' has shape [4, 4], expected 16 elements as [16]}}
  %y = kernel.launch "conv1x1_gemm" (%x) {BLOCK_M = 64, BLOCK_N = 64, BLOCK_K = 16, GROUP_M = 8, ACTIVATION = "none"} params [w : tensor<16x8xf32> = #derive.param<reshape("w") : [16, 8]>, scale : tensor<16xf32> = #derive.param<fill(1.0) : [16]>, shift : tensor<16xf32> = #derive.param<identity("b") : [16]>] args [x = in0, w = param.w, scale = param.scale, shift = param.shift, r = in0, y = out0, B = "B", C_IN = "8", C_OUT = "16", M = "16", x_batch_stride = "128", r_batch_stride = "128", y_batch_stride = "256", HAS_RESIDUAL = "0"] grid ["B * cdiv(16, 64) * cdiv(16, 64)", "1", "1"] warps 4 stages 2 : (tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32>
  func.return %y : tensor<?x16x4x4xf32>
}

// -----

func.func @slot_not_a_derivation(%x: tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32> {
  kernel.weight "w" : tensor<16x8x1x1xf32>
  kernel.weight "b" : tensor<16xf32>
  // expected-error@+1 {{expected a #derive.param<...> after '='}}
  %y = kernel.launch "conv1x1_gemm" (%x) {BLOCK_M = 64, BLOCK_N = 64, BLOCK_K = 16, GROUP_M = 8, ACTIVATION = "none"} params [w : tensor<16x8xf32> = #derive.param<reshape("w") : [16, 8]>, scale : tensor<16xf32> = 1.0, shift : tensor<16xf32> = #derive.param<identity("b") : [16]>] args [x = in0, w = param.w, scale = param.scale, shift = param.shift, r = in0, y = out0, B = "B", C_IN = "8", C_OUT = "16", M = "16", x_batch_stride = "128", r_batch_stride = "128", y_batch_stride = "256", HAS_RESIDUAL = "0"] grid ["B * cdiv(16, 64) * cdiv(16, 64)", "1", "1"] warps 4 stages 2 : (tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32>
  func.return %y : tensor<?x16x4x4xf32>
}

// -----

func.func @weight_name_not_utf8() {
  // expected-error@+1 {{the weight name is not valid UTF-8}}
  kernel.weight "\FF" : tensor<4xf32>
  func.return
}

// -----

func.func @warps_too_large(%x: tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32> {
  // expected-error@+1 {{warps 9223372036854775808 does not fit in i64}}
  %y = kernel.launch "elementwise" (%x) {OP = "silu", BLOCK = 1024} args [x = in0, y = in0, out = out0, numel = "B * 64", size1 = "1", size2 = "B", size3 = "4", size4 = "4", size5 = "4", x_stride0 = "B * 64", x_stride1 = "B * 64", x_stride2 = "64", x_stride3 = "16", x_stride4 = "4", x_stride5 = "1", y_stride0 = "B * 64", y_stride1 = "B * 64", y_stride2 = "64", y_stride3 = "16", y_stride4 = "4", y_stride5 = "1"] grid ["cdiv(B * 64, 1024)", "1", "1"] warps 9223372036854775808 stages 1 : (tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32>
  func.return %y : tensor<?x4x4x4xf32>
}
