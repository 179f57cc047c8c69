// RUN: teeny-opt %s --split-input-file --verify-diagnostics

func.func @param_empty_name() {
  // expected-error@+1 {{expected a non-empty parameter name}}
  %w = graph.param "" : tensor<4xf32>
  func.return
}

// -----

func.func @param_dynamic() {
  // expected-error@+1 {{expected parameter to be fully static, got shape [?, 4]}}
  %w = graph.param "w" : tensor<?x4xf32>
  func.return
}

// -----

func.func @param_dtype() {
  // expected-error@+1 {{unsupported dtype i32 for parameter: graph ops take f32 tensors}}
  %w = graph.param "w" : tensor<4xi32>
  func.return
}

// -----

func.func @param_encoding() {
  // expected-error@+1 {{expected parameter to have no tensor encoding}}
  %w = graph.param "w" : tensor<4xf32, "layout">
  func.return
}

// -----

func.func @param_zero_size() {
  // expected-error@+1 {{parameter has dimension 0 of size 0: sizes must be >= 1}}
  %w = graph.param "w" : tensor<0x4xf32>
  func.return
}

// -----

func.func @conv2d_dynamic_spatial(%x: tensor<?x3x?x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error@+1 {{input has a dynamic dimension 2: only the batch dimension (0) may be dynamic}}
  %y = graph.conv2d %x, %w : (tensor<?x3x?x8xf32>, tensor<16x3x3x3xf32>) -> tensor<?x16x6x6xf32>
  func.return
}

// -----

func.func @conv2d_input_dtype(%x: tensor<?x3x8x8xf16>, %w: tensor<16x3x3x3xf32>) {
  // expected-error@+1 {{unsupported dtype f16 for input: graph ops take f32 tensors}}
  %y = graph.conv2d %x, %w : (tensor<?x3x8x8xf16>, tensor<16x3x3x3xf32>) -> tensor<?x16x6x6xf32>
  func.return
}

// -----

func.func @conv2d_input_rank(%x: tensor<?x3x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error@+1 {{expected input of rank 4 [N, C_in, H, W], got rank 3}}
  %y = graph.conv2d %x, %w : (tensor<?x3x8xf32>, tensor<16x3x3x3xf32>) -> tensor<?x16x6x6xf32>
  func.return
}

// -----

func.func @conv2d_weight_rank(%x: tensor<?x3x8x8xf32>, %w: tensor<16x3xf32>) {
  // expected-error@+1 {{expected weight of rank 4 [C_out, C_in / groups, KH, KW], got rank 2}}
  %y = graph.conv2d %x, %w : (tensor<?x3x8x8xf32>, tensor<16x3xf32>) -> tensor<?x16x6x6xf32>
  func.return
}

// -----

func.func @conv2d_weight_dynamic(%x: tensor<?x3x8x8xf32>, %w: tensor<?x3x3x3xf32>) {
  // expected-error@+1 {{expected weight to be fully static, got shape [?, 3, 3, 3]}}
  %y = graph.conv2d %x, %w : (tensor<?x3x8x8xf32>, tensor<?x3x3x3xf32>) -> tensor<?x16x6x6xf32>
  func.return
}

// -----

