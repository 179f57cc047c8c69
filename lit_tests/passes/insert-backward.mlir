// RUN: teeny-opt %s -p insert-backward | filecheck %s
// RUN: teeny-opt %s -p insert-backward | teeny-opt | filecheck %s
// RUN: teeny-opt %s -p insert-backward --mlir-pass-statistics -o /dev/null 2>&1 | filecheck %s --check-prefix=STATS

// The loss's gradient flows back through the reduction, the product with %r,
// the SiLU (recomputed from the kept input of the pointwise chain, not kept
// itself) and the bias add (broadcast: summed over the batch) to the linear
// layer. One gradient result per parameter, in declaration order, named by
// teeny.grad; the original results stay first. Backward ops take the
// locations of the forward ops they differentiate and are marked {teeny.backward}
// (a training plan's backward phase).
// CHECK-LABEL: func.func @forward
// CHECK-SAME:    -> (tensor<f32>, tensor<?x3xf32>, tensor<3x4xf32> {teeny.grad = "w"}, tensor<3xf32> {teeny.grad = "b"}, tensor<5xf32> {teeny.grad = "unused"})
// CHECK:         %[[L:.*]] = graph.reduce_sum
// CHECK-NEXT:    %[[SEED:.*]] = graph.constant {teeny.backward} dense<1.000000e+00> : tensor<f32>
// CHECK-DAG:     graph.activation_grad %{{.*}}, %{{.*}} activation silu
// CHECK-DAG:     graph.reduce_sum %{{.*}} axes [0] keepdims {teeny.backward} : (tensor<?x3xf32>) -> tensor<1x3xf32>
// CHECK:         %[[ZERO:.*]] = graph.constant {teeny.backward} dense<0.000000e+00> : tensor<5xf32>
// CHECK-NEXT:    func.return %[[L]], %{{.*}}, %{{.*}}, %{{.*}}, %[[ZERO]] :

// STATS: insert-backward
// STATS: saved-bytes-per-sample - Bytes of forward values the backward keeps, per sample
func.func @forward(%x: tensor<?x4xf32>, %r: tensor<?x3xf32>) -> (tensor<f32>, tensor<?x3xf32>) {
  %w = graph.param "w" : tensor<3x4xf32>
  %b = graph.param "b" : tensor<3xf32>
  %u = graph.param "unused" : tensor<5xf32>
  %y = graph.linear %x, %w : (tensor<?x4xf32>, tensor<3x4xf32>) -> tensor<?x3xf32>
  %z = graph.add %y, %b : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<?x3xf32>
  %s = graph.silu %z : tensor<?x3xf32>
  %m = graph.mul %s, %r : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32>
  %l = graph.reduce_sum %m axes [0, 1] : (tensor<?x3xf32>) -> tensor<f32>
  func.return %l, %s : tensor<f32>, tensor<?x3xf32>
}
