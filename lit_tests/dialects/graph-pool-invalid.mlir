// RUN: teeny-opt %s --split-input-file --verify-diagnostics

func.func @pool_input_rank(%x: tensor<?x16x8xf32>) {
  // expected-error@+1 {{expected input of rank 4 [N, C, H, W], got rank 3}}
  %y = graph.max_pool2d %x kernel [2, 2] : (tensor<?x16x8xf32>) -> tensor<?x16x4xf32>
  func.return
}

// -----

func.func @pool_input_dynamic_spatial(%x: tensor<?x16x?x8xf32>) {
  // expected-error@+1 {{input has a dynamic dimension 2: only the batch dimension (0) may be dynamic}}
  %y = graph.avg_pool2d %x kernel [2, 2] : (tensor<?x16x?x8xf32>) -> tensor<?x16x4x4xf32>
  func.return
}

// -----

func.func @pool_input_dtype(%x: tensor<?x16x8x8xf16>) {
  // expected-error@+1 {{unsupported dtype f16 for input: graph ops take f32 tensors}}
  %y = graph.max_pool2d %x kernel [2, 2] : (tensor<?x16x8x8xf16>) -> tensor<?x16x4x4xf32>
  func.return
}

// -----

func.func @pool_missing_kernel(%x: tensor<?x16x8x8xf32>) {
  // expected-error@+1 {{expected the 'kernel' option of graph.max_pool2d}}
  %y = graph.max_pool2d %x strides [2, 2] : (tensor<?x16x8x8xf32>) -> tensor<?x16x4x4xf32>
  func.return
}

// -----

func.func @pool_kernel_count_parse(%x: tensor<?x16x8x8xf32>) {
  // expected-error@+1 {{expected 2 values for kernel, got 3}}
  %y = graph.max_pool2d %x kernel [2, 2, 2] : (tensor<?x16x8x8xf32>) -> tensor<?x16x4x4xf32>
  func.return
}

// -----

func.func @pool_kernel_twice(%x: tensor<?x16x8x8xf32>) {
  // expected-error@+1 {{'kernel' is given more than once}}
  %y = graph.avg_pool2d %x kernel [2, 2] kernel [2, 2] : (tensor<?x16x8x8xf32>) -> tensor<?x16x4x4xf32>
  func.return
}

// -----

// avg_pool2d has no dilation (nor has PyTorch's).
func.func @avg_pool_has_no_dilation(%x: tensor<?x16x8x8xf32>) {
  // expected-error@+1 {{Expected ':'}}
  %y = graph.avg_pool2d %x kernel [2, 2] dilation [2, 2] : (tensor<?x16x8x8xf32>) -> tensor<?x16x4x4xf32>
  func.return
}

// -----

func.func @avg_pool_generic_dilation(%x: tensor<?x16x8x8xf32>) {
  // expected-error@+1 {{property 'dilation' is not defined by the operation 'graph.avg_pool2d'}}
  %y = "graph.avg_pool2d"(%x) <{kernel = array<i64: 2, 2>, dilation = array<i64: 2, 2>}> : (tensor<?x16x8x8xf32>) -> tensor<?x16x4x4xf32>
  func.return
}

// -----

func.func @pool_kernel_count(%x: tensor<?x16x8x8xf32>) {
  // expected-error@+1 {{expected 2 values for kernel, got 1}}
  %y = "graph.max_pool2d"(%x) <{kernel = array<i64: 2>}> : (tensor<?x16x8x8xf32>) -> tensor<?x16x4x4xf32>
  func.return
}

// -----

func.func @pool_strides_count(%x: tensor<?x16x8x8xf32>) {
  // expected-error@+1 {{expected 2 values for strides, got 3}}
  %y = "graph.avg_pool2d"(%x) <{kernel = array<i64: 2, 2>, strides = array<i64: 2, 2, 2>}> : (tensor<?x16x8x8xf32>) -> tensor<?x16x4x4xf32>
  func.return
}

// -----

func.func @pool_padding_count(%x: tensor<?x16x8x8xf32>) {
  // expected-error@+1 {{expected 4 values for padding [top, left, bottom, right], got 2}}
  %y = "graph.max_pool2d"(%x) <{kernel = array<i64: 2, 2>, padding = array<i64: 1, 1>}> : (tensor<?x16x8x8xf32>) -> tensor<?x16x4x4xf32>
  func.return
}

// -----

func.func @pool_dilation_count(%x: tensor<?x16x8x8xf32>) {
  // expected-error@+1 {{expected 2 values for dilation, got 1}}
  %y = "graph.max_pool2d"(%x) <{kernel = array<i64: 2, 2>, dilation = array<i64: 1>}> : (tensor<?x16x8x8xf32>) -> tensor<?x16x4x4xf32>
  func.return
}

// -----

