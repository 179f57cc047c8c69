// RUN: teeny-opt %s --split-input-file | filecheck %s
// RUN: teeny-opt %s --split-input-file | teeny-opt --split-input-file | filecheck %s

// graph.linear's optional epilogue activation round-trips; absent, it prints nothing.
// CHECK-LABEL: func.func @linear_activation(
// CHECK:         graph.linear %{{.*}}, %{{.*}}, %{{.*}} activation relu : (tensor<?x400xf32>, tensor<120x400xf32>, tensor<120xf32>) -> tensor<?x120xf32>
// CHECK:         graph.linear %{{.*}}, %{{.*}} activation silu : (tensor<?x5x400xf32>, tensor<120x400xf32>) -> tensor<?x5x120xf32>
// CHECK:         graph.linear %{{.*}}, %{{.*}} : (tensor<?x400xf32>, tensor<120x400xf32>) -> tensor<?x120xf32>
func.func @linear_activation(%x: tensor<?x400xf32>, %v: tensor<?x5x400xf32>) -> (tensor<?x120xf32>, tensor<?x5x120xf32>, tensor<?x120xf32>) {
  %w = graph.param "w" : tensor<120x400xf32>
  %b = graph.param "b" : tensor<120xf32>
  %y = graph.linear %x, %w, %b activation relu : (tensor<?x400xf32>, tensor<120x400xf32>, tensor<120xf32>) -> tensor<?x120xf32>
  %z = graph.linear %v, %w activation "silu" : (tensor<?x5x400xf32>, tensor<120x400xf32>) -> tensor<?x5x120xf32>
  %u = graph.linear %x, %w : (tensor<?x400xf32>, tensor<120x400xf32>) -> tensor<?x120xf32>
  func.return %y, %z, %u : tensor<?x120xf32>, tensor<?x5x120xf32>, tensor<?x120xf32>
}
