// RUN: teeny-opt %s -p fuse-attention --split-input-file --verify-diagnostics

// fuse-attention refuses nothing: a candidate that cannot fuse (a last-axis
// softmax of a product) stays as it is, with one remark at its softmax.

func.func @probabilities_used_twice(%q: tensor<2x5x8xf32>, %kt: tensor<2x8x6xf32>, %v: tensor<2x6x4xf32>) -> (tensor<2x5x4xf32>, tensor<2x5x6xf32>) {
  %s = graph.matmul %q, %kt : (tensor<2x5x8xf32>, tensor<2x8x6xf32>) -> tensor<2x5x6xf32>
  // expected-remark@+1 {{attention not fused: the probabilities have 2 uses}}
  %p = graph.softmax %s axis 2 : (tensor<2x5x6xf32>) -> tensor<2x5x6xf32>
  %o = graph.matmul %p, %v : (tensor<2x5x6xf32>, tensor<2x6x4xf32>) -> tensor<2x5x4xf32>
  func.return %o, %p : tensor<2x5x4xf32>, tensor<2x5x6xf32>
}

// -----

func.func @over_the_queries(%q: tensor<2x5x8xf32>, %kt: tensor<2x8x6xf32>, %v: tensor<2x6x4xf32>) -> tensor<2x5x4xf32> {
  %s = graph.matmul %q, %kt : (tensor<2x5x8xf32>, tensor<2x8x6xf32>) -> tensor<2x5x6xf32>
  // expected-remark@+1 {{attention not fused: the softmax is not along the last axis (the keys)}}
  %p = graph.softmax %s axis 1 : (tensor<2x5x6xf32>) -> tensor<2x5x6xf32>
  %o = graph.matmul %p, %v : (tensor<2x5x6xf32>, tensor<2x6x4xf32>) -> tensor<2x5x4xf32>
  func.return %o : tensor<2x5x4xf32>
}

// -----

func.func @scores_with_an_activation(%q: tensor<2x5x8xf32>, %kt: tensor<2x8x6xf32>, %v: tensor<2x6x4xf32>) -> tensor<2x5x4xf32> {
  %s = graph.matmul %q, %kt activation relu : (tensor<2x5x8xf32>, tensor<2x8x6xf32>) -> tensor<2x5x6xf32>
  // expected-remark@+1 {{attention not fused: the scores product carries a bias or an activation}}
  %p = graph.softmax %s axis 2 : (tensor<2x5x6xf32>) -> tensor<2x5x6xf32>
  %o = graph.matmul %p, %v : (tensor<2x5x6xf32>, tensor<2x6x4xf32>) -> tensor<2x5x4xf32>
  func.return %o : tensor<2x5x4xf32>
}

// -----

func.func @head_dim_over_the_limit(%q: tensor<1x5x300xf32>, %kt: tensor<1x300x6xf32>, %v: tensor<1x6x4xf32>) -> tensor<1x5x4xf32> {
  %s = graph.matmul %q, %kt : (tensor<1x5x300xf32>, tensor<1x300x6xf32>) -> tensor<1x5x6xf32>
  // expected-remark@+1 {{attention not fused: head dimension Dk = 300 exceeds the attention kernels' 256}}
  %p = graph.softmax %s axis 2 : (tensor<1x5x6xf32>) -> tensor<1x5x6xf32>
  %o = graph.matmul %p, %v : (tensor<1x5x6xf32>, tensor<1x6x4xf32>) -> tensor<1x5x4xf32>
  func.return %o : tensor<1x5x4xf32>
}

// -----

// A softmax that no product feeds is no candidate: no remark.
func.func @plain_softmax(%x: tensor<2x5x6xf32>) -> tensor<2x5x6xf32> {
  %p = graph.softmax %x axis 2 : (tensor<2x5x6xf32>) -> tensor<2x5x6xf32>
  func.return %p : tensor<2x5x6xf32>
}
