// RUN: teeny-opt %s --split-input-file --verify-diagnostics

func.func @softmax_backward_grad_type(%y: tensor<?x10xf32>, %dy: tensor<?x9xf32>) {
  // expected-error@+1 {{expected dy to have the type of y, tensor<?x10xf32>, got tensor<?x9xf32>}}
  %dx = graph.softmax_backward %y, %dy axis 1 : (tensor<?x10xf32>, tensor<?x9xf32>) -> tensor<?x10xf32>
  func.return
}

// -----

func.func @softmax_backward_axis_out_of_range(%y: tensor<?x10xf32>) {
  // expected-error@+1 {{expected axis in [0, 2) for input of rank 2, got 2}}
  %dx = graph.softmax_backward %y, %y axis 2 : (tensor<?x10xf32>, tensor<?x10xf32>) -> tensor<?x10xf32>
  func.return
}

// -----

func.func @log_softmax_backward_result_type(%y: tensor<?x10xf32>) {
  // expected-error@+1 {{expected result type tensor<?x10xf32>, got tensor<?x9xf32>}}
  %dx = graph.log_softmax_backward %y, %y axis 1 : (tensor<?x10xf32>, tensor<?x10xf32>) -> tensor<?x9xf32>
  func.return
}

// -----

func.func @log_softmax_backward_rank_0(%y: tensor<f32>) {
  // expected-error@+1 {{expected input of rank >= 1, got rank 0}}
  %dx = graph.log_softmax_backward %y, %y axis 0 : (tensor<f32>, tensor<f32>) -> tensor<f32>
  func.return
}

// -----

func.func @softmax_backward_dtype(%y: tensor<?x10xi64>) {
  // expected-error@+1 {{unsupported dtype i64 for y: graph ops take f32 tensors}}
  %dx = graph.softmax_backward %y, %y axis 1 : (tensor<?x10xi64>, tensor<?x10xi64>) -> tensor<?x10xi64>
  func.return
}

// -----

func.func @softmax_backward_missing_axis(%y: tensor<?x10xf32>) {
  // expected-error@+1 {{expected the 'axis' option of graph.softmax_backward}}
  %dx = graph.softmax_backward %y, %y : (tensor<?x10xf32>, tensor<?x10xf32>) -> tensor<?x10xf32>
  func.return
}

// -----

func.func @cross_entropy_backward_grad_not_scalar(%l: tensor<?x10xf32>, %t: tensor<?xi64>, %g: tensor<1xf32>) {
  // expected-error@+1 {{expected g to be a scalar tensor<f32>, got shape [1]}}
  %dl = graph.cross_entropy_backward %l, %t, %g : (tensor<?x10xf32>, tensor<?xi64>, tensor<1xf32>) -> tensor<?x10xf32>
  func.return
}

// -----

func.func @cross_entropy_backward_targets_dtype(%l: tensor<?x10xf32>, %t: tensor<?xi32>, %g: tensor<f32>) {
  // expected-error@+1 {{unsupported dtype i32 for targets: graph.cross_entropy takes i64 class indices}}
  %dl = graph.cross_entropy_backward %l, %t, %g : (tensor<?x10xf32>, tensor<?xi32>, tensor<f32>) -> tensor<?x10xf32>
  func.return
}

// -----

func.func @cross_entropy_backward_batch_mismatch(%l: tensor<4x10xf32>, %t: tensor<3xi64>, %g: tensor<f32>) {
  // expected-error@+1 {{expected targets of shape [N] = [4], got [3]}}
  %dl = graph.cross_entropy_backward %l, %t, %g : (tensor<4x10xf32>, tensor<3xi64>, tensor<f32>) -> tensor<4x10xf32>
  func.return
}

// -----

func.func @cross_entropy_backward_result_type(%l: tensor<?x10xf32>, %t: tensor<?xi64>, %g: tensor<f32>) {
  // expected-error@+1 {{expected result type tensor<?x10xf32>, got tensor<f32>}}
  %dl = graph.cross_entropy_backward %l, %t, %g : (tensor<?x10xf32>, tensor<?xi64>, tensor<f32>) -> tensor<f32>
  func.return
}
