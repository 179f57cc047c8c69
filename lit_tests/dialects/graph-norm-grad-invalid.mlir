// RUN: teeny-opt %s --split-input-file --verify-diagnostics

func.func @batch_norm_backward_rank(%x: tensor<16xf32>, %g: tensor<16xf32>, %dy: tensor<16xf32>) {
  // expected-error@+1 {{expected input of rank >= 2 [N, C, ...], got rank 1}}
  %dx, %dg, %db = graph.batch_norm_backward %x, %g, %dy : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  func.return
}

// -----

func.func @batch_norm_backward_gamma(%x: tensor<?x16x4x4xf32>, %g: tensor<8xf32>, %dy: tensor<?x16x4x4xf32>) {
  // expected-error@+1 {{expected gamma shape [16], got [8]}}
  %dx, %dg, %db = graph.batch_norm_backward %x, %g, %dy : (tensor<?x16x4x4xf32>, tensor<8xf32>, tensor<?x16x4x4xf32>) -> (tensor<?x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>)
  func.return
}

// -----

func.func @batch_norm_backward_grad(%x: tensor<?x16x4x4xf32>, %g: tensor<16xf32>, %dy: tensor<?x16x4x5xf32>) {
  // expected-error@+1 {{expected grad of the input's type tensor<?x16x4x4xf32>, got tensor<?x16x4x5xf32>}}
  %dx, %dg, %db = graph.batch_norm_backward %x, %g, %dy : (tensor<?x16x4x4xf32>, tensor<16xf32>, tensor<?x16x4x5xf32>) -> (tensor<?x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>)
  func.return
}

// -----

func.func @batch_norm_backward_eps(%x: tensor<?x16x4x4xf32>, %g: tensor<16xf32>, %dy: tensor<?x16x4x4xf32>) {
  // expected-error@+1 {{expected eps to be finite and > 0, got -0.001}}
  %dx, %dg, %db = graph.batch_norm_backward %x, %g, %dy eps -1.0e-03 : (tensor<?x16x4x4xf32>, tensor<16xf32>, tensor<?x16x4x4xf32>) -> (tensor<?x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>)
  func.return
}

// -----

func.func @batch_norm_backward_input_grad(%x: tensor<?x16x4x4xf32>, %g: tensor<16xf32>, %dy: tensor<?x16x4x4xf32>) {
  // expected-error@+1 {{expected result type tensor<?x16x4x4xf32>, got tensor<3x16x4x4xf32>}}
  %dx, %dg, %db = graph.batch_norm_backward %x, %g, %dy : (tensor<?x16x4x4xf32>, tensor<16xf32>, tensor<?x16x4x4xf32>) -> (tensor<3x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>)
  func.return
}

// -----

func.func @batch_norm_backward_gamma_grad(%x: tensor<?x16x4x4xf32>, %g: tensor<16xf32>, %dy: tensor<?x16x4x4xf32>) {
  // expected-error@+1 {{expected gamma gradient type tensor<16xf32>, got tensor<8xf32>}}
  %dx, %dg, %db = graph.batch_norm_backward %x, %g, %dy : (tensor<?x16x4x4xf32>, tensor<16xf32>, tensor<?x16x4x4xf32>) -> (tensor<?x16x4x4xf32>, tensor<8xf32>, tensor<16xf32>)
  func.return
}

// -----

func.func @batch_norm_backward_result_count(%x: tensor<?x16x4x4xf32>, %g: tensor<16xf32>, %dy: tensor<?x16x4x4xf32>) {
  // expected-error@+1 {{Expected 3 results, but got 2}}
  %dx, %dg = graph.batch_norm_backward %x, %g, %dy : (tensor<?x16x4x4xf32>, tensor<16xf32>, tensor<?x16x4x4xf32>) -> (tensor<?x16x4x4xf32>, tensor<16xf32>)
  func.return
}

// -----

func.func @batch_norm_backward_unknown_option(%x: tensor<?x16x4x4xf32>, %g: tensor<16xf32>, %dy: tensor<?x16x4x4xf32>) {
  // expected-error@+1 {{Expected ':'}}
  %dx, %dg, %db = graph.batch_norm_backward %x, %g, %dy momentum 0.1 : (tensor<?x16x4x4xf32>, tensor<16xf32>, tensor<?x16x4x4xf32>) -> (tensor<?x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>)
  func.return
}
