// RUN: teeny-opt %s --split-input-file --verify-diagnostics

func.func @max_pool2d_backward_grad_shape(%x: tensor<?x16x8x8xf32>, %dy: tensor<?x16x3x3xf32>) {
  // expected-error@+1 {{expected grad shape [?, 16, 4, 4] (the pool's result for input [?, 16, 8, 8]), got [?, 16, 3, 3]}}
  %dx = graph.max_pool2d_backward %x, %dy kernel [2, 2] : (tensor<?x16x8x8xf32>, tensor<?x16x3x3xf32>) -> tensor<?x16x8x8xf32>
  func.return
}

// -----

func.func @max_pool2d_backward_result_type(%x: tensor<?x16x8x8xf32>, %dy: tensor<?x16x4x4xf32>) {
  // expected-error@+1 {{expected result type tensor<?x16x8x8xf32>, got tensor<?x16x8x9xf32>}}
  %dx = graph.max_pool2d_backward %x, %dy kernel [2, 2] : (tensor<?x16x8x8xf32>, tensor<?x16x4x4xf32>) -> tensor<?x16x8x9xf32>
  func.return
}

// -----

func.func @max_pool2d_backward_input_rank(%x: tensor<?x16x8xf32>, %dy: tensor<?x16x4xf32>) {
  // expected-error@+1 {{expected input of rank 4 [N, C, H, W], got rank 3}}
  %dx = graph.max_pool2d_backward %x, %dy kernel [2, 2] : (tensor<?x16x8xf32>, tensor<?x16x4xf32>) -> tensor<?x16x8xf32>
  func.return
}

// -----

func.func @max_pool2d_backward_grad_dtype(%x: tensor<?x16x8x8xf32>, %dy: tensor<?x16x4x4xf16>) {
  // expected-error@+1 {{unsupported dtype f16 for grad: graph ops take f32 tensors}}
  %dx = graph.max_pool2d_backward %x, %dy kernel [2, 2] : (tensor<?x16x8x8xf32>, tensor<?x16x4x4xf16>) -> tensor<?x16x8x8xf32>
  func.return
}

// -----

func.func @max_pool2d_backward_padding(%x: tensor<?x16x8x8xf32>, %dy: tensor<?x16x5x5xf32>) {
  // expected-error@+1 {{padding top 2 exceeds half the kernel height 2 (PyTorch requires padding <= kernel // 2, whatever the dilation)}}
  %dx = graph.max_pool2d_backward %x, %dy kernel [2, 2] padding [2, 0, 0, 0] : (tensor<?x16x8x8xf32>, tensor<?x16x5x5xf32>) -> tensor<?x16x8x8xf32>
  func.return
}

// -----

func.func @max_pool2d_backward_missing_kernel(%x: tensor<?x16x8x8xf32>, %dy: tensor<?x16x4x4xf32>) {
  // expected-error@+1 {{expected the 'kernel' option of graph.max_pool2d_backward}}
  %dx = graph.max_pool2d_backward %x, %dy strides [2, 2] : (tensor<?x16x8x8xf32>, tensor<?x16x4x4xf32>) -> tensor<?x16x8x8xf32>
  func.return
}

// -----

func.func @avg_pool2d_backward_no_dilation(%dy: tensor<?x16x4x4xf32>) {
  // expected-error@+1 {{expected the 'kernel' option of graph.avg_pool2d_backward}}
  %dx = graph.avg_pool2d_backward %dy dilation [2, 2] kernel [2, 2] : (tensor<?x16x4x4xf32>) -> tensor<?x16x8x8xf32>
  func.return
}

// -----

func.func @avg_pool2d_backward_ceil_mode_shape(%dy: tensor<?x16x2x2xf32>) {
  // expected-error@+1 {{expected grad shape [?, 16, 3, 3] (the pool's result for input [?, 16, 5, 5]), got [?, 16, 2, 2]}}
  %dx = graph.avg_pool2d_backward %dy kernel [2, 2] ceil_mode : (tensor<?x16x2x2xf32>) -> tensor<?x16x5x5xf32>
  func.return
}

// -----

func.func @avg_pool2d_backward_result_rank(%dy: tensor<?x16x4x4xf32>) {
  // expected-error@+1 {{expected input of rank 4 [N, C, H, W], got rank 2}}
  %dx = graph.avg_pool2d_backward %dy kernel [2, 2] : (tensor<?x16x4x4xf32>) -> tensor<?x16xf32>
  func.return
}

// -----

func.func @avg_pool2d_backward_batch(%dy: tensor<2x16x4x4xf32>) {
  // expected-error@+1 {{expected grad shape [3, 16, 4, 4] (the pool's result for input [3, 16, 8, 8]), got [2, 16, 4, 4]}}
  %dx = graph.avg_pool2d_backward %dy kernel [2, 2] : (tensor<2x16x4x4xf32>) -> tensor<3x16x8x8xf32>
  func.return
}
