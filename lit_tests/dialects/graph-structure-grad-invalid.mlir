// RUN: teeny-opt %s --split-input-file --verify-diagnostics

func.func @broadcast_incompatible(%g: tensor<?x9xf32>) {
  // expected-error@+1 {{cannot broadcast shapes [?, 9] and [?, 10]: sizes 9 and 10 differ at result dimension 1}}
  %y = graph.broadcast %g : (tensor<?x9xf32>) -> tensor<?x10xf32>
  func.return
}

// -----

// Broadcasting never shrinks: the result must be the broadcast shape.
func.func @broadcast_shrinks(%g: tensor<4x10xf32>) {
  // expected-error@+1 {{cannot broadcast [4, 10] to [1, 10]: broadcasting them gives [4, 10]}}
  %y = graph.broadcast %g : (tensor<4x10xf32>) -> tensor<1x10xf32>
  func.return
}

// -----

func.func @broadcast_drops_batch(%g: tensor<?x10xf32>) {
  // expected-error@+1 {{cannot broadcast [?, 10] to [1, 10]: broadcasting them gives [?, 10]}}
  %y = graph.broadcast %g : (tensor<?x10xf32>) -> tensor<1x10xf32>
  func.return
}

// -----

func.func @broadcast_dynamic_against_static(%g: tensor<?x10xf32>) {
  // expected-error@+1 {{cannot broadcast dynamic dimension against static size 3 (shapes [?, 10] and [3, 10])}}
  %y = graph.broadcast %g : (tensor<?x10xf32>) -> tensor<3x10xf32>
  func.return
}

// -----

func.func @broadcast_needs_batch_source(%g: tensor<f32>) {
  // expected-error@+1 {{broadcasting [] to the dynamic batch of [?, 10] needs a batch source operand (a tensor whose dimension 0 is the batch)}}
  %y = graph.broadcast %g : (tensor<f32>) -> tensor<?x10xf32>
  func.return
}

// -----

func.func @broadcast_unexpected_batch_source(%g: tensor<?x1xf32>, %x: tensor<?x3xf32>) {
  // expected-error@+1 {{unexpected batch source: the result has no dynamic batch, or the input carries it}}
  %y = graph.broadcast %g, %x : (tensor<?x1xf32>, tensor<?x3xf32>) -> tensor<?x10xf32>
  func.return
}

// -----

func.func @broadcast_static_batch_source(%g: tensor<f32>, %x: tensor<4x3xf32>) {
  // expected-error@+1 {{expected the batch source to have a dynamic batch dimension 0, got shape [4, 3]}}
  %y = graph.broadcast %g, %x : (tensor<f32>, tensor<4x3xf32>) -> tensor<?x10xf32>
  func.return
}

// -----

func.func @broadcast_dtype(%g: tensor<?x1xi64>) {
  // expected-error@+1 {{unsupported dtype i64 for input: graph ops take f32 tensors}}
  %y = graph.broadcast %g : (tensor<?x1xi64>) -> tensor<?x10xf32>
  func.return
}

// -----

func.func @broadcast_two_sources(%g: tensor<f32>, %x: tensor<?x3xf32>) {
  // expected-error@+1 {{Expected 1 or 2 operands, but got 3}}
  %y = graph.broadcast %g, %x, %x : (tensor<f32>, tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<?x10xf32>
  func.return
}
