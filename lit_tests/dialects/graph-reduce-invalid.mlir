// RUN: teeny-opt %s --split-input-file --verify-diagnostics

func.func @softmax_axis_out_of_range(%x: tensor<?x10xf32>) {
  // expected-error@+1 {{expected axis in [0, 2) for input of rank 2, got 2}}
  %y = graph.softmax %x axis 2 : (tensor<?x10xf32>) -> tensor<?x10xf32>
  func.return
}

// -----

// The builders normalise negative axes; the IR stores them non-negative.
func.func @softmax_negative_axis(%x: tensor<?x10xf32>) {
  // expected-error@+1 {{expected axis in [0, 2) for input of rank 2, got -1}}
  %y = graph.log_softmax %x axis -1 : (tensor<?x10xf32>) -> tensor<?x10xf32>
  func.return
}

// -----

func.func @softmax_rank_0(%x: tensor<f32>) {
  // expected-error@+1 {{expected input of rank >= 1, got rank 0}}
  %y = graph.softmax %x axis 0 : (tensor<f32>) -> tensor<f32>
  func.return
}

// -----

func.func @softmax_dtype(%x: tensor<?x10xi64>) {
  // expected-error@+1 {{unsupported dtype i64 for input: graph ops take f32 tensors}}
  %y = graph.softmax %x axis 1 : (tensor<?x10xi64>) -> tensor<?x10xi64>
  func.return
}

// -----

func.func @softmax_dynamic_class_axis(%x: tensor<4x?xf32>) {
  // expected-error@+1 {{input has a dynamic dimension 1: only the batch dimension (0) may be dynamic}}
  %y = graph.softmax %x axis 1 : (tensor<4x?xf32>) -> tensor<4x?xf32>
  func.return
}

// -----

func.func @log_softmax_result_type(%x: tensor<?x10xf32>) {
  // expected-error@+1 {{expected result type tensor<?x10xf32>, got tensor<?x9xf32>}}
  %y = graph.log_softmax %x axis 1 : (tensor<?x10xf32>) -> tensor<?x9xf32>
  func.return
}

// -----

func.func @parse_softmax_missing_axis(%x: tensor<?x10xf32>) {
  // expected-error@+1 {{expected the 'axis' option of graph.softmax}}
  %y = graph.softmax %x : (tensor<?x10xf32>) -> tensor<?x10xf32>
  func.return
}

// -----

func.func @parse_softmax_duplicate_axis(%x: tensor<?x10xf32>) {
  // expected-error@+1 {{'axis' is given more than once}}
  %y = graph.softmax %x axis 1 axis 1 : (tensor<?x10xf32>) -> tensor<?x10xf32>
  func.return
}

// -----

func.func @generic_softmax_missing_axis(%x: tensor<?x10xf32>) {
  // expected-error@+1 {{property 'axis' expected}}
  %y = "graph.softmax"(%x) : (tensor<?x10xf32>) -> tensor<?x10xf32>
  func.return
}

// -----

func.func @cross_entropy_logits_rank(%l: tensor<?x10x2xf32>, %t: tensor<?xi64>) {
  // expected-error@+1 {{expected logits of rank 2 [N, C], got rank 3}}
  %loss = graph.cross_entropy %l, %t : (tensor<?x10x2xf32>, tensor<?xi64>) -> tensor<f32>
  func.return
}

// -----

func.func @cross_entropy_logits_dtype(%l: tensor<?x10xf16>, %t: tensor<?xi64>) {
  // expected-error@+1 {{unsupported dtype f16 for logits: graph ops take f32 tensors}}
  %loss = graph.cross_entropy %l, %t : (tensor<?x10xf16>, tensor<?xi64>) -> tensor<f32>
  func.return
}

// -----

func.func @cross_entropy_target_batch(%l: tensor<?x10xf32>, %t: tensor<3xi64>) {
  // expected-error@+1 {{expected targets of shape [N] = [?], got [3]}}
  %loss = graph.cross_entropy %l, %t : (tensor<?x10xf32>, tensor<3xi64>) -> tensor<f32>
  func.return
}

// -----

func.func @cross_entropy_target_rank(%l: tensor<4x10xf32>, %t: tensor<4x1xi64>) {
  // expected-error@+1 {{expected targets of shape [N] = [4], got [4, 1]}}
  %loss = graph.cross_entropy %l, %t : (tensor<4x10xf32>, tensor<4x1xi64>) -> tensor<f32>
  func.return
}

// -----

func.func @cross_entropy_target_dtype(%l: tensor<?x10xf32>, %t: tensor<?xi32>) {
  // expected-error@+1 {{unsupported dtype i32 for targets: graph.cross_entropy takes i64 class indices}}
  %loss = graph.cross_entropy %l, %t : (tensor<?x10xf32>, tensor<?xi32>) -> tensor<f32>
  func.return
}

// -----

