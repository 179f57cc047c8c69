// RUN: teeny-opt %s --split-input-file --verify-diagnostics

func.func @backward_data_shape_rule(%dy: tensor<?x16x4x4xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error@+1 {{expected grad of shape [?, 16, 6, 6] (the convolution of the result shape [?, 3, 8, 8]), got [?, 16, 4, 4]}}
  %dx = graph.conv2d_backward_data %dy, %w : (tensor<?x16x4x4xf32>, tensor<16x3x3x3xf32>) -> tensor<?x3x8x8xf32>
  func.return
}

// -----

func.func @backward_data_channels(%dy: tensor<?x16x4x4xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error@+1 {{the result (the forward input) [?, 4, 8, 8] does not fit the convolution: expected weight dim 1 to be C_in / groups = 4, got 3}}
  %dx = graph.conv2d_backward_data %dy, %w strides [2, 2] padding [1, 1, 1, 1] : (tensor<?x16x4x4xf32>, tensor<16x3x3x3xf32>) -> tensor<?x4x8x8xf32>
  func.return
}

// -----

func.func @backward_data_batch(%dy: tensor<?x16x4x4xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error@+1 {{expected grad of shape [2, 16, 4, 4] (the convolution of the result shape [2, 3, 8, 8]), got [?, 16, 4, 4]}}
  %dx = graph.conv2d_backward_data %dy, %w strides [2, 2] padding [1, 1, 1, 1] : (tensor<?x16x4x4xf32>, tensor<16x3x3x3xf32>) -> tensor<2x3x8x8xf32>
  func.return
}

// -----

func.func @backward_data_rank(%dy: tensor<?x16x4xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error@+1 {{expected grad of rank 4, got rank 3}}
  %dx = graph.conv2d_backward_data %dy, %w : (tensor<?x16x4xf32>, tensor<16x3x3x3xf32>) -> tensor<?x3x8x8xf32>
  func.return
}

// -----

func.func @backward_data_dynamic_weight(%dy: tensor<?x16x6x6xf32>, %w: tensor<?x3x3x3xf32>) {
  // expected-error@+1 {{expected weight to be fully static, got shape [?, 3, 3, 3]}}
  %dx = graph.conv2d_backward_data %dy, %w : (tensor<?x16x6x6xf32>, tensor<?x3x3x3xf32>) -> tensor<?x3x8x8xf32>
  func.return
}

// -----

func.func @backward_data_strides_count(%dy: tensor<?x16x6x6xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error@+1 {{expected 2 values for strides, got 3}}
  %dx = graph.conv2d_backward_data %dy, %w strides [1, 1, 1] : (tensor<?x16x6x6xf32>, tensor<16x3x3x3xf32>) -> tensor<?x3x8x8xf32>
  func.return
}

// -----

func.func @backward_weight_shape_rule(%x: tensor<?x3x8x8xf32>, %dy: tensor<?x16x4x4xf32>) {
  // expected-error@+1 {{expected grad of shape [?, 16, 3, 3] (the convolution of the input by the result shape [16, 3, 3, 3]), got [?, 16, 4, 4]}}
  %dw = graph.conv2d_backward_weight %x, %dy strides [2, 2] : (tensor<?x3x8x8xf32>, tensor<?x16x4x4xf32>) -> tensor<16x3x3x3xf32>
  func.return
}

// -----

func.func @backward_weight_dynamic_result(%x: tensor<?x3x8x8xf32>, %dy: tensor<?x16x4x4xf32>) {
  // expected-error@+1 {{expected result to be fully static, got shape [?, 3, 3, 3]}}
  %dw = graph.conv2d_backward_weight %x, %dy strides [2, 2] : (tensor<?x3x8x8xf32>, tensor<?x16x4x4xf32>) -> tensor<?x3x3x3xf32>
  func.return
}

// -----

func.func @backward_weight_result_rank(%x: tensor<?x3x8x8xf32>, %dy: tensor<?x16x4x4xf32>) {
  // expected-error@+1 {{expected result of rank 4 [C_out, C_in / groups, KH, KW], got rank 3}}
  %dw = graph.conv2d_backward_weight %x, %dy : (tensor<?x3x8x8xf32>, tensor<?x16x4x4xf32>) -> tensor<16x3x3xf32>
  func.return
}

// -----

func.func @backward_weight_groups(%x: tensor<?x3x8x8xf32>, %dy: tensor<?x16x4x4xf32>) {
  // expected-error@+1 {{the result (the forward weight) [16, 3, 5, 5] does not fit the convolution: expected C_in = 3 to be divisible by groups = 2}}
  %dw = graph.conv2d_backward_weight %x, %dy groups 2 : (tensor<?x3x8x8xf32>, tensor<?x16x4x4xf32>) -> tensor<16x3x5x5xf32>
  func.return
}

// -----

func.func @backward_weight_dtype(%x: tensor<?x3x8x8xf16>, %dy: tensor<?x16x4x4xf32>) {
  // expected-error@+1 {{unsupported dtype f16 for input: graph ops take f32 tensors}}
  %dw = graph.conv2d_backward_weight %x, %dy : (tensor<?x3x8x8xf16>, tensor<?x16x4x4xf32>) -> tensor<16x3x5x5xf32>
  func.return
}

// -----

func.func @backward_weight_operands(%x: tensor<?x3x8x8xf32>) {
  // expected-error@+1 {{Expected 2 operands, but got 1}}
  %dw = graph.conv2d_backward_weight %x : (tensor<?x3x8x8xf32>) -> tensor<16x3x5x5xf32>
  func.return
}
