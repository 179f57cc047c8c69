// RUN: teeny-opt %s -p select-conv-algorithm --split-input-file --verify-diagnostics

// A plain conv's bias becomes the shift derivation, which names a weight.
func.func @bias_not_a_param(%x: tensor<?x2x4x4xf32>, %b: tensor<4xf32>) -> tensor<?x4x4x4xf32> {
  %w = graph.param "w" : tensor<4x2x1x1xf32>
  // expected-error@+1 {{the convolution bias must be a graph.param (the shift derivation names it)}}
  %y = graph.conv2d %x, %w, %b : (tensor<?x2x4x4xf32>, tensor<4x2x1x1xf32>, tensor<4xf32>) -> tensor<?x4x4x4xf32>
  func.return %y : tensor<?x4x4x4xf32>
}

// -----

// Every refused convolution in the function is reported; the others between
// them (depthwise, implicit-gemm, gemm) are marked.
func.func @all_reported(%x: tensor<?x4x8x8xf32>, %b: tensor<4xf32>) -> (tensor<?x4x8x8xf32>, tensor<?x4x6x6xf32>, tensor<?x4x8x8xf32>, tensor<?x4x8x8xf32>) {
  %wd = graph.param "wd" : tensor<4x1x3x3xf32>
  %w3 = graph.param "w3" : tensor<4x4x3x3xf32>
  %w1 = graph.param "w1" : tensor<4x4x1x1xf32>
  // expected-error@+1 {{the convolution bias must be a graph.param}}
  %a = graph.conv2d %x, %wd, %b padding [1, 1, 1, 1] groups 4 : (tensor<?x4x8x8xf32>, tensor<4x1x3x3xf32>, tensor<4xf32>) -> tensor<?x4x8x8xf32>
  %c = graph.conv2d %x, %w3 : (tensor<?x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<?x4x6x6xf32>
  %d = graph.conv2d %x, %wd padding [1, 1, 1, 1] groups 4 : (tensor<?x4x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<?x4x8x8xf32>
  // expected-error@+1 {{the convolution bias must be a graph.param}}
  %e = graph.conv2d %x, %w1, %b : (tensor<?x4x8x8xf32>, tensor<4x4x1x1xf32>, tensor<4xf32>) -> tensor<?x4x8x8xf32>
  func.return %a, %c, %d, %e : tensor<?x4x8x8xf32>, tensor<?x4x6x6xf32>, tensor<?x4x8x8xf32>, tensor<?x4x8x8xf32>
}