func.func @cross_entropy_float_targets(%l: tensor<?x10xf32>, %t: tensor<?xf32>) {
  // expected-error@+1 {{unsupported dtype f32 for targets: graph.cross_entropy takes i64 class indices}}
  %loss = graph.cross_entropy %l, %t : (tensor<?x10xf32>, tensor<?xf32>) -> tensor<f32>
  func.return
}

// -----

func.func @cross_entropy_target_encoding(%l: tensor<?x10xf32>, %t: tensor<?xi64, "layout">) {
  // expected-error@+1 {{expected targets to have no tensor encoding}}
  %loss = graph.cross_entropy %l, %t : (tensor<?x10xf32>, tensor<?xi64, "layout">) -> tensor<f32>
  func.return
}

// -----

func.func @cross_entropy_zero_targets(%l: tensor<?x10xf32>, %t: tensor<0xi64>) {
  // expected-error@+1 {{targets has dimension 0 of size 0: sizes must be >= 1}}
  %loss = graph.cross_entropy %l, %t : (tensor<?x10xf32>, tensor<0xi64>) -> tensor<f32>
  func.return
}

// -----

func.func @cross_entropy_result_shape(%l: tensor<?x10xf32>, %t: tensor<?xi64>) {
  // expected-error@+1 {{expected result type tensor<f32>, got tensor<?xf32>}}
  %loss = graph.cross_entropy %l, %t : (tensor<?x10xf32>, tensor<?xi64>) -> tensor<?xf32>
  func.return
}

// -----

func.func @cross_entropy_result_dtype(%l: tensor<?x10xf32>, %t: tensor<?xi64>) {
  // expected-error@+1 {{unsupported dtype i64 for result: graph ops take f32 tensors}}
  %loss = graph.cross_entropy %l, %t : (tensor<?x10xf32>, tensor<?xi64>) -> tensor<i64>
  func.return
}

// -----

func.func @reduce_empty_axes(%x: tensor<?x16x8x8xf32>) {
  // expected-error@+1 {{expected at least one axis to reduce}}
  %y = graph.reduce_sum %x axes [] : (tensor<?x16x8x8xf32>) -> tensor<?x16x8x8xf32>
  func.return
}

// -----

func.func @reduce_axis_out_of_range(%x: tensor<?x16x8x8xf32>) {
  // expected-error@+1 {{expected axes in [0, 4) for input of rank 4, got [1, 4]}}
  %y = graph.reduce_mean %x axes [1, 4] : (tensor<?x16x8x8xf32>) -> tensor<?x8xf32>
  func.return
}

// -----

func.func @reduce_negative_axis(%x: tensor<?x16x8x8xf32>) {
  // expected-error@+1 {{expected axes in [0, 4) for input of rank 4, got [-1]}}
  %y = graph.reduce_sum %x axes [-1] : (tensor<?x16x8x8xf32>) -> tensor<?x16x8xf32>
  func.return
}

// -----

func.func @reduce_duplicate_axes(%x: tensor<?x16x8x8xf32>) {
  // expected-error@+1 {{expected unique axes, got [2, 3, 2]}}
  %y = graph.reduce_sum %x axes [2, 3, 2] : (tensor<?x16x8x8xf32>) -> tensor<?x16xf32>
  func.return
}

// -----

func.func @reduce_result_without_keepdims(%x: tensor<?x16x8x8xf32>) {
  // expected-error@+1 {{expected result type tensor<?x16x1x1xf32>, got tensor<?x16xf32>}}
  %y = graph.reduce_mean %x axes [2, 3] keepdims : (tensor<?x16x8x8xf32>) -> tensor<?x16xf32>
  func.return
}

// -----

func.func @reduce_dtype(%x: tensor<?x16xi64>) {
  // expected-error@+1 {{unsupported dtype i64 for input: graph ops take f32 tensors}}
  %y = graph.reduce_sum %x axes [1] : (tensor<?x16xi64>) -> tensor<?xi64>
  func.return
}

// -----

func.func @parse_reduce_missing_axes(%x: tensor<?x16xf32>) {
  // expected-error@+1 {{expected the 'axes' option of graph.reduce_mean}}
  %y = graph.reduce_mean %x keepdims : (tensor<?x16xf32>) -> tensor<?x1xf32>
  func.return
}

// -----

func.func @parse_reduce_axes_not_integers(%x: tensor<?x16xf32>) {
  // expected-error@+1 {{Expected integer literal}}
  %y = graph.reduce_sum %x axes [a] : (tensor<?x16xf32>) -> tensor<?xf32>
  func.return
}

// -----

func.func @generic_reduce_missing_axes(%x: tensor<?x16xf32>) {
  // expected-error@+1 {{property 'axes' expected}}
  %y = "graph.reduce_sum"(%x) : (tensor<?x16xf32>) -> tensor<?xf32>
  func.return
}
