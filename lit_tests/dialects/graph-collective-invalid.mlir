// RUN: teeny-opt %s --split-input-file --verify-diagnostics

func.func @world_zero(%x: tensor<4xf32>) {
  // expected-error@+1 {{expected world (the number of ranks) >= 1, got 0}}
  %y = graph.all_reduce %x reduction mean world 0 : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @unknown_reduction(%x: tensor<4xf32>) {
  // expected-error@+1 {{expected reduction to be one of mean, sum}}
  %y = graph.all_reduce %x reduction max world 2 : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

// The generic form reaches the verifier with any string.
func.func @generic_reduction(%x: tensor<4xf32>) {
  // expected-error@+1 {{expected reduction to be one of mean, sum, got 'prod'}}
  %y = "graph.all_reduce"(%x) <{reduction = "prod", world = 2 : i64}> : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @missing_world(%x: tensor<4xf32>) {
  // expected-error@+1 {{expected the 'world' option of graph.all_reduce}}
  %y = graph.all_reduce %x reduction sum : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

// Every rank must hold a value of one shape: no dynamic batch.
func.func @dynamic_batch(%x: tensor<?x4xf32>) {
  // expected-error@+1 {{expected a fully static input, got shape [?, 4]: every rank must hold a value of one shape, and the ranks' batches may differ}}
  %y = graph.all_reduce %x reduction sum world 2 : (tensor<?x4xf32>) -> tensor<?x4xf32>
  func.return
}

// -----

func.func @result_type(%x: tensor<4xf32>) {
  // expected-error@+1 {{expected result type tensor<4xf32>, got tensor<2x2xf32>}}
  %y = graph.all_reduce %x reduction sum world 2 : (tensor<4xf32>) -> tensor<2x2xf32>
  func.return
}

// -----

func.func @dtype(%x: tensor<4xi64>) {
  // expected-error@+1 {{unsupported dtype i64 for input: graph ops take f32 tensors}}
  %y = graph.all_reduce %x reduction sum world 2 : (tensor<4xi64>) -> tensor<4xi64>
  func.return
}
