// RUN: teeny-opt %s -p fuse-epilogues --split-input-file --verify-diagnostics
// RUN: teeny-opt %s -p 'fuse-epilogues{mode=training}' --split-input-file 2>&1 | filecheck %s --check-prefix=TRAIN

// fuse-epilogues refuses nothing: a blocked fusion leaves the ops as they are
// and says why in a remark at the op that was not fused. (The TRAIN lines check
// the training-mode remarks, which are printed before the IR.)

// The batch norm's result has a second user: conv + bn still fuse, the silu stays.
func.func @bn_result_two_users(%x: tensor<?x2x4x4xf32>) -> (tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>) {
  %w = graph.param "w" : tensor<4x2x1x1xf32>
  %g = graph.param "g" : tensor<4xf32>
  %c = graph.conv2d %x, %w : (tensor<?x2x4x4xf32>, tensor<4x2x1x1xf32>) -> tensor<?x4x4x4xf32>
  // TRAIN: fuse-epilogues-invalid.mlir:[[# @LINE + 1]]:8: remark: not fused: mode=training never folds batch-norm statistics
  %n = graph.batch_norm %c, %g, %g, %g, %g : (tensor<?x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x4x4x4xf32>
  // expected-remark@+1 {{not fused: the graph.batch_norm result has 2 uses}}
  %y = graph.silu %n : tensor<?x4x4x4xf32>
  func.return %n, %y : tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>
}

// -----

// The convolution's result has two users: nothing fuses.
func.func @conv_result_two_users(%x: tensor<?x2x4x4xf32>) -> (tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>) {
  %w = graph.param "w" : tensor<4x2x1x1xf32>
  %c = graph.conv2d %x, %w : (tensor<?x2x4x4xf32>, tensor<4x2x1x1xf32>) -> tensor<?x4x4x4xf32>
  // TRAIN: fuse-epilogues-invalid.mlir:[[# @LINE + 2]]:8: remark: not fused: the graph.conv2d result has 2 uses
  // expected-remark@+1 {{not fused: the graph.conv2d result has 2 uses}}
  %y = graph.relu %c : tensor<?x4x4x4xf32>
  func.return %c, %y : tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>
}

// -----

// A batch norm in training form (batch statistics) is never folded.
func.func @bn_training_form(%x: tensor<?x2x4x4xf32>) -> (tensor<?x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %w = graph.param "w" : tensor<4x2x1x1xf32>
  %g = graph.param "g" : tensor<4xf32>
  %c = graph.conv2d %x, %w : (tensor<?x2x4x4xf32>, tensor<4x2x1x1xf32>) -> tensor<?x4x4x4xf32>
  // expected-remark@+1 {{not fused: the batch norm is in training form (batch statistics)}}
  %n, %rm, %rv = graph.batch_norm %c, %g, %g, %g, %g training : (tensor<?x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<?x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>)
  func.return %n, %rm, %rv : tensor<?x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Batch-norm parameters must be graph.param ops: their names feed the derivations.
func.func @bn_operand_not_a_param(%x: tensor<?x2x4x4xf32>, %mean: tensor<4xf32>) -> tensor<?x4x4x4xf32> {
  %w = graph.param "w" : tensor<4x2x1x1xf32>
  %g = graph.param "g" : tensor<4xf32>
  %c = graph.conv2d %x, %w : (tensor<?x2x4x4xf32>, tensor<4x2x1x1xf32>) -> tensor<?x4x4x4xf32>
  // expected-remark@+1 {{not fused: batch-norm operand 'running_mean' is not a graph.param}}
  %n = graph.batch_norm %c, %g, %g, %mean, %g : (tensor<?x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x4x4x4xf32>
  func.return %n : tensor<?x4x4x4xf32>
}

// -----

func.func @bias_add_bias_not_a_param(%x: tensor<?x2x4x4xf32>, %b: tensor<4xf32>) -> tensor<?x4x4x4xf32> {
  %w = graph.param "w" : tensor<4x2x1x1xf32>
  %c = graph.conv2d %x, %w : (tensor<?x2x4x4xf32>, tensor<4x2x1x1xf32>) -> tensor<?x4x4x4xf32>
  // TRAIN: fuse-epilogues-invalid.mlir:[[# @LINE + 2]]:8: remark: not fused: the bias of graph.bias_add is not a graph.param
  // expected-remark@+1 {{not fused: the bias of graph.bias_add is not a graph.param}}
  %y = graph.bias_add %c, %b : (tensor<?x4x4x4xf32>, tensor<4xf32>) -> tensor<?x4x4x4xf32>
  func.return %y : tensor<?x4x4x4xf32>
}

// -----

// Two biases do not fit one shift: the bias_add after a biased conv stays.
func.func @second_bias(%x: tensor<?x2x4x4xf32>) -> tensor<?x4x4x4xf32> {
  %w = graph.param "w" : tensor<4x2x1x1xf32>
  %b = graph.param "b" : tensor<4xf32>
  %c = graph.conv2d %x, %w, %b : (tensor<?x2x4x4xf32>, tensor<4x2x1x1xf32>, tensor<4xf32>) -> tensor<?x4x4x4xf32>
  // expected-remark@+1 {{not fused: the convolution already has a bias}}
  %y = graph.bias_add %c, %b : (tensor<?x4x4x4xf32>, tensor<4xf32>) -> tensor<?x4x4x4xf32>
  func.return %y : tensor<?x4x4x4xf32>
}

// -----

func.func @conv_weight_not_a_param(%x: tensor<?x2x4x4xf32>, %w: tensor<4x2x1x1xf32>) -> tensor<?x4x4x4xf32> {
  // TRAIN: fuse-epilogues-invalid.mlir:[[# @LINE + 2]]:8: remark: not fused: the convolution weight is not a graph.param
  // expected-remark@+1 {{not fused: the convolution weight is not a graph.param}}
  %c = graph.conv2d %x, %w : (tensor<?x2x4x4xf32>, tensor<4x2x1x1xf32>) -> tensor<?x4x4x4xf32>
  %y = graph.silu %c : tensor<?x4x4x4xf32>
  func.return %y : tensor<?x4x4x4xf32>
}

// -----

func.func @conv_bias_not_a_param(%x: tensor<?x2x4x4xf32>, %b: tensor<4xf32>) -> tensor<?x4x4x4xf32> {
  %w = graph.param "w" : tensor<4x2x1x1xf32>
  // expected-remark@+1 {{not fused: the convolution bias is not a graph.param}}
  %c = graph.conv2d %x, %w, %b : (tensor<?x2x4x4xf32>, tensor<4x2x1x1xf32>, tensor<4xf32>) -> tensor<?x4x4x4xf32>
  %y = graph.sigmoid %c : tensor<?x4x4x4xf32>
  func.return %y : tensor<?x4x4x4xf32>
}

// -----

// Folds silently in inference mode; training mode keeps the batch norm.
func.func @bn_in_training_mode(%x: tensor<?x2x4x4xf32>) -> tensor<?x4x4x4xf32> {
  %w = graph.param "w" : tensor<4x2x1x1xf32>
  %g = graph.param "g" : tensor<4xf32>
  %c = graph.conv2d %x, %w : (tensor<?x2x4x4xf32>, tensor<4x2x1x1xf32>) -> tensor<?x4x4x4xf32>
  // TRAIN: fuse-epilogues-invalid.mlir:[[# @LINE + 1]]:8: remark: not fused: mode=training never folds batch-norm statistics
  %n = graph.batch_norm %c, %g, %g, %g, %g : (tensor<?x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x4x4x4xf32>
  func.return %n : tensor<?x4x4x4xf32>
}

// -----

// A residual add folds only a value computed before the convolution (the fused op
// takes the add's place): here conv + silu fuse and the add stays.
func.func @residual_computed_after_the_conv(%x: tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32> {
  %w = graph.param "w" : tensor<4x4x1x1xf32>
  %c = graph.conv2d %x, %w : (tensor<?x4x4x4xf32>, tensor<4x4x1x1xf32>) -> tensor<?x4x4x4xf32>
  %y = graph.silu %c : tensor<?x4x4x4xf32>
  %r = graph.relu %x : tensor<?x4x4x4xf32>
  // TRAIN: fuse-epilogues-invalid.mlir:[[# @LINE + 2]]:8: remark: not fused: mode=training never folds a residual graph.add
  // expected-remark@+1 {{not fused: the residual operand of graph.add is computed after the convolution}}
  %z = graph.add %r, %y : (tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32>
  func.return %z : tensor<?x4x4x4xf32>
}

// -----

// Nor one that needs broadcasting, on either side.
func.func @residual_broadcasts(%x: tensor<?x4x4x4xf32>, %r: tensor<4x1x1xf32>, %s: tensor<?x4x4x4xf32>) -> (tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>) {
  %w = graph.param "w" : tensor<4x4x1x1xf32>
  %c = graph.conv2d %x, %w : (tensor<?x4x4x4xf32>, tensor<4x4x1x1xf32>) -> tensor<?x4x4x4xf32>
  %y = graph.silu %c : tensor<?x4x4x4xf32>
  // expected-remark@+1 {{not fused: the residual of graph.add has type tensor<4x1x1xf32>, not the graph.silu result's type tensor<?x4x4x4xf32> (no broadcasting)}}
  %z = graph.add %y, %r : (tensor<?x4x4x4xf32>, tensor<4x1x1xf32>) -> tensor<?x4x4x4xf32>
  %v = graph.param "v" : tensor<4x4x4x4xf32>
  %d = graph.conv2d %x, %v strides [4, 4] : (tensor<?x4x4x4xf32>, tensor<4x4x4x4xf32>) -> tensor<?x4x1x1xf32>
  // expected-remark@+1 {{not fused: the residual of graph.add has type tensor<?x4x4x4xf32>, not the graph.conv2d result's type tensor<?x4x1x1xf32> (no broadcasting)}}
  %t = graph.add %s, %d : (tensor<?x4x4x4xf32>, tensor<?x4x1x1xf32>) -> tensor<?x4x4x4xf32>
  func.return %z, %t : tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>
}

// -----

// The chain's value used by the add and by something else: the add stays.
func.func @residual_chain_value_two_users(%x: tensor<?x4x4x4xf32>) -> (tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>) {
  %w = graph.param "w" : tensor<4x4x1x1xf32>
  %c = graph.conv2d %x, %w : (tensor<?x4x4x4xf32>, tensor<4x4x1x1xf32>) -> tensor<?x4x4x4xf32>
  // TRAIN: fuse-epilogues-invalid.mlir:[[# @LINE + 2]]:8: remark: not fused: the graph.conv2d result has 2 uses
  // expected-remark@+1 {{not fused: the graph.conv2d result has 2 uses}}
  %z = graph.add %x, %c : (tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32>
  %d = graph.conv2d %x, %w : (tensor<?x4x4x4xf32>, tensor<4x4x1x1xf32>) -> tensor<?x4x4x4xf32>
  %y = graph.silu %d : tensor<?x4x4x4xf32>
  // expected-remark@+1 {{not fused: the graph.silu result has 2 uses}}
  %t = graph.add %y, %x : (tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32>
  func.return %c, %z, %y, %t : tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>
}

// -----

// An add of the chain's value to itself: the value has two uses.
func.func @residual_is_the_chain_value(%x: tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32> {
  %w = graph.param "w" : tensor<4x4x1x1xf32>
  %c = graph.conv2d %x, %w : (tensor<?x4x4x4xf32>, tensor<4x4x1x1xf32>) -> tensor<?x4x4x4xf32>
  // expected-remark@+1 {{not fused: the graph.conv2d result has 2 uses}}
  %z = graph.add %c, %c : (tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32>
  func.return %z : tensor<?x4x4x4xf32>
}

// -----

// Training mode never folds a residual add (a backward would need the
// activation's own result): conv + bias + silu fuse, the add stays.
func.func @residual_in_training_mode(%x: tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32> {
  %w = graph.param "w" : tensor<4x4x1x1xf32>
  %b = graph.param "b" : tensor<4xf32>
  %c = graph.conv2d %x, %w, %b : (tensor<?x4x4x4xf32>, tensor<4x4x1x1xf32>, tensor<4xf32>) -> tensor<?x4x4x4xf32>
  %y = graph.silu %c : tensor<?x4x4x4xf32>
  // TRAIN: fuse-epilogues-invalid.mlir:[[# @LINE + 1]]:8: remark: not fused: mode=training never folds a residual graph.add
  %z = graph.add %y, %x : (tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32>
  func.return %z : tensor<?x4x4x4xf32>
}

// -----

// A linear layer's result with two users: nothing fuses.
func.func @linear_result_two_users(%x: tensor<?x4xf32>) -> (tensor<?x3xf32>, tensor<?x3xf32>) {
  %w = graph.param "w" : tensor<3x4xf32>
  %l = graph.linear %x, %w : (tensor<?x4xf32>, tensor<3x4xf32>) -> tensor<?x3xf32>
  // TRAIN: fuse-epilogues-invalid.mlir:[[# @LINE + 2]]:8: remark: not fused: the graph.linear result has 2 uses
  // expected-remark@+1 {{not fused: the graph.linear result has 2 uses}}
  %y = graph.relu %l : tensor<?x3xf32>
  func.return %l, %y : tensor<?x3xf32>, tensor<?x3xf32>
}

// -----

// A bias_add after a linear that already has a bias, and one after a rank-3
// linear (bias_add adds along dimension 1): the activation is not reached.
func.func @linear_bias_add_blocked(%x: tensor<?x4xf32>, %v: tensor<?x3x4xf32>) -> (tensor<?x3xf32>, tensor<?x3x3xf32>) {
  %w = graph.param "w" : tensor<3x4xf32>
  %b = graph.param "b" : tensor<3xf32>
  %l = graph.linear %x, %w, %b : (tensor<?x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<?x3xf32>
  // TRAIN: fuse-epilogues-invalid.mlir:[[# @LINE + 2]]:8: remark: not fused: the linear layer already has a bias
  // expected-remark@+1 {{not fused: the linear layer already has a bias}}
  %a = graph.bias_add %l, %b : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<?x3xf32>
  %y = graph.relu %a : tensor<?x3xf32>
  %m = graph.linear %v, %w : (tensor<?x3x4xf32>, tensor<3x4xf32>) -> tensor<?x3x3xf32>
  // TRAIN: fuse-epilogues-invalid.mlir:[[# @LINE + 2]]:8: remark: not fused: graph.bias_add adds along dimension 1, not the output features of a linear layer of rank > 2
  // expected-remark@+1 {{not fused: graph.bias_add adds along dimension 1, not the output features of a linear layer of rank > 2}}
  %c = graph.bias_add %m, %b : (tensor<?x3x3xf32>, tensor<3xf32>) -> tensor<?x3x3xf32>
  %z = graph.relu %c : tensor<?x3x3xf32>
  func.return %y, %z : tensor<?x3xf32>, tensor<?x3x3xf32>
}
