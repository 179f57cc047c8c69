// A small residual block in the graph dialect: 1x1 conv with bias, padded 3x3 conv,
// batch norm, SiLU and a residual add. %act_again repeats %act, so `cse` removes it.
func.func @forward(%x: tensor<?x8x16x16xf32>) -> tensor<?x8x16x16xf32> {
  %w0 = graph.param "model.0.conv.weight" : tensor<16x8x1x1xf32>
  %b0 = graph.param "model.0.conv.bias" : tensor<16xf32>
  %h0 = graph.conv2d %x, %w0, %b0 : (tensor<?x8x16x16xf32>, tensor<16x8x1x1xf32>, tensor<16xf32>) -> tensor<?x16x16x16xf32>
  %w1 = graph.param "model.1.conv.weight" : tensor<8x16x3x3xf32>
  %h1 = graph.conv2d %h0, %w1 padding [1, 1, 1, 1] : (tensor<?x16x16x16xf32>, tensor<8x16x3x3xf32>) -> tensor<?x8x16x16xf32>
  %gamma = graph.param "model.1.bn.weight" : tensor<8xf32>
  %beta = graph.param "model.1.bn.bias" : tensor<8xf32>
  %mean = graph.param "model.1.bn.running_mean" : tensor<8xf32>
  %var = graph.param "model.1.bn.running_var" : tensor<8xf32>
  %norm = graph.batch_norm %h1, %gamma, %beta, %mean, %var eps 1.000000e-03 momentum 3.000000e-02 : (tensor<?x8x16x16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x8x16x16xf32>
  %act = graph.silu %norm : tensor<?x8x16x16xf32>
  %residual = graph.add %x, %act : (tensor<?x8x16x16xf32>, tensor<?x8x16x16xf32>) -> tensor<?x8x16x16xf32>
  %act_again = graph.silu %norm : tensor<?x8x16x16xf32>
  %out = graph.add %residual, %act_again : (tensor<?x8x16x16xf32>, tensor<?x8x16x16xf32>) -> tensor<?x8x16x16xf32>
  func.return %out : tensor<?x8x16x16xf32>
}
