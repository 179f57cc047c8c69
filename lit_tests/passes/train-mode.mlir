// RUN: teeny-opt %s -p train-mode | filecheck %s
// RUN: teeny-opt %s -p train-mode | teeny-opt | filecheck %s

// An inference batch norm becomes its training form; the updated running
// statistics are appended to the results, named by teeny.running. A batch norm
// that carries an activation (fused in inference) gets it back as an op.
// CHECK-LABEL: func.func @forward
// CHECK-SAME:    -> (tensor<?x4x5x5xf32>, tensor<4xf32> {teeny.running = "bn.running_mean"}, tensor<4xf32> {teeny.running = "bn.running_var"}, tensor<4xf32> {teeny.running = "bn2.running_mean"}, tensor<4xf32> {teeny.running = "bn2.running_var"})
// CHECK:         %[[Y:.*]], %[[M:.*]], %[[V:.*]] = graph.batch_norm %{{.*}} eps 1.000000e-03 momentum 3.000000e-02 training : (tensor<?x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<?x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>)
// CHECK-NEXT:    %[[S:.*]] = graph.silu %[[Y]] : tensor<?x4x5x5xf32>
// CHECK-NEXT:    %[[Z:.*]], %[[M2:.*]], %[[V2:.*]] = graph.batch_norm %[[S]], {{.*}} training :
// CHECK-NEXT:    %[[R:.*]] = graph.relu %[[Z]] : tensor<?x4x5x5xf32>
// CHECK-NEXT:    func.return %[[R]], %[[M]], %[[V]], %[[M2]], %[[V2]] :
func.func @forward(%x: tensor<?x4x5x5xf32>) -> tensor<?x4x5x5xf32> {
  %g = graph.param "bn.weight" : tensor<4xf32>
  %b = graph.param "bn.bias" : tensor<4xf32>
  %m = graph.param "bn.running_mean" : tensor<4xf32>
  %v = graph.param "bn.running_var" : tensor<4xf32>
  %m2 = graph.param "bn2.running_mean" : tensor<4xf32>
  %v2 = graph.param "bn2.running_var" : tensor<4xf32>
  %y = graph.batch_norm %x, %g, %b, %m, %v eps 1.000000e-03 momentum 3.000000e-02 : (tensor<?x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x4x5x5xf32>
  %s = graph.silu %y : tensor<?x4x5x5xf32>
  %z = graph.batch_norm %s, %g, %b, %m2, %v2 activation relu : (tensor<?x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x4x5x5xf32>
  func.return %z : tensor<?x4x5x5xf32>
}
