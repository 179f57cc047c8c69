// RUN: teeny-opt %s -p insert-backward --split-input-file --verify-diagnostics

func.func @forward(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %w = graph.param "w" : tensor<4xf32>
  %y = graph.mul %x, %w : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  // expected-error@+1 {{insert-backward expects @forward's first result to be the loss, a scalar tensor<f32>, got tensor<?x4xf32>}}
  func.return %y : tensor<?x4xf32>
}

// -----

// An op on the way from a parameter to the loss that has no gradient is named,
// with its location (every such op), and nothing is changed.
func.func @forward(%x: tensor<?x4xf32>, %g: tensor<?x4xf32>) -> tensor<f32> {
  %w = graph.param "w" : tensor<4xf32>
  %y = graph.mul %x, %w : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  // expected-error@+1 {{insert-backward: 'graph.activation_grad' is not differentiable: the derivative of an activation's gradient (second order) is not supported}}
  %d = graph.activation_grad %y, %g activation relu : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %l = graph.reduce_sum %d axes [0, 1] : (tensor<?x4xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// -----

// expected-error@below {{insert-backward expects a function @forward}}
builtin.module {
  func.func @main(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
    func.return %x : tensor<?x4xf32>
  }
}
