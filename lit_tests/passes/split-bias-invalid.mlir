// RUN: teeny-opt %s -p split-bias --split-input-file --verify-diagnostics

// split-bias refuses nothing and emits no diagnostics of its own: every input
// that verifies is rewritten silently (no annotation below may go unmatched, and
// no diagnostic may appear unannotated). Invalid IR never reaches the pass.

func.func @bias_of_wrong_size(%x: tensor<?x2x4x4xf32>) -> tensor<?x4x4x4xf32> {
  %w = graph.param "w" : tensor<4x2x1x1xf32>
  %b = graph.param "b" : tensor<3xf32>
  // expected-error@+1 {{expected bias shape [4], got [3]}}
  %y = graph.conv2d %x, %w, %b : (tensor<?x2x4x4xf32>, tensor<4x2x1x1xf32>, tensor<3xf32>) -> tensor<?x4x4x4xf32>
  func.return %y : tensor<?x4x4x4xf32>
}

// -----

// A bias that is not a graph.param is split all the same: no remark.
func.func @bias_from_an_argument(%x: tensor<?x2x4x4xf32>, %b: tensor<4xf32>) -> tensor<?x4x4x4xf32> {
  %w = graph.param "w" : tensor<4x2x1x1xf32>
  %y = graph.conv2d %x, %w, %b : (tensor<?x2x4x4xf32>, tensor<4x2x1x1xf32>, tensor<4xf32>) -> tensor<?x4x4x4xf32>
  func.return %y : tensor<?x4x4x4xf32>
}
