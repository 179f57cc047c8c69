// RUN: teeny-opt %s -p select-conv-algorithm --split-input-file --verify-diagnostics

// Depthwise convolutions have no kernel yet: each is an error, and one run
// reports all of them (gemm and implicit-gemm convolutions are fine).

func.func @depthwise(%x: tensor<?x8x6x6xf32>) -> tensor<?x8x6x6xf32> {
  %w = graph.param "w" : tensor<8x1x3x3xf32>
  // expected-error@+1 {{convolution algorithm 'depthwise' is not supported yet (kernels exist for gemm and implicit-gemm convolutions only)}}
  %y = graph.fused_conv2d %x, %w padding [1, 1, 1, 1] groups 8 scale #derive.param<fill(1.0) : [8]> shift #derive.param<fill(0.0) : [8]> : (tensor<?x8x6x6xf32>, tensor<8x1x3x3xf32>) -> tensor<?x8x6x6xf32>
  func.return %y : tensor<?x8x6x6xf32>
}

// -----

// Every unsupported convolution in the function is reported, fused or plain;
// the implicit-gemm and gemm ones between them are not.
func.func @all_reported(%x: tensor<?x4x8x8xf32>) -> (tensor<?x4x8x8xf32>, tensor<?x4x6x6xf32>, tensor<?x4x8x8xf32>, tensor<?x4x8x8xf32>) {
  %wd = graph.param "wd" : tensor<4x1x3x3xf32>
  %w3 = graph.param "w3" : tensor<4x4x3x3xf32>
  %w1 = graph.param "w1" : tensor<4x4x1x1xf32>
  // expected-error@+1 {{convolution algorithm 'depthwise' is not supported yet}}
  %a = graph.conv2d %x, %wd padding [1, 1, 1, 1] groups 4 : (tensor<?x4x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<?x4x8x8xf32>
  %b = graph.conv2d %x, %w3 : (tensor<?x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<?x4x6x6xf32>
  // expected-error@+1 {{convolution algorithm 'depthwise' is not supported yet}}
  %c = graph.fused_conv2d %x, %wd padding [1, 1, 1, 1] groups 4 scale #derive.param<fill(1.0) : [4]> shift #derive.param<fill(0.0) : [4]> : (tensor<?x4x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<?x4x8x8xf32>
  %e = graph.conv2d %x, %w1 : (tensor<?x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<?x4x8x8xf32>
  func.return %a, %b, %c, %e : tensor<?x4x8x8xf32>, tensor<?x4x6x6xf32>, tensor<?x4x8x8xf32>, tensor<?x4x8x8xf32>
}

// -----

// A plain conv's bias becomes the shift derivation, which names a weight.
func.func @bias_not_a_param(%x: tensor<?x2x4x4xf32>, %b: tensor<4xf32>) -> tensor<?x4x4x4xf32> {
  %w = graph.param "w" : tensor<4x2x1x1xf32>
  // expected-error@+1 {{the convolution bias must be a graph.param (the shift derivation names it)}}
  %y = graph.conv2d %x, %w, %b : (tensor<?x2x4x4xf32>, tensor<4x2x1x1xf32>, tensor<4xf32>) -> tensor<?x4x4x4xf32>
  func.return %y : tensor<?x4x4x4xf32>
}
