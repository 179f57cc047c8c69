// RUN: teeny-opt %s --split-input-file --verify-diagnostics

func.func @linear_activation_unknown(%x: tensor<?x4xf32>) {
  %w = graph.param "w" : tensor<3x4xf32>
  // The epilogue entries of the pointwise table, in its order (silu among them).
  // expected-error-re@+1 {{expected activation to be one of {{([a-z_]+, )*silu(, [a-z_]+)*$}}}}
  %y = graph.linear %x, %w activation gelu : (tensor<?x4xf32>, tensor<3x4xf32>) -> tensor<?x3xf32>
  func.return
}

// -----

func.func @linear_activation_generic(%x: tensor<?x4xf32>) {
  %w = graph.param "w" : tensor<3x4xf32>
  // expected-error-re@+1 {{expected activation to be an epilogue entry of the pointwise table, got 'gelu' (entries: {{([a-z_]+, )*silu(, [a-z_]+)*}})}}
  %y = "graph.linear"(%x, %w) <{activation = "gelu"}> : (tensor<?x4xf32>, tensor<3x4xf32>) -> tensor<?x3xf32>
  func.return
}
