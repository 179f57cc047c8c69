// RUN: teeny-opt %s --split-input-file --verify-diagnostics

// graph.fused_conv2d's residual: verifier and parser errors.

func.func @residual_broadcasts(%x: tensor<?x8x4x4xf32>, %w: tensor<16x8x1x1xf32>, %r: tensor<16x1x1xf32>) {
  // expected-error@+1 {{expected residual of the result type tensor<?x16x4x4xf32>, got tensor<16x1x1xf32> (the residual is added elementwise, without broadcasting)}}
  %y = graph.fused_conv2d %x, %w residual %r scale #derive.param<fill(1.0) : [16]> shift #derive.param<fill(0.0) : [16]> : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>, tensor<16x1x1xf32>) -> tensor<?x16x4x4xf32>
  func.return
}

// -----

func.func @residual_static_batch(%x: tensor<?x8x4x4xf32>, %w: tensor<16x8x1x1xf32>, %r: tensor<2x16x4x4xf32>) {
  // expected-error@+1 {{expected residual of the result type tensor<?x16x4x4xf32>, got tensor<2x16x4x4xf32>}}
  %y = graph.fused_conv2d %x, %w residual %r scale #derive.param<fill(1.0) : [16]> shift #derive.param<fill(0.0) : [16]> : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>, tensor<2x16x4x4xf32>) -> tensor<?x16x4x4xf32>
  func.return
}

// -----

func.func @residual_is_the_input(%x: tensor<?x8x4x4xf32>, %w: tensor<16x8x1x1xf32>) {
  // expected-error@+1 {{expected residual of the result type tensor<?x16x4x4xf32>, got tensor<?x8x4x4xf32>}}
  %y = "graph.fused_conv2d"(%x, %w, %x) <{scale = #derive.param<fill(1.0) : [16]>, shift = #derive.param<fill(0.0) : [16]>}> : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>, tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32>
  func.return
}

// -----

func.func @residual_as_a_third_operand(%x: tensor<?x8x4x4xf32>, %w: tensor<16x8x1x1xf32>, %r: tensor<?x16x4x4xf32>) {
  // expected-error@+1 {{expected the input and weight operands of graph.fused_conv2d, got 3 operands (a residual is written 'residual %r')}}
  %y = graph.fused_conv2d %x, %w, %r scale #derive.param<fill(1.0) : [16]> shift #derive.param<fill(0.0) : [16]> : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>, tensor<?x16x4x4xf32>) -> tensor<?x16x4x4xf32>
  func.return
}

// -----

func.func @residual_without_weight(%x: tensor<?x8x4x4xf32>, %r: tensor<?x16x4x4xf32>) {
  // expected-error@+1 {{expected the input and weight operands before 'residual', got 1}}
  %y = graph.fused_conv2d %x residual %r scale #derive.param<fill(1.0) : [16]> shift #derive.param<fill(0.0) : [16]> : (tensor<?x8x4x4xf32>, tensor<?x16x4x4xf32>) -> tensor<?x16x4x4xf32>
  func.return
}

// -----

func.func @residual_after_options(%x: tensor<?x8x4x4xf32>, %w: tensor<16x8x1x1xf32>, %r: tensor<?x16x4x4xf32>) {
  // expected-error@+1 {{expected 'residual %r' right after the input and weight operands}}
  %y = graph.fused_conv2d %x, %w scale #derive.param<fill(1.0) : [16]> shift #derive.param<fill(0.0) : [16]> residual %r : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>, tensor<?x16x4x4xf32>) -> tensor<?x16x4x4xf32>
  func.return
}

// -----

func.func @residual_type_missing(%x: tensor<?x8x4x4xf32>, %w: tensor<16x8x1x1xf32>, %r: tensor<?x16x4x4xf32>) {
  // expected-error@+1 {{expected 2 operand types but had 3}}
  %y = graph.fused_conv2d %x, %w residual %r scale #derive.param<fill(1.0) : [16]> shift #derive.param<fill(0.0) : [16]> : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<?x16x4x4xf32>
  func.return
}
