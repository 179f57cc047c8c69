// RUN: teeny-opt %s --split-input-file --verify-diagnostics

func.func @tanh_dtype(%x: tensor<?x4xf16>) {
  // expected-error@+1 {{unsupported dtype f16 for input: graph ops take f32 tensors}}
  %y = graph.tanh %x : tensor<?x4xf16>
  func.return
}

// -----

func.func @tanh_dynamic_inner(%x: tensor<?x?xf32>) {
  // expected-error@+1 {{input has a dynamic dimension 1: only the batch dimension (0) may be dynamic}}
  %y = graph.tanh %x : tensor<?x?xf32>
  func.return
}

// -----

func.func @tanh_result(%x: tensor<?x4xf32>) {
  // expected-error@+1 {{expected result type tensor<?x4xf32>, got tensor<?x5xf32>}}
  %y = "graph.tanh"(%x) : (tensor<?x4xf32>) -> tensor<?x5xf32>
  func.return
}

// -----

func.func @gelu_keyword(%x: tensor<?x4xf32>) {
  // expected-error@+1 {{expected approximate to be one of tanh}}
  %y = graph.gelu %x approximate none : tensor<?x4xf32>
  func.return
}

// -----

func.func @gelu_generic_value(%x: tensor<?x4xf32>) {
  // expected-error@+1 {{expected approximate to be one of tanh (absent: exact), got 'none'}}
  %y = "graph.gelu"(%x) <{approximate = "none"}> : (tensor<?x4xf32>) -> tensor<?x4xf32>
  func.return
}

// -----

func.func @gelu_duplicate(%x: tensor<?x4xf32>) {
  // expected-error@+1 {{'approximate' is given more than once}}
  %y = graph.gelu %x approximate tanh approximate tanh : tensor<?x4xf32>
  func.return
}

// -----

func.func @leaky_relu_not_finite(%x: tensor<?x4xf32>) {
  // expected-error@+1 {{expected negative_slope to be finite, got inf}}
  %y = "graph.leaky_relu"(%x) <{negative_slope = 0x7FF0000000000000 : f64}> : (tensor<?x4xf32>) -> tensor<?x4xf32>
  func.return
}

// -----

func.func @leaky_relu_slope_missing(%x: tensor<?x4xf32>) {
  // expected-error@+1 {{Expected float literal}}
  %y = graph.leaky_relu %x negative_slope : tensor<?x4xf32>
  func.return
}

// -----

func.func @sub_broadcast(%a: tensor<?x4xf32>, %b: tensor<?x5xf32>) {
  // expected-error@+1 {{cannot broadcast shapes [?, 4] and [?, 5]: sizes 4 and 5 differ at result dimension 1}}
  %y = graph.sub %a, %b : (tensor<?x4xf32>, tensor<?x5xf32>) -> tensor<?x4xf32>
  func.return
}

// -----

func.func @div_dynamic_against_static(%a: tensor<?x4xf32>) {
  %b = graph.param "b" : tensor<3x4xf32>
  // expected-error@+1 {{cannot broadcast dynamic dimension against static size 3 (shapes [?, 4] and [3, 4])}}
  %y = graph.div %a, %b : (tensor<?x4xf32>, tensor<3x4xf32>) -> tensor<?x4xf32>
  func.return
}

// -----

func.func @div_result(%a: tensor<?x4xf32>) {
  // expected-error@+1 {{expected result type tensor<?x4xf32>, got tensor<?x1xf32>}}
  %y = graph.div %a, %a : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x1xf32>
  func.return
}

// -----

func.func @linear_input_rank(%x: tensor<4xf32>) {
  %w = graph.param "w" : tensor<3x4xf32>
  // expected-error@+1 {{expected input of rank >= 2 [N, ..., in], got rank 1}}
  %y = graph.linear %x, %w : (tensor<4xf32>, tensor<3x4xf32>) -> tensor<3xf32>
  func.return
}

// -----

func.func @linear_weight_rank(%x: tensor<?x4xf32>) {
  %w = graph.param "w" : tensor<3x4x1xf32>
  // expected-error@+1 {{expected weight of rank 2 [out, in], got rank 3}}
  %y = graph.linear %x, %w : (tensor<?x4xf32>, tensor<3x4x1xf32>) -> tensor<?x3xf32>
  func.return
}

// -----

func.func @linear_weight_dynamic(%x: tensor<?x4xf32>, %w: tensor<?x4xf32>) {
  // expected-error@+1 {{expected weight to be fully static, got shape [?, 4]}}
  %y = graph.linear %x, %w : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x3xf32>
  func.return
}

// -----

func.func @linear_weight_dtype(%x: tensor<?x4xf32>, %w: tensor<3x4xf64>) {
  // expected-error@+1 {{unsupported dtype f64 for weight: graph ops take f32 tensors}}
  %y = graph.linear %x, %w : (tensor<?x4xf32>, tensor<3x4xf64>) -> tensor<?x3xf32>
  func.return
}

// -----

func.func @linear_features(%x: tensor<?x4xf32>) {
  %w = graph.param "w" : tensor<3x5xf32>
  // expected-error@+1 {{expected input features (last dimension) 4 to equal weight dim 1 (in) 5}}
  %y = graph.linear %x, %w : (tensor<?x4xf32>, tensor<3x5xf32>) -> tensor<?x3xf32>
  func.return
}

// -----