func.func @pool_zero_kernel(%x: tensor<?x16x8x8xf32>) {
  // expected-error@+1 {{expected kernel >= 1, got [0, 2]}}
  %y = graph.max_pool2d %x kernel [0, 2] : (tensor<?x16x8x8xf32>) -> tensor<?x16x4x4xf32>
  func.return
}

// -----

func.func @pool_negative_kernel(%x: tensor<?x16x8x8xf32>) {
  // expected-error@+1 {{expected kernel >= 1, got [2, -1]}}
  %y = graph.avg_pool2d %x kernel [2, -1] strides [2, 2] : (tensor<?x16x8x8xf32>) -> tensor<?x16x4x4xf32>
  func.return
}

// -----

func.func @pool_zero_stride(%x: tensor<?x16x8x8xf32>) {
  // expected-error@+1 {{expected strides >= 1, got [1, 0]}}
  %y = graph.max_pool2d %x kernel [2, 2] strides [1, 0] : (tensor<?x16x8x8xf32>) -> tensor<?x16x4x4xf32>
  func.return
}

// -----

func.func @pool_zero_dilation(%x: tensor<?x16x8x8xf32>) {
  // expected-error@+1 {{expected dilation >= 1, got [0, 1]}}
  %y = graph.max_pool2d %x kernel [2, 2] dilation [0, 1] : (tensor<?x16x8x8xf32>) -> tensor<?x16x4x4xf32>
  func.return
}

// -----

func.func @pool_negative_padding(%x: tensor<?x16x8x8xf32>) {
  // expected-error@+1 {{expected padding >= 0, got [0, -1, 0, 0]}}
  %y = graph.avg_pool2d %x kernel [2, 2] padding [0, -1, 0, 0] : (tensor<?x16x8x8xf32>) -> tensor<?x16x4x4xf32>
  func.return
}

// -----

func.func @pool_padding_over_half_kernel(%x: tensor<?x16x8x8xf32>) {
  // expected-error@+1 {{padding top 2 exceeds half the kernel height 3 (PyTorch requires padding <= kernel // 2, whatever the dilation)}}
  %y = graph.max_pool2d %x kernel [3, 3] strides [1, 1] padding [2, 1, 1, 1] : (tensor<?x16x8x8xf32>) -> tensor<?x16x9x8xf32>
  func.return
}

// -----

// Dilation does not raise the limit (PyTorch checks the undilated kernel).
func.func @pool_padding_limit_ignores_dilation(%x: tensor<?x16x8x8xf32>) {
  // expected-error@+1 {{padding right 2 exceeds half the kernel width 3 (PyTorch requires padding <= kernel // 2, whatever the dilation)}}
  %y = graph.max_pool2d %x kernel [3, 3] padding [0, 0, 0, 2] dilation [1, 2] : (tensor<?x16x8x8xf32>) -> tensor<?x16x2x2xf32>
  func.return
}

// -----

func.func @avg_pool_padding_over_half_kernel(%x: tensor<?x16x8x8xf32>) {
  // expected-error@+1 {{padding left 2 exceeds half the kernel width 2 (PyTorch requires padding <= kernel // 2, whatever the dilation)}}
  %y = graph.avg_pool2d %x kernel [2, 2] padding [0, 2, 0, 0] : (tensor<?x16x8x8xf32>) -> tensor<?x16x4x5xf32>
  func.return
}

// -----

func.func @pool_kernel_exceeds_padded_input(%x: tensor<?x16x3x8xf32>) {
  // expected-error@+1 {{kernel height 5 exceeds padded input height 4}}
  %y = graph.max_pool2d %x kernel [5, 2] padding [1, 0, 0, 0] : (tensor<?x16x3x8xf32>) -> tensor<?x16x1x4xf32>
  func.return
}

// -----

// Stricter than PyTorch, which accepts this in ceil mode.
func.func @pool_kernel_exceeds_padded_input_ceil_mode(%x: tensor<?x16x8x3xf32>) {
  // expected-error@+1 {{kernel width 4 exceeds padded input width 3}}
  %y = graph.avg_pool2d %x kernel [2, 4] ceil_mode : (tensor<?x16x8x3xf32>) -> tensor<?x16x4x1xf32>
  func.return
}

// -----

func.func @pool_dilated_kernel_exceeds_padded_input(%x: tensor<?x16x8x4xf32>) {
  // expected-error@+1 {{dilated kernel width 7 exceeds padded input width 6}}
  %y = graph.max_pool2d %x kernel [2, 3] padding [0, 1, 0, 1] dilation [1, 3] : (tensor<?x16x8x4xf32>) -> tensor<?x16x4x1xf32>
  func.return
}

// -----

func.func @pool_result_shape(%x: tensor<?x16x8x8xf32>) {
  // expected-error@+1 {{expected result type tensor<?x16x4x4xf32>, got tensor<?x16x5x5xf32>}}
  %y = graph.max_pool2d %x kernel [2, 2] : (tensor<?x16x8x8xf32>) -> tensor<?x16x5x5xf32>
  func.return
}

