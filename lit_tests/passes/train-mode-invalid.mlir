// RUN: teeny-opt %s -p train-mode --split-input-file --verify-diagnostics

// The running statistics must be graph.param ops: their updates are named by them.
func.func @forward(%x: tensor<?x4x5x5xf32>, %m: tensor<4xf32>) -> tensor<?x4x5x5xf32> {
  %g = graph.param "bn.weight" : tensor<4xf32>
  %v = graph.param "bn.running_var" : tensor<4xf32>
  // expected-error@+1 {{train-mode: the running mean of 'graph.batch_norm' is not a graph.param, so its update cannot be named}}
  %y = graph.batch_norm %x, %g, %g, %m, %v : (tensor<?x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x4x5x5xf32>
  func.return %y : tensor<?x4x5x5xf32>
}

// -----

// expected-error@below {{train-mode expects a function @forward}}
builtin.module {
  func.func @main(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
    func.return %x : tensor<?x4xf32>
  }
}
