// RUN: teeny-opt %s -p 'sync-batch-norm{world=2}' --split-input-file --verify-diagnostics

// world < 1 is an error located at @forward (line 12).
// RUN: not teeny-opt %s -p 'train-mode,sync-batch-norm{world=0}' --split-input-file 2>&1 | filecheck %s --check-prefix=WORLD
// WORLD: sync-batch-norm-invalid.mlir:12:1: error: sync-batch-norm: expected world (the number of ranks) >= 1, got 0
// Through teeny-training the bad world reaches the pass, which refuses it.
// RUN: not teeny-opt %s -p 'teeny-training{world=-1 sync-bn=true}' --split-input-file 2>&1 | filecheck %s --check-prefix=PIPELINE
// PIPELINE: sync-batch-norm-invalid.mlir:12:1: error: sync-batch-norm: expected world (the number of ranks) >= 1, got -1

// An inference batch norm has no batch statistics to synchronise: train-mode
// must run first. Each one is reported where it is.
func.func @forward(%x: tensor<?x4x5x5xf32>) -> tensor<?x4x5x5xf32> {
  %g = graph.param "bn.weight" : tensor<4xf32>
  %b = graph.param "bn.bias" : tensor<4xf32>
  %m = graph.param "bn.running_mean" : tensor<4xf32>
  %v = graph.param "bn.running_var" : tensor<4xf32>
  // expected-error@+1 {{sync-batch-norm: 'graph.batch_norm' is in inference form (running statistics, nothing to synchronise): run train-mode first}}
  %y = graph.batch_norm %x, %g, %b, %m, %v : (tensor<?x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x4x5x5xf32>
  // expected-error@+1 {{sync-batch-norm: 'graph.batch_norm' is in inference form}}
  %z = graph.batch_norm %y, %g, %b, %m, %v activation silu : (tensor<?x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x4x5x5xf32>
  func.return %z : tensor<?x4x5x5xf32>
}

// -----

// expected-error@below {{sync-batch-norm expects a function @forward}}
builtin.module {
  func.func @main(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
    func.return %x : tensor<?x4xf32>
  }
}