func.func @linear_bias_shape(%x: tensor<?x4xf32>) {
  %w = graph.param "w" : tensor<3x4xf32>
  %b = graph.param "b" : tensor<4xf32>
  // expected-error@+1 {{expected bias shape [3], got [4]}}
  %y = graph.linear %x, %w, %b : (tensor<?x4xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<?x3xf32>
  func.return
}

// -----

func.func @linear_result(%x: tensor<?x4xf32>) {
  %w = graph.param "w" : tensor<3x4xf32>
  // expected-error@+1 {{expected result type tensor<?x3xf32>, got tensor<?x4xf32>}}
  %y = graph.linear %x, %w : (tensor<?x4xf32>, tensor<3x4xf32>) -> tensor<?x4xf32>
  func.return
}

// -----

func.func @matmul_lhs_rank(%x: tensor<?xf32>) {
  %w = graph.param "w" : tensor<4x2xf32>
  // expected-error@+1 {{expected lhs of rank >= 2 [..., rows, columns], got rank 1}}
  %y = graph.matmul %x, %w : (tensor<?xf32>, tensor<4x2xf32>) -> tensor<?x2xf32>
  func.return
}

// -----

func.func @matmul_rhs_rank(%x: tensor<?x4xf32>) {
  %w = graph.param "w" : tensor<4xf32>
  // expected-error@+1 {{expected rhs of rank >= 2 [..., rows, columns], got rank 1}}
  %y = graph.matmul %x, %w : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?xf32>
  func.return
}

// -----

func.func @matmul_inner(%x: tensor<?x4xf32>) {
  %w = graph.param "w" : tensor<5x2xf32>
  // expected-error@+1 {{cannot multiply [?, 4] by [5, 2]: lhs dimension -1 (4) and rhs dimension -2 (5) differ}}
  %y = graph.matmul %x, %w : (tensor<?x4xf32>, tensor<5x2xf32>) -> tensor<?x2xf32>
  func.return
}

// -----

func.func @matmul_dynamic_inner(%x: tensor<?x4xf32>) {
  %w = graph.param "w" : tensor<5x4xf32>
  // expected-error@+1 {{cannot multiply [5, 4] by [?, 4]: lhs dimension -1 (4) and rhs dimension -2 (?) differ}}
  %y = graph.matmul %w, %x : (tensor<5x4xf32>, tensor<?x4xf32>) -> tensor<5x4xf32>
  func.return
}

// -----

func.func @matmul_batch(%x: tensor<?x3x2x4xf32>) {
  %w = graph.param "w" : tensor<5x4x2xf32>
  // expected-error@+1 {{matmul batch dimensions: cannot broadcast shapes [?, 3] and [5]: sizes 3 and 5 differ at result dimension 1}}
  %y = graph.matmul %x, %w : (tensor<?x3x2x4xf32>, tensor<5x4x2xf32>) -> tensor<?x3x2x2xf32>
  func.return
}

// -----

func.func @matmul_dynamic_lands_inside(%x: tensor<?x4xf32>) {
  %w = graph.param "w" : tensor<3x4x2xf32>
  // expected-error@+1 {{cannot multiply [?, 4] by [3, 4, 2]: the dynamic batch dimension would land at result dimension 1}}
  %y = graph.matmul %x, %w : (tensor<?x4xf32>, tensor<3x4x2xf32>) -> tensor<3x?x2xf32>
  func.return
}

// -----

func.func @matmul_result(%x: tensor<?x4xf32>) {
  %w = graph.param "w" : tensor<4x2xf32>
  // expected-error@+1 {{expected result type tensor<?x2xf32>, got tensor<?x3xf32>}}
  %y = graph.matmul %x, %w : (tensor<?x4xf32>, tensor<4x2xf32>) -> tensor<?x3xf32>
  func.return
}

// -----

func.func @constant_dtype() {
  // expected-error@+1 {{unsupported dtype i32 for constant: graph ops take f32 tensors}}
  %c = graph.constant dense<[1, 2]> : tensor<2xi32>
  func.return
}

// -----

func.func @constant_empty() {
  // expected-error@+1 {{constant has dimension 0 of size 0: sizes must be >= 1}}
  %c = graph.constant dense<> : tensor<0xf32>
  func.return
}

// -----

func.func @constant_too_large() {
  // expected-error@+1 {{constant has 4097 elements, more than the 4096 allowed: pass a large tensor as a weight (graph.param)}}
  %c = graph.constant dense<0.0> : tensor<4097xf32>
  func.return
}

// -----

func.func @constant_result() {
  // expected-error@+1 {{expected result type tensor<2xf32>, got tensor<3xf32>}}
  %c = "graph.constant"() <{value = dense<1.0> : tensor<2xf32>}> : () -> tensor<3xf32>
  func.return
}

// -----

func.func @constant_not_dense() {
  // expected-error@+1 {{expected a dense<...> literal of tensor type}}
  %c = graph.constant 1.0 : f32
  func.return
}

// -----

func.func @constant_vector() {
  // expected-error@+1 {{expected the literal's type to be a tensor type, got vector<2xf32>}}
  %c = graph.constant dense<1.0> : vector<2xf32>
  func.return
}

// -----

func.func @constant_generic_vector() {
  // expected-error@+1 {{expected constant to be a tensor, got vector<2xf32>}}
  %c = "graph.constant"() <{value = dense<1.0> : vector<2xf32>}> : () -> tensor<2xf32>
  func.return
}