func.func @conv2d_strides_count(%x: tensor<?x3x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error@+1 {{expected 2 values for strides, got 3}}
  %y = "graph.conv2d"(%x, %w) <{strides = array<i64: 1, 1, 1>}> : (tensor<?x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<?x16x6x6xf32>
  func.return
}

// -----

func.func @conv2d_padding_count(%x: tensor<?x3x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error@+1 {{expected 4 values for padding [top, left, bottom, right], got 2}}
  %y = "graph.conv2d"(%x, %w) <{padding = array<i64: 1, 1>}> : (tensor<?x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<?x16x6x6xf32>
  func.return
}

// -----

func.func @conv2d_dilation_count(%x: tensor<?x3x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error@+1 {{expected 2 values for dilation, got 1}}
  %y = "graph.conv2d"(%x, %w) <{dilation = array<i64: 1>}> : (tensor<?x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<?x16x6x6xf32>
  func.return
}

// -----

func.func @conv2d_zero_stride(%x: tensor<?x3x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error@+1 {{expected strides >= 1, got [0, 1]}}
  %y = graph.conv2d %x, %w strides [0, 1] : (tensor<?x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<?x16x6x6xf32>
  func.return
}

// -----

func.func @conv2d_zero_dilation(%x: tensor<?x3x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error@+1 {{expected dilation >= 1, got [1, 0]}}
  %y = graph.conv2d %x, %w dilation [1, 0] : (tensor<?x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<?x16x6x6xf32>
  func.return
}

// -----

func.func @conv2d_negative_padding(%x: tensor<?x3x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error@+1 {{expected padding >= 0, got [-1, 0, 0, 0]}}
  %y = graph.conv2d %x, %w padding [-1, 0, 0, 0] : (tensor<?x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<?x16x6x6xf32>
  func.return
}

// -----

func.func @conv2d_zero_groups(%x: tensor<?x3x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error@+1 {{expected groups >= 1, got 0}}
  %y = graph.conv2d %x, %w groups 0 : (tensor<?x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<?x16x6x6xf32>
  func.return
}

// -----

func.func @conv2d_in_channels_groups(%x: tensor<?x3x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error@+1 {{expected C_in = 3 to be divisible by groups = 2}}
  %y = graph.conv2d %x, %w groups 2 : (tensor<?x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<?x16x6x6xf32>
  func.return
}

// -----

func.func @conv2d_out_channels_groups(%x: tensor<?x4x8x8xf32>, %w: tensor<3x2x1x1xf32>) {
  // expected-error@+1 {{expected C_out = 3 to be divisible by groups = 2}}
  %y = graph.conv2d %x, %w groups 2 : (tensor<?x4x8x8xf32>, tensor<3x2x1x1xf32>) -> tensor<?x3x8x8xf32>
  func.return
}

// -----

func.func @conv2d_weight_channels(%x: tensor<?x3x8x8xf32>, %w: tensor<16x4x3x3xf32>) {
  // expected-error@+1 {{expected weight dim 1 to be C_in / groups = 3, got 4}}
  %y = graph.conv2d %x, %w : (tensor<?x3x8x8xf32>, tensor<16x4x3x3xf32>) -> tensor<?x16x6x6xf32>
  func.return
}

// -----

func.func @conv2d_kernel_too_high(%x: tensor<?x3x4x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error@+1 {{dilated kernel height 5 exceeds padded input height 4}}
  %y = graph.conv2d %x, %w dilation [2, 1] : (tensor<?x3x4x8xf32>, tensor<16x3x3x3xf32>) -> tensor<?x16x1x6xf32>
  func.return
}

// -----

func.func @conv2d_kernel_too_wide(%x: tensor<?x3x8x2xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error@+1 {{dilated kernel width 3 exceeds padded input width 2}}
  %y = graph.conv2d %x, %w : (tensor<?x3x8x2xf32>, tensor<16x3x3x3xf32>) -> tensor<?x16x6x1xf32>
  func.return
}

// -----

func.func @conv2d_bias_shape(%x: tensor<?x3x8x8xf32>, %w: tensor<16x3x3x3xf32>, %b: tensor<8xf32>) {
  // expected-error@+1 {{expected bias shape [16], got [8]}}
  %y = graph.conv2d %x, %w, %b : (tensor<?x3x8x8xf32>, tensor<16x3x3x3xf32>, tensor<8xf32>) -> tensor<?x16x6x6xf32>
  func.return
}

// -----

func.func @conv2d_result_shape(%x: tensor<?x3x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error@+1 {{expected result type tensor<?x16x6x6xf32>, got tensor<?x16x8x8xf32>}}
  %y = graph.conv2d %x, %w : (tensor<?x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<?x16x8x8xf32>
  func.return
}

// -----

func.func @conv2d_result_dtype(%x: tensor<?x3x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error@+1 {{unsupported dtype f16 for result: graph ops take f32 tensors}}
  %y = graph.conv2d %x, %w : (tensor<?x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<?x16x6x6xf16>
  func.return
}

// -----

func.func @batch_norm_input_rank(%x: tensor<?xf32>, %p: tensor<16xf32>, %v: tensor<16xf32>) {
  // expected-error@+1 {{expected input of rank >= 2 [N, C, ...], got rank 1}}
  %y = graph.batch_norm %x, %p, %p, %p, %v : (tensor<?xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?xf32>
  func.return
}

// -----

func.func @batch_norm_gamma_shape(%x: tensor<?x16x8x8xf32>, %p: tensor<8xf32>, %v: tensor<8xf32>) {
  // expected-error@+1 {{expected gamma shape [16], got [8]}}
  %y = graph.batch_norm %x, %p, %p, %p, %v : (tensor<?x16x8x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x16x8x8xf32>
  func.return
}

// -----

func.func @batch_norm_running_var_dtype(%x: tensor<?x16x8x8xf32>, %p: tensor<16xf32>, %v: tensor<16xf64>) {
  // expected-error@+1 {{unsupported dtype f64 for running_var: graph ops take f32 tensors}}
  %y = graph.batch_norm %x, %p, %p, %p, %v : (tensor<?x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf64>) -> tensor<?x16x8x8xf32>
  func.return
}

// -----

func.func @batch_norm_zero_eps(%x: tensor<?x16x8x8xf32>, %p: tensor<16xf32>, %v: tensor<16xf32>) {
  // expected-error@+1 {{expected eps to be finite and > 0, got 0.0}}
  %y = graph.batch_norm %x, %p, %p, %p, %v eps 0.0 : (tensor<?x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x16x8x8xf32>
  func.return
}

// -----

func.func @batch_norm_momentum_range(%x: tensor<?x16x8x8xf32>, %p: tensor<16xf32>, %v: tensor<16xf32>) {
  // expected-error@+1 {{expected momentum in [0, 1], got 1.5}}
  %y = graph.batch_norm %x, %p, %p, %p, %v momentum 1.5 : (tensor<?x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x16x8x8xf32>
  func.return
}

// -----

func.func @batch_norm_result_type(%x: tensor<?x16x8x8xf32>, %p: tensor<16xf32>, %v: tensor<16xf32>) {
  // expected-error@+1 {{expected result type tensor<?x16x8x8xf32>, got tensor<?x16x4x4xf32>}}
  %y = graph.batch_norm %x, %p, %p, %p, %v : (tensor<?x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x16x4x4xf32>
  func.return
}

// -----

func.func @batch_norm_training_one_result(%x: tensor<?x16x8x8xf32>, %p: tensor<16xf32>, %v: tensor<16xf32>) {
  // expected-error@+1 {{expected 3 results (y, running mean, running var) in training mode, got 1}}
  %y = graph.batch_norm %x, %p, %p, %p, %v training : (tensor<?x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x16x8x8xf32>
  func.return
}

// -----

func.func @batch_norm_inference_three_results(%x: tensor<?x16x8x8xf32>, %p: tensor<16xf32>, %v: tensor<16xf32>) {
  // expected-error@+1 {{expected 1 result in inference mode, got 3}}
  %y:3 = graph.batch_norm %x, %p, %p, %p, %v : (tensor<?x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<?x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>)
  func.return
}

// -----

func.func @batch_norm_running_stat_type(%x: tensor<?x16x8x8xf32>, %p: tensor<16xf32>, %v: tensor<16xf32>) {
  // expected-error@+1 {{expected updated running var type tensor<16xf32>, got tensor<8xf32>}}
  %y:3 = graph.batch_norm %x, %p, %p, %p, %v training : (tensor<?x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<?x16x8x8xf32>, tensor<16xf32>, tensor<8xf32>)
  func.return
}

// -----

func.func @silu_dtype(%x: tensor<?x4xi32>) {
  // expected-error@+1 {{unsupported dtype i32 for input: graph ops take f32 tensors}}
  %y = graph.silu %x : tensor<?x4xi32>
  func.return
}

// -----

func.func @silu_result_type(%x: tensor<?x4xf32>) {
  // expected-error@+1 {{expected result type tensor<?x4xf32>, got tensor<?x5xf32>}}
  %y = "graph.silu"(%x) : (tensor<?x4xf32>) -> tensor<?x5xf32>
  func.return
}

// -----

func.func @add_dynamic_against_static(%a: tensor<?x3xf32>, %b: tensor<4x3xf32>) {
  // expected-error@+1 {{cannot broadcast dynamic dimension against static size 4}}
  %z = graph.add %a, %b : (tensor<?x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  func.return
}

// -----

func.func @add_incompatible(%a: tensor<2x3xf32>, %b: tensor<4xf32>) {
  // expected-error@+1 {{cannot broadcast shapes [2, 3] and [4]: sizes 3 and 4 differ at result dimension 1}}
  %z = graph.add %a, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  func.return
}

// -----

func.func @add_batch_moves(%a: tensor<?x3xf32>, %b: tensor<2x1x3xf32>) {
  // expected-error@+1 {{cannot broadcast shapes [?, 3] and [2, 1, 3]: the dynamic batch dimension would land at result dimension 1}}
  %z = graph.add %a, %b : (tensor<?x3xf32>, tensor<2x1x3xf32>) -> tensor<2x?x3xf32>
  func.return
}

// -----

func.func @add_result_type(%a: tensor<2x3xf32>, %b: tensor<3xf32>) {
  // expected-error@+1 {{expected result type tensor<2x3xf32>, got tensor<3x3xf32>}}
  %z = graph.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<3x3xf32>
  func.return
}

// -----

func.func @add_dynamic_feature_dim(%a: tensor<2x?xf32>, %b: tensor<2x1xf32>) {
  // expected-error@+1 {{lhs has a dynamic dimension 1: only the batch dimension (0) may be dynamic}}
  %z = graph.add %a, %b : (tensor<2x?xf32>, tensor<2x1xf32>) -> tensor<2x?xf32>
  func.return
}

// -----

func.func @parse_padding_count(%x: tensor<?x3x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error@+1 {{expected 4 values for padding [top, left, bottom, right], got 2}}
  %y = graph.conv2d %x, %w padding [1, 1] : (tensor<?x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<?x16x8x8xf32>
  func.return
}

// -----

func.func @parse_strides_count(%x: tensor<?x3x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error@+1 {{expected 2 values for strides, got 1}}
  %y = graph.conv2d %x, %w strides [2] : (tensor<?x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<?x16x3x3xf32>
  func.return
}

// -----

func.func @parse_duplicate_option(%x: tensor<?x3x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error@+1 {{'strides' is given more than once}}
  %y = graph.conv2d %x, %w strides [1, 1] groups 1 strides [1, 1] : (tensor<?x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<?x16x6x6xf32>
  func.return
}

// -----

func.func @parse_groups_overflow(%x: tensor<?x3x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error@+1 {{integer 9223372036854775808 does not fit in i64}}
  %y = graph.conv2d %x, %w groups 9223372036854775808 : (tensor<?x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<?x16x6x6xf32>
  func.return
}

// -----

func.func @parse_operand_types(%x: tensor<?x3x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error@+1 {{expected 1 operand types but had 2}}
  %y = graph.conv2d %x, %w : (tensor<?x3x8x8xf32>) -> tensor<?x16x6x6xf32>
  func.return
}

// -----

func.func @parse_eps_not_float(%x: tensor<?x16x8x8xf32>, %p: tensor<16xf32>) {
  // expected-error@+1 {{Expected float literal}}
  %y = graph.batch_norm %x, %p, %p, %p, %p eps 1 : (tensor<?x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x16x8x8xf32>
  func.return
}

// -----

func.func @parse_param_missing_name() {
  // expected-error@+1 {{expected the parameter name, a string literal}}
  %w = graph.param : tensor<4xf32>
  func.return
}

// -----

func.func @parse_param_invalid_utf8() {
  // expected-error@+1 {{the parameter name is not valid UTF-8}}
  %w = graph.param "\FF" : tensor<4xf32>
  func.return
}

// -----

func.func @parse_param_not_tensor() {
  // expected-error@+1 {{expected a tensor type, got f32}}
  %w = graph.param "w" : f32
  func.return
}

// -----

func.func @parse_param_reserved_attr() {
  // expected-error@+1 {{Attribute dictionary entry 'param_name' is already passed}}
  %w = graph.param "w" {param_name = "v"} : tensor<4xf32>
  func.return
}

// -----

func.func @parse_silu_not_tensor(%x: f32) {
  // expected-error@+1 {{expected a tensor type, got f32}}
  %y = graph.silu %x : f32
  func.return
}

// -----

func.func @relu_dtype(%x: tensor<?x4xf16>) {
  // expected-error@+1 {{unsupported dtype f16 for input: graph ops take f32 tensors}}
  %y = graph.relu %x : tensor<?x4xf16>
  func.return
}

// -----

func.func @relu_result(%x: tensor<?x4xf32>) {
  // expected-error@+1 {{expected result type tensor<?x4xf32>, got tensor<?x5xf32>}}
  %y = "graph.relu"(%x) : (tensor<?x4xf32>) -> tensor<?x5xf32>
  func.return
}

// -----

func.func @sigmoid_dynamic_channel(%x: tensor<2x?xf32>) {
  // expected-error@+1 {{input has a dynamic dimension 1: only the batch dimension (0) may be dynamic}}
  %y = graph.sigmoid %x : tensor<2x?xf32>
  func.return
}

// -----

func.func @sigmoid_result(%x: tensor<?x4xf32>) {
  // expected-error@+1 {{expected result type tensor<?x4xf32>, got tensor<4xf32>}}
  %y = "graph.sigmoid"(%x) : (tensor<?x4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @mul_dynamic_against_static(%a: tensor<?x3xf32>, %b: tensor<4x3xf32>) {
  // expected-error@+1 {{cannot broadcast dynamic dimension against static size 4 (shapes [?, 3] and [4, 3])}}
  %z = graph.mul %a, %b : (tensor<?x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  func.return
}

// -----

func.func @mul_mismatch(%a: tensor<2x3xf32>, %b: tensor<4xf32>) {
  // expected-error@+1 {{cannot broadcast shapes [2, 3] and [4]: sizes 3 and 4 differ at result dimension 1}}
  %z = graph.mul %a, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  func.return
}

// -----

func.func @mul_batch_moves(%a: tensor<?x3xf32>, %b: tensor<2x1x3xf32>) {
  // expected-error@+1 {{the dynamic batch dimension would land at result dimension 1}}
  %z = graph.mul %a, %b : (tensor<?x3xf32>, tensor<2x1x3xf32>) -> tensor<2x?x3xf32>
  func.return
}

// -----

func.func @mul_result(%a: tensor<2x3xf32>, %b: tensor<3xf32>) {
  // expected-error@+1 {{expected result type tensor<2x3xf32>, got tensor<2x1xf32>}}
  %z = graph.mul %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x1xf32>
  func.return
}

// -----

func.func @mul_dtype(%a: tensor<2xf32>, %b: tensor<2xi64>) {
  // expected-error@+1 {{unsupported dtype i64 for rhs: graph ops take f32 tensors}}
  %z = graph.mul %a, %b : (tensor<2xf32>, tensor<2xi64>) -> tensor<2xf32>
  func.return
}

// -----

func.func @mul_result_dtype(%a: tensor<2xf32>, %b: tensor<2xf32>) {
  // expected-error@+1 {{unsupported dtype f64 for result: graph ops take f32 tensors}}
  %z = graph.mul %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf64>
  func.return
}

// -----

func.func @bias_add_rank(%x: tensor<?xf32>, %b: tensor<4xf32>) {
  // expected-error@+1 {{expected input of rank >= 2 [N, C, ...], got rank 1}}
  %y = graph.bias_add %x, %b : (tensor<?xf32>, tensor<4xf32>) -> tensor<?xf32>
  func.return
}

// -----

func.func @bias_add_bias_shape(%x: tensor<?x16x8x8xf32>, %b: tensor<8xf32>) {
  // expected-error@+1 {{expected bias shape [16], got [8]}}
  %y = graph.bias_add %x, %b : (tensor<?x16x8x8xf32>, tensor<8xf32>) -> tensor<?x16x8x8xf32>
  func.return
}

// -----

func.func @bias_add_bias_rank(%x: tensor<?x16x8x8xf32>, %b: tensor<16x1x1xf32>) {
  // expected-error@+1 {{expected bias shape [16], got [16, 1, 1]}}
  %y = graph.bias_add %x, %b : (tensor<?x16x8x8xf32>, tensor<16x1x1xf32>) -> tensor<?x16x8x8xf32>
  func.return
}

// -----

func.func @bias_add_bias_dynamic(%x: tensor<?x16xf32>, %b: tensor<?xf32>) {
  // expected-error@+1 {{expected bias to be fully static, got shape [?]}}
  %y = graph.bias_add %x, %b : (tensor<?x16xf32>, tensor<?xf32>) -> tensor<?x16xf32>
  func.return
}

// -----

func.func @bias_add_bias_dtype(%x: tensor<?x16xf32>, %b: tensor<16xf16>) {
  // expected-error@+1 {{unsupported dtype f16 for bias: graph ops take f32 tensors}}
  %y = graph.bias_add %x, %b : (tensor<?x16xf32>, tensor<16xf16>) -> tensor<?x16xf32>
  func.return
}

// -----

func.func @bias_add_input_dtype(%x: tensor<?x16xi32>, %b: tensor<16xf32>) {
  // expected-error@+1 {{unsupported dtype i32 for input: graph ops take f32 tensors}}
  %y = graph.bias_add %x, %b : (tensor<?x16xi32>, tensor<16xf32>) -> tensor<?x16xi32>
  func.return
}

// -----

func.func @bias_add_result(%x: tensor<?x16xf32>, %b: tensor<16xf32>) {
  // expected-error@+1 {{expected result type tensor<?x16xf32>, got tensor<1x16xf32>}}
  %y = graph.bias_add %x, %b : (tensor<?x16xf32>, tensor<16xf32>) -> tensor<1x16xf32>
  func.return
}

// -----

func.func @fused_scale_shape(%x: tensor<?x8x4x4xf32>, %w: tensor<16x8x1x1xf32>) {
  // expected-error@+1 {{expected scale of shape [16], got [8]}}
  %y = graph.fused_conv2d %x, %w scale #derive.param<fill(1.0) : [8]> shift #derive.param<fill(0.0) : [16]> : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<?x16x4x4xf32>
  func.return
}

// -----

func.func @fused_shift_shape(%x: tensor<?x8x4x4xf32>, %w: tensor<16x8x1x1xf32>) {
  // expected-error@+1 {{expected shift of shape [16], got [16, 1]}}
  %y = graph.fused_conv2d %x, %w scale #derive.param<fill(1.0) : [16]> shift #derive.param<identity("b") : [16, 1]> : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<?x16x4x4xf32>
  func.return
}

// -----

func.func @fused_conv_rule(%x: tensor<?x8x4x4xf32>, %w: tensor<16x8x1x1xf32>) {
  // expected-error@+1 {{expected strides >= 1, got [0, 1]}}
  %y = graph.fused_conv2d %x, %w strides [0, 1] scale #derive.param<fill(1.0) : [16]> shift #derive.param<fill(0.0) : [16]> : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<?x16x4x4xf32>
  func.return
}

// -----

func.func @fused_result(%x: tensor<?x8x4x4xf32>, %w: tensor<16x8x1x1xf32>) {
  // expected-error@+1 {{expected result type tensor<?x16x4x4xf32>, got tensor<?x16x2x2xf32>}}
  %y = graph.fused_conv2d %x, %w scale #derive.param<fill(1.0) : [16]> shift #derive.param<fill(0.0) : [16]> : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<?x16x2x2xf32>
  func.return
}

// -----

func.func @fused_activation(%x: tensor<?x8x4x4xf32>, %w: tensor<16x8x1x1xf32>) {
  // expected-error@+1 {{expected activation to be an epilogue entry of the pointwise table, got 'gelu'}}
  %y = "graph.fused_conv2d"(%x, %w) <{scale = #derive.param<fill(1.0) : [16]>, shift = #derive.param<fill(0.0) : [16]>, activation = "gelu"}> : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<?x16x4x4xf32>
  func.return
}

// -----

func.func @fused_algorithm_without_tiles(%x: tensor<?x8x4x4xf32>, %w: tensor<16x8x1x1xf32>) {
  // expected-error@+1 {{expected 'algorithm' and 'tiles' to be set together}}
  %y = graph.fused_conv2d %x, %w scale #derive.param<fill(1.0) : [16]> shift #derive.param<fill(0.0) : [16]> algorithm gemm : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<?x16x4x4xf32>
  func.return
}

// -----

func.func @fused_tiles_without_algorithm(%x: tensor<?x8x4x4xf32>, %w: tensor<16x8x1x1xf32>) {
  // expected-error@+1 {{expected 'algorithm' and 'tiles' to be set together}}
  %y = graph.fused_conv2d %x, %w scale #derive.param<fill(1.0) : [16]> shift #derive.param<fill(0.0) : [16]> tiles [64, 64, 16] : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<?x16x4x4xf32>
  func.return
}

// -----

func.func @fused_algorithm_unknown(%x: tensor<?x8x4x4xf32>, %w: tensor<16x8x1x1xf32>) {
  // expected-error@+1 {{expected algorithm to be one of gemm, depthwise, implicit-gemm, got 'winograd'}}
  %y = "graph.fused_conv2d"(%x, %w) <{scale = #derive.param<fill(1.0) : [16]>, shift = #derive.param<fill(0.0) : [16]>, algorithm = "winograd", tiles = array<i64: 64, 64, 16>}> : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<?x16x4x4xf32>
  func.return
}

// -----

func.func @fused_tiles_count(%x: tensor<?x8x4x4xf32>, %w: tensor<16x8x1x1xf32>) {
  // expected-error@+1 {{expected 3 values for tiles [BLOCK_M, BLOCK_N, BLOCK_K], got 2}}
  %y = "graph.fused_conv2d"(%x, %w) <{scale = #derive.param<fill(1.0) : [16]>, shift = #derive.param<fill(0.0) : [16]>, algorithm = "gemm", tiles = array<i64: 64, 64>}> : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<?x16x4x4xf32>
  func.return
}

// -----

func.func @fused_tiles_power_of_two(%x: tensor<?x8x4x4xf32>, %w: tensor<16x8x1x1xf32>) {
  // expected-error@+1 {{expected tiles to be powers of two, got [64, 48, 16]}}
  %y = graph.fused_conv2d %x, %w scale #derive.param<fill(1.0) : [16]> shift #derive.param<fill(0.0) : [16]> algorithm gemm tiles [64, 48, 16] : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<?x16x4x4xf32>
  func.return
}

// -----

func.func @fused_tiles_zero(%x: tensor<?x8x4x4xf32>, %w: tensor<16x8x1x1xf32>) {
  // expected-error@+1 {{expected tiles to be powers of two, got [64, 0, 16]}}
  %y = graph.fused_conv2d %x, %w scale #derive.param<fill(1.0) : [16]> shift #derive.param<fill(0.0) : [16]> algorithm gemm tiles [64, 0, 16] : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<?x16x4x4xf32>
  func.return
}

// -----

func.func @fused_gemm_not_1x1(%x: tensor<?x8x4x4xf32>, %w: tensor<16x8x1x1xf32>) {
  // expected-error@+1 {{algorithm 'gemm' needs a 1x1 kernel, stride 1, no padding, dilation 1 and one group}}
  %y = graph.fused_conv2d %x, %w padding [1, 1, 1, 1] scale #derive.param<fill(1.0) : [16]> shift #derive.param<fill(0.0) : [16]> algorithm gemm tiles [64, 64, 16] : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<?x16x6x6xf32>
  func.return
}

// -----

func.func @fused_missing_shift(%x: tensor<?x8x4x4xf32>, %w: tensor<16x8x1x1xf32>) {
  // expected-error@+1 {{property 'shift' expected}}
  %y = "graph.fused_conv2d"(%x, %w) <{scale = #derive.param<fill(1.0) : [16]>}> : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<?x16x4x4xf32>
  func.return
}

// -----

func.func @parse_fused_activation(%x: tensor<?x8x4x4xf32>, %w: tensor<16x8x1x1xf32>) {
  // expected-error@+1 {{expected activation to be one of}}
  %y = graph.fused_conv2d %x, %w scale #derive.param<fill(1.0) : [16]> shift #derive.param<fill(0.0) : [16]> activation gelu : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<?x16x4x4xf32>
  func.return
}

// -----

func.func @parse_fused_algorithm(%x: tensor<?x8x4x4xf32>, %w: tensor<16x8x1x1xf32>) {
  // expected-error@+1 {{expected algorithm to be one of gemm, depthwise, implicit-gemm}}
  %y = graph.fused_conv2d %x, %w scale #derive.param<fill(1.0) : [16]> shift #derive.param<fill(0.0) : [16]> algorithm "winograd" tiles [64, 64, 16] : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<?x16x4x4xf32>
  func.return
}

// -----

func.func @parse_fused_scale_not_derivation(%x: tensor<?x8x4x4xf32>, %w: tensor<16x8x1x1xf32>) {
  // expected-error@+1 {{expected scale to be a #derive.param<...>}}
  %y = graph.fused_conv2d %x, %w scale [1, 2] shift #derive.param<fill(0.0) : [16]> : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<?x16x4x4xf32>
  func.return
}

// -----

func.func @parse_fused_tiles_count(%x: tensor<?x8x4x4xf32>, %w: tensor<16x8x1x1xf32>) {
  // expected-error@+1 {{expected 3 values for tiles [BLOCK_M, BLOCK_N, BLOCK_K], got 2}}
  %y = graph.fused_conv2d %x, %w scale #derive.param<fill(1.0) : [16]> shift #derive.param<fill(0.0) : [16]> algorithm gemm tiles [64, 64] : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<?x16x4x4xf32>
  func.return
}

// -----

func.func @parse_fused_duplicate(%x: tensor<?x8x4x4xf32>, %w: tensor<16x8x1x1xf32>) {
  // expected-error@+1 {{'scale' is given more than once}}
  %y = graph.fused_conv2d %x, %w scale #derive.param<fill(1.0) : [16]> scale #derive.param<fill(1.0) : [16]> shift #derive.param<fill(0.0) : [16]> : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<?x16x4x4xf32>
  func.return
}

// -----

func.func @parse_bias_add_operand_types(%x: tensor<?x16xf32>, %b: tensor<16xf32>) {
  // expected-error@+1 {{expected 1 operand types but had 2}}
  %y = graph.bias_add %x, %b : (tensor<?x16xf32>) -> tensor<?x16xf32>
  func.return
}

// -----

func.func @parse_relu_not_tensor(%x: f32) {
  // expected-error@+1 {{expected a tensor type, got f32}}
  %y = graph.relu %x : f32
  func.return
}

// -----

func.func @parse_sigmoid_function_type(%x: tensor<4xf32>) {
  // expected-error@+1 {{expected a tensor type, got (tensor<4xf32>) -> tensor<4xf32>}}
  %y = graph.sigmoid %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}
