// RUN: teeny-opt %s --split-input-file --verify-diagnostics

func.func @celu_alpha_zero(%x: tensor<?x4xf32>) {
  // expected-error@+1 {{expected alpha to be positive, got 0.0}}
  %y = graph.celu %x alpha 0.0 : tensor<?x4xf32>
  func.return
}

// -----

func.func @celu_alpha_negative(%x: tensor<?x4xf32>) {
  // expected-error@+1 {{expected alpha to be positive, got -1.0}}
  %y = graph.celu %x alpha -1.0 : tensor<?x4xf32>
  func.return
}

// -----

func.func @elu_alpha_infinite(%x: tensor<?x4xf32>) {
  // expected-error@+1 {{expected alpha to be finite, got inf}}
  %y = graph.elu %x alpha 0x7FF0000000000000 : tensor<?x4xf32>
  func.return
}

// -----

func.func @elu_unknown_option(%x: tensor<?x4xf32>) {
  // expected-error@+1 {{Expected ':'}}
  %y = graph.elu %x beta 1.0 : tensor<?x4xf32>
  func.return
}

// -----

func.func @pow_shapes(%x: tensor<?x4xf32>, %y: tensor<3xf32>) {
  // expected-error@+1 {{cannot broadcast shapes [?, 4] and [3]: sizes 4 and 3 differ at result dimension 1}}
  %z = graph.pow %x, %y : (tensor<?x4xf32>, tensor<3xf32>) -> tensor<?x4xf32>
  func.return
}
