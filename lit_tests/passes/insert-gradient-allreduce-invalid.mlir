// RUN: teeny-opt %s -p 'insert-gradient-allreduce{world=2}' --split-input-file --verify-diagnostics

// Bad option values are errors located at @forward (line 16).
// RUN: not teeny-opt %s -p 'insert-gradient-allreduce{world=0}' --split-input-file 2>&1 | filecheck %s --check-prefix=WORLD
// WORLD: insert-gradient-allreduce-invalid.mlir:16:1: error: insert-gradient-allreduce: expected world (the number of ranks) >= 1, got 0
// RUN: not teeny-opt %s -p 'insert-gradient-allreduce{world=two}' 2>&1 | filecheck %s --check-prefix=TYPE
// TYPE: {{^}}teeny-opt: <pipeline>:1:1: error: bad value 'two' for option 'world' of pass 'insert-gradient-allreduce': expected an integer{{$}}

// A second run is refused, not repeated: it would average twice.
// RUN: not teeny-opt %s -p 'insert-gradient-allreduce{world=2},insert-gradient-allreduce{world=2}' --split-input-file 2>&1 | filecheck %s --check-prefix=TWICE
// TWICE: insert-gradient-allreduce-invalid.mlir:16:1: error: insert-gradient-allreduce: 2 of 2 gradients are already all-reduced (result #1, the gradient of 'w', over 2 ranks): the pass has run on @forward, and is not repeated
// RUN: not teeny-opt %s -p 'insert-gradient-allreduce{world=2},apply-optimizer{lr=0.1},insert-gradient-allreduce{world=2}' --split-input-file 2>&1 | filecheck %s --check-prefix=STEPPED
// STEPPED: error: insert-gradient-allreduce: apply-optimizer has already run on @forward (result #3 carries 'teeny.updated'): average the gradients before the optimizer step

// A module after insert-backward: the pass inserts its all-reduces here.
func.func @forward(%x: tensor<2x4xf32>) -> (tensor<f32>, tensor<4xf32> {teeny.grad = "w"}, tensor<4xf32> {teeny.grad = "b"}) {
  %w = graph.param "w" : tensor<4xf32>
  %b = graph.param "b" : tensor<4xf32>
  %l = graph.reduce_sum %x axes [0, 1] : (tensor<2x4xf32>) -> tensor<f32>
  %g = graph.reduce_sum %x axes [0] : (tensor<2x4xf32>) -> tensor<4xf32>
  func.return %l, %g, %g : tensor<f32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// No result carries teeny.grad: insert-backward has not run.
// expected-error@+1 {{insert-gradient-allreduce: found no gradient: no result of @forward carries a 'teeny.grad' attribute (run insert-backward first)}}
func.func @forward(%x: tensor<2x4xf32>) -> (tensor<f32>, tensor<4xf32> {teeny.running = "m"}) {
  %m = graph.param "m" : tensor<4xf32>
  %l = graph.reduce_sum %x axes [0, 1] : (tensor<2x4xf32>) -> tensor<f32>
  func.return %l, %m : tensor<f32>, tensor<4xf32>
}

// -----

// expected-error@below {{insert-gradient-allreduce expects a function @forward}}
builtin.module {
  func.func @main(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
    func.return %x : tensor<?x4xf32>
  }
}