// -----

// Without ceil_mode the window hanging off the end is dropped.
func.func @pool_result_shape_floor_mode(%x: tensor<?x16x7x7xf32>) {
  // expected-error@+1 {{expected result type tensor<?x16x3x3xf32>, got tensor<?x16x4x4xf32>}}
  %y = graph.avg_pool2d %x kernel [2, 2] : (tensor<?x16x7x7xf32>) -> tensor<?x16x4x4xf32>
  func.return
}

// -----

func.func @pool_result_dtype(%x: tensor<?x16x8x8xf32>) {
  // expected-error@+1 {{unsupported dtype f16 for result: graph ops take f32 tensors}}
  %y = graph.avg_pool2d %x kernel [2, 2] : (tensor<?x16x8x8xf32>) -> tensor<?x16x4x4xf16>
  func.return
}

// -----

func.func @pool_operand_count(%x: tensor<?x16x8x8xf32>) {
  // expected-error@+1 {{expected 1 operand types but had 2}}
  %y = graph.max_pool2d %x, %x kernel [2, 2] : (tensor<?x16x8x8xf32>) -> tensor<?x16x4x4xf32>
  func.return
}

// -----

func.func @global_avg_pool_rank(%x: tensor<?x16xf32>) {
  // expected-error@+1 {{expected input of rank 4 [N, C, H, W], got rank 2}}
  %y = graph.global_avg_pool2d %x : (tensor<?x16xf32>) -> tensor<?x16x1x1xf32>
  func.return
}

// -----

func.func @global_avg_pool_dtype(%x: tensor<?x16x8x8xi32>) {
  // expected-error@+1 {{unsupported dtype i32 for input: graph ops take f32 tensors}}
  %y = graph.global_avg_pool2d %x : (tensor<?x16x8x8xi32>) -> tensor<?x16x1x1xf32>
  func.return
}

// -----

func.func @global_avg_pool_result(%x: tensor<?x16x8x8xf32>) {
  // expected-error@+1 {{expected result type tensor<?x16x1x1xf32>, got tensor<?x16xf32>}}
  %y = graph.global_avg_pool2d %x : (tensor<?x16x8x8xf32>) -> tensor<?x16xf32>
  func.return
}

// -----

func.func @upsample_rank(%x: tensor<?x16x8xf32>) {
  // expected-error@+1 {{expected input of rank 4 [N, C, H, W], got rank 3}}
  %y = graph.upsample_nearest2d %x scales [2, 2] : (tensor<?x16x8xf32>) -> tensor<?x16x16xf32>
  func.return
}

// -----

func.func @upsample_missing_scales(%x: tensor<?x16x4x4xf32>) {
  // expected-error@+1 {{expected the 'scales' option of graph.upsample_nearest2d}}
  %y = graph.upsample_nearest2d %x : (tensor<?x16x4x4xf32>) -> tensor<?x16x8x8xf32>
  func.return
}

// -----

func.func @upsample_scales_count_parse(%x: tensor<?x16x4x4xf32>) {
  // expected-error@+1 {{expected 2 values for scales, got 1}}
  %y = graph.upsample_nearest2d %x scales [2] : (tensor<?x16x4x4xf32>) -> tensor<?x16x8x8xf32>
  func.return
}

// -----

func.func @upsample_scales_count(%x: tensor<?x16x4x4xf32>) {
  // expected-error@+1 {{expected 2 values for scales, got 3}}
  %y = "graph.upsample_nearest2d"(%x) <{scales = array<i64: 2, 2, 2>}> : (tensor<?x16x4x4xf32>) -> tensor<?x16x8x8xf32>
  func.return
}

// -----

func.func @upsample_zero_scale(%x: tensor<?x16x4x4xf32>) {
  // expected-error@+1 {{expected scales >= 1, got [0, 2]}}
  %y = graph.upsample_nearest2d %x scales [0, 2] : (tensor<?x16x4x4xf32>) -> tensor<?x16x1x8xf32>
  func.return
}

// -----

func.func @upsample_result(%x: tensor<?x16x4x4xf32>) {
  // expected-error@+1 {{expected result type tensor<?x16x8x12xf32>, got tensor<?x16x8x8xf32>}}
  %y = graph.upsample_nearest2d %x scales [2, 3] : (tensor<?x16x4x4xf32>) -> tensor<?x16x8x8xf32>
  func.return
}

// -----

func.func @upsample_result_dtype(%x: tensor<?x16x4x4xf32>) {
  // expected-error@+1 {{unsupported dtype f64 for result: graph ops take f32 tensors}}
  %y = graph.upsample_nearest2d %x scales [2, 2] : (tensor<?x16x4x4xf32>) -> tensor<?x16x8x8xf64>
  func.return
}
