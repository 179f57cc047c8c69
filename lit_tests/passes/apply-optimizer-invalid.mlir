// RUN: teeny-opt %s -p 'apply-optimizer{lr=0.1}' --split-input-file --verify-diagnostics

// Bad option values are errors located at @forward (line 19), all reported.
// RUN: not teeny-opt %s -p 'apply-optimizer{lr=0}' --split-input-file 2>&1 | filecheck %s --check-prefix=LR
// LR: apply-optimizer-invalid.mlir:19:1: error: apply-optimizer: expected lr to be finite and > 0, got 0.0
// RUN: not teeny-opt %s -p 'apply-optimizer{kind=adamw betas=1.0,0.9 eps=0 momentum=0.9}' --split-input-file 2>&1 | filecheck %s --check-prefix=ADAMW
// ADAMW: error: apply-optimizer: momentum=0.9 does not apply to kind=adamw (its momentum is betas[0])
// ADAMW: error: apply-optimizer: expected betas[0] in [0, 1), got 1.0
// ADAMW: error: apply-optimizer: expected eps to be finite and > 0, got 0.0
// RUN: not teeny-opt %s -p 'apply-optimizer{momentum=1.5 weight-decay=-1 eps=0}' --split-input-file 2>&1 | filecheck %s --check-prefix=SGD
// SGD: error: apply-optimizer: expected weight-decay to be finite and >= 0, got -1.0
// SGD: error: apply-optimizer: expected momentum in [0, 1), got 1.5
// SGD: error: apply-optimizer: expected eps to be finite and > 0, got 0.0
// RUN: not teeny-opt %s -p 'apply-optimizer{kind=adam}' 2>&1 | filecheck %s --check-prefix=KIND
// KIND: {{^}}teeny-opt: <pipeline>:1:1: error: bad value 'adam' for option 'kind' of pass 'apply-optimizer': expected one of sgd, adamw; did you mean 'adamw'?{{$}}

// No result carries teeny.grad: nothing to apply (insert-backward has not run).
// expected-error@+1 {{apply-optimizer found no gradient: no result of @forward carries a 'teeny.grad' attribute (run insert-backward first)}}
func.func @forward(%x: tensor<2x4xf32>) -> (tensor<f32>, tensor<4xf32> {teeny.running = "m"}) {
  %m = graph.param "m" : tensor<4xf32>
  %l = graph.reduce_sum %x axes [0, 1] : (tensor<2x4xf32>) -> tensor<f32>
  func.return %l, %m : tensor<f32>, tensor<4xf32>
}

// -----

// Every bad gradient result is reported.
// expected-error@+4 {{results #0 and #1 are both the gradient of 'a'}}
// expected-error@+3 {{result #2 is the gradient of 'nope', which no graph.param of @forward declares}}
// expected-error@+2 {{result #3, the gradient of 'b', has type tensor<4xf32>; the parameter is tensor<2x2xf32>}}
// expected-error@+1 {{result #4: 'teeny.grad' must be a non-empty string, got 1 : i64}}
func.func @forward(%x: tensor<4xf32>) -> (tensor<4xf32> {teeny.grad = "a"}, tensor<4xf32> {teeny.grad = "a"}, tensor<4xf32> {teeny.grad = "nope"}, tensor<4xf32> {teeny.grad = "b"}, tensor<4xf32> {teeny.grad = 1}) {
  %a = graph.param "a" : tensor<4xf32>
  %b = graph.param "b" : tensor<2x2xf32>
  func.return %x, %x, %x, %x, %x : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// The step has been appended already.
// expected-error@+1 {{apply-optimizer has already run on @forward: result #1 carries 'teeny.updated'}}
func.func @forward(%x: tensor<4xf32>) -> (tensor<4xf32> {teeny.grad = "a"}, tensor<4xf32> {teeny.updated = "a"}) {
  %a = graph.param "a" : tensor<4xf32>
  %u = graph.sgd_update %a, %x lr 1.000000e-01 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %x, %u : tensor<4xf32>, tensor<4xf32>
}

// -----

// The training contract is about @forward.
// expected-error@+1 {{apply-optimizer needs a func.func @forward (the training function)}}
module {
  func.func @train(%x: tensor<4xf32>) -> (tensor<4xf32> {teeny.grad = "a"}) {
    %a = graph.param "a" : tensor<4xf32>
    func.return %x : tensor<4xf32>
  }
}
