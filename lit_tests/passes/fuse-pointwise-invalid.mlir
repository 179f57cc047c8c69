// RUN: teeny-opt %s -p fuse-pointwise --split-input-file --verify-diagnostics

// fuse-pointwise refuses nothing: where a chain is cut, a remark at the op
// where it stops says why.

func.func @second_user(%x: tensor<?x4x6x6xf32>, %w: tensor<4x4x1x1xf32>) -> (tensor<?x4x6x6xf32>, tensor<?x4x6x6xf32>) {
  // expected-remark@+1 {{pointwise chain cut: its value has a user that is not pointwise (graph.conv2d)}}
  %e = graph.exp %x : tensor<?x4x6x6xf32>
  %t = graph.tanh %e : tensor<?x4x6x6xf32>
  %y = graph.neg %t : tensor<?x4x6x6xf32>
  %c = graph.conv2d %e, %w : (tensor<?x4x6x6xf32>, tensor<4x4x1x1xf32>) -> tensor<?x4x6x6xf32>
  func.return %y, %c : tensor<?x4x6x6xf32>, tensor<?x4x6x6xf32>
}

// -----

func.func @returned_and_read(%x: tensor<3x5xf32>) -> (tensor<3x5xf32>, tensor<3x5xf32>) {
  // expected-remark@+1 {{pointwise chain cut: its value is a result of the function}}
  %e = graph.exp %x : tensor<3x5xf32>
  %y = graph.neg %e : tensor<3x5xf32>
  %z = graph.tanh %e : tensor<3x5xf32>
  %w = graph.add %y, %z : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
  func.return %e, %w : tensor<3x5xf32>, tensor<3x5xf32>
}

// -----

func.func @shape_change(%x: tensor<?x4x6xf32>) -> tensor<?x24xf32> {
  %e = graph.exp %x : tensor<?x4x6xf32>
  // expected-remark@+1 {{pointwise chain cut: a shape change (graph.reshape) between graph.exp and graph.neg}}
  %r = graph.reshape %e shape [0, 24] : (tensor<?x4x6xf32>) -> tensor<?x24xf32>
  %y = graph.neg %r : tensor<?x24xf32>
  func.return %y : tensor<?x24xf32>
}

// -----

func.func @too_many_inputs(%a: tensor<5xf32>, %b: tensor<5xf32>, %c: tensor<5xf32>, %d: tensor<5xf32>, %e: tensor<5xf32>, %f: tensor<5xf32>, %g: tensor<5xf32>) -> tensor<5xf32> {
  // expected-remark@+1 {{pointwise chain cut: fusing graph.add would read more than 6 inputs}}
  %0 = graph.add %a, %b : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
  %1 = graph.add %0, %c : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
  %2 = graph.add %1, %d : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
  %3 = graph.add %2, %e : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
  %4 = graph.add %3, %f : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
  %5 = graph.add %4, %g : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
  func.return %5 : tensor<5xf32>
}

// -----

func.func @bad_program(%a: tensor<5xf32>) -> tensor<5xf32> {
  // expected-error@+1 {{'graph.fused_pointwise' op invalid program: step 0: 'frobnicate' is not an entry of the pointwise table}}
  %y = graph.fused_pointwise %a program "frobnicate %0" : (tensor<5xf32>) -> tensor<5xf32>
  func.return %y : tensor<5xf32>
}

// -----

func.func @unread_step(%a: tensor<5xf32>) -> tensor<5xf32> {
  // expected-error@+1 {{'graph.fused_pointwise' op invalid program: the result of step 0 is never read}}
  %y = graph.fused_pointwise %a program "exp %0; neg %0" : (tensor<5xf32>) -> tensor<5xf32>
  func.return %y : tensor<5xf32>
}

// -----

func.func @not_canonical(%a: tensor<5xf32>) -> tensor<5xf32> {
  // expected-error@+1 {{'graph.fused_pointwise' op invalid program: step 0 'leaky_relu(negative_slope=0.20) %0' is not canonical: write 'leaky_relu(negative_slope=0.2) %0'}}
  %y = graph.fused_pointwise %a program "leaky_relu(negative_slope=0.20) %0" : (tensor<5xf32>) -> tensor<5xf32>
  func.return %y : tensor<5xf32>
}

// -----

func.func @wrong_result(%a: tensor<5xf32>, %b: tensor<3x1xf32>) -> tensor<5xf32> {
  // expected-error@+1 {{'graph.fused_pointwise' op expected result type tensor<3x5xf32>, got tensor<5xf32>}}
  %y = graph.fused_pointwise %a, %b program "add %0 %1" : (tensor<5xf32>, tensor<3x1xf32>) -> tensor<5xf32>
  func.return %y : tensor<5xf32>
}

// -----

// A trailing reduction is absorbed only where the fused_reduce family can read
// every input: a per-channel [3, 1, 1] vector broadcasts inside an image.

func.func @reduce_broadcast(%x: tensor<?x3x5x7xf32>, %w: tensor<3x1x1xf32>) -> tensor<?x3xf32> {
  %h = graph.mul %x, %w : (tensor<?x3x5x7xf32>, tensor<3x1x1xf32>) -> tensor<?x3x5x7xf32>
  // expected-remark@+1 {{pointwise chain cut: graph.reduce_sum is not fused into the chain: input 1 of shape [3, 1, 1] broadcasts inside an image of the reduced operand [?, 3, 5, 7]}}
  %s = graph.reduce_sum %h axes [2, 3] : (tensor<?x3x5x7xf32>) -> tensor<?x3xf32>
  func.return %s : tensor<?x3xf32>
}
