// RUN: teeny-opt %s -p 'split-bias,fuse-epilogues' --mlir-print-debuginfo | filecheck %s

// A fused linear layer's location names every graph op it replaced, the way a
// fused convolution's does (the provenance a plan's launch lists).
// CHECK-LABEL: func.func @fc
// CHECK:         graph.linear %{{.*}}, %{{.*}}, %{{.*}} activation relu : (tensor<?x6xf32>, tensor<4x6xf32>, tensor<4xf32>) -> tensor<?x4xf32> loc(fused["graph.linear"("{{.*}}fuse-epilogues-linear.mlir":[[# @LINE + 5]]:8), "graph.bias_add"("{{.*}}fuse-epilogues-linear.mlir":[[# @LINE + 6]]:8), "graph.relu"("{{.*}}fuse-epilogues-linear.mlir":[[# @LINE + 7]]:8)])
// CHECK-NEXT:    func.return
func.func @fc(%x: tensor<?x6xf32>) -> tensor<?x4xf32> {
  %w = graph.param "w" : tensor<4x6xf32>
  %b = graph.param "b" : tensor<4xf32>
  %l = graph.linear %x, %w : (tensor<?x6xf32>, tensor<4x6xf32>) -> tensor<?x4xf32>
  %a = graph.bias_add %l, %b : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  %y = graph.relu %a : tensor<?x4xf32>
  func.return %y : tensor<?x4xf32>
}
