// RUN: teeny-opt %s -p 'insert-backward,insert-gradient-allreduce{world=4}' | filecheck %s
// RUN: teeny-opt %s -p 'insert-backward,insert-gradient-allreduce{world=4}' | teeny-opt | filecheck %s
// RUN: teeny-opt %s -p 'insert-backward,insert-gradient-allreduce{world=4}' --mlir-print-debuginfo | filecheck %s --check-prefix=LOC
// RUN: teeny-opt %s -p 'insert-backward,insert-gradient-allreduce{world=4}' --mlir-pass-statistics -o /dev/null 2>&1 | filecheck %s --check-prefix=STATS
// RUN: teeny-opt %s -p 'insert-backward,insert-gradient-allreduce' | filecheck %s --check-prefix=SINGLE
// RUN: teeny-opt %s -p 'insert-backward,insert-gradient-allreduce{world=2},apply-optimizer{lr=0.1}' | filecheck %s --check-prefix=STEP

// Every teeny.grad result goes through one all-reduce mean over the ranks, in
// its place: the results keep their attributes (the loss and the model's
// output first, untouched), the all-reduces are marked as backward ops.
// CHECK-LABEL: func.func @forward
// CHECK-SAME:    -> (tensor<f32>, tensor<?x2xf32>, tensor<2x3xf32> {teeny.grad = "fc.weight"}, tensor<2xf32> {teeny.grad = "fc.bias"})
// CHECK:         %[[GW:.*]] = graph.conv2d_backward_weight
// CHECK:         %[[W:.*]] = graph.reshape %[[GW]] shape [2, 3] {teeny.backward}
// CHECK:         %[[B:.*]] = graph.reduce_sum %{{.*}} axes [0] {teeny.backward}
// CHECK-NEXT:    %[[RW:.*]] = graph.all_reduce %[[W]] reduction mean world 4 {teeny.backward} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[RB:.*]] = graph.all_reduce %[[B]] reduction mean world 4 {teeny.backward} : (tensor<2xf32>) -> tensor<2xf32>
// CHECK-NEXT:    func.return %{{.*}}, %[[Y:[^,]*]], %[[RW]], %[[RB]] : tensor<f32>, tensor<?x2xf32>, tensor<2x3xf32>, tensor<2xf32>

// Each all-reduce is located at its parameter (lines 37 and 38).
// LOC: graph.all_reduce {{.*}} : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("{{.*}}insert-gradient-allreduce.mlir":37:8)
// LOC: graph.all_reduce {{.*}} : (tensor<2xf32>) -> tensor<2xf32> loc("{{.*}}insert-gradient-allreduce.mlir":38:8)

// STATS:      insert-gradient-allreduce
// STATS-NEXT:   (S) 2 all-reduces  - Number of gradients averaged over the ranks
// STATS-NEXT:   (S) 2 ops-created  - Number of operations created

// world=1 (the default) inserts nothing.
// SINGLE-NOT: graph.all_reduce

// apply-optimizer then steps each parameter with its averaged gradient.
// STEP:      %[[RW:.*]] = graph.all_reduce %{{.*}} reduction mean world 2 {teeny.backward} : (tensor<2x3xf32>)
// STEP-NEXT: %[[RB:.*]] = graph.all_reduce %{{.*}} reduction mean world 2 {teeny.backward} : (tensor<2xf32>)
// STEP:      graph.sgd_update %{{.*}}, %[[RW]] lr
// STEP:      graph.sgd_update %{{.*}}, %[[RB]] lr
func.func @forward(%x: tensor<?x3xf32>) -> (tensor<f32>, tensor<?x2xf32>) {
  %w = graph.param "fc.weight" : tensor<2x3xf32>
  %b = graph.param "fc.bias" : tensor<2xf32>
  %y = graph.linear %x, %w, %b : (tensor<?x3xf32>, tensor<2x3xf32>, tensor<2xf32>) -> tensor<?x2xf32>
  %l = graph.reduce_mean %y axes [0, 1] : (tensor<?x2xf32>) -> tensor<f32>
  func.return %l, %y : tensor<f32>, tensor<?x2xf32>
}
