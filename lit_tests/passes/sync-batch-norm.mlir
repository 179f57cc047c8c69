// RUN: teeny-opt %s -p 'train-mode,sync-batch-norm{world=2}' --split-input-file | filecheck %s
// RUN: teeny-opt %s -p 'train-mode,sync-batch-norm{world=2}' --split-input-file | teeny-opt --split-input-file | filecheck %s
// RUN: teeny-opt %s -p 'train-mode,sync-batch-norm{world=2}' --split-input-file --mlir-print-debuginfo | filecheck %s --check-prefix=LOC
// RUN: teeny-opt %s -p 'train-mode,sync-batch-norm{world=2}' --split-input-file --mlir-pass-statistics -o /dev/null 2>&1 | filecheck %s --check-prefix=STATS
// RUN: teeny-opt %s -p 'train-mode,sync-batch-norm' --split-input-file | filecheck %s --check-prefix=SINGLE

// A training batch norm becomes SyncBatchNorm's math over 2 ranks: the global
// count (this rank's run-time batch times 5 * 5, all-reduced), the global mean,
// then the global mean of the squared deviations from it (two passes); the
// normalisation with the biased variance, the running statistics updated with
// the unbiased one. The updated statistics stay the teeny.running results, and
// their params are frozen (insert-backward gives them no gradient).
// CHECK-LABEL: func.func @forward
// CHECK-SAME:    -> (tensor<?x4x5x5xf32>, tensor<4xf32> {teeny.running = "bn.running_mean"}, tensor<4xf32> {teeny.running = "bn.running_var"})
// CHECK:         %[[G:.*]] = graph.param "bn.weight" : tensor<4xf32>
// CHECK-NEXT:    %[[B:.*]] = graph.param "bn.bias" : tensor<4xf32>
// CHECK-NEXT:    %[[M:.*]] = graph.param "bn.running_mean" frozen : tensor<4xf32>
// CHECK-NEXT:    %[[V:.*]] = graph.param "bn.running_var" frozen : tensor<4xf32>
// CHECK-NEXT:    %[[UNIT:.*]] = graph.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[ONES:.*]] = graph.broadcast %[[UNIT]], %[[X:.*]] : (tensor<f32>, tensor<?x4x5x5xf32>) -> tensor<?xf32>
// CHECK-NEXT:    %[[N:.*]] = graph.reduce_sum %[[ONES]] axes [0] : (tensor<?xf32>) -> tensor<f32>
// CHECK-NEXT:    %[[HW:.*]] = graph.constant dense<2.500000e+01> : tensor<f32>
// CHECK-NEXT:    %[[LOCAL:.*]] = graph.mul %[[N]], %[[HW]]
// CHECK-NEXT:    %[[COUNT:.*]] = graph.all_reduce %[[LOCAL]] reduction sum world 2 : (tensor<f32>) -> tensor<f32>
// CHECK-NEXT:    %[[SUM:.*]] = graph.reduce_sum %[[X]] axes [0, 2, 3] keepdims : (tensor<?x4x5x5xf32>) -> tensor<1x4x1x1xf32>
// CHECK-NEXT:    %[[GSUM:.*]] = graph.all_reduce %[[SUM]] reduction sum world 2 : (tensor<1x4x1x1xf32>) -> tensor<1x4x1x1xf32>
// CHECK-NEXT:    %[[MEAN:.*]] = graph.div %[[GSUM]], %[[COUNT]]
// CHECK-NEXT:    %[[D:.*]] = graph.sub %[[X]], %[[MEAN]]
// CHECK-NEXT:    %[[D2:.*]] = graph.mul %[[D]], %[[D]]
// CHECK-NEXT:    %[[SQ:.*]] = graph.reduce_sum %[[D2]] axes [0, 2, 3] keepdims
// CHECK-NEXT:    %[[GSQ:.*]] = graph.all_reduce %[[SQ]] reduction sum world 2 : (tensor<1x4x1x1xf32>) -> tensor<1x4x1x1xf32>
// CHECK-NEXT:    %[[VAR:.*]] = graph.div %[[GSQ]], %[[COUNT]]
// CHECK-NEXT:    %[[EPS:.*]] = graph.constant dense<1.000000e-03> : tensor<f32>
// CHECK-NEXT:    %[[VE:.*]] = graph.add %[[VAR]], %[[EPS]]
// CHECK-NEXT:    %[[STD:.*]] = graph.sqrt %[[VE]]
// CHECK-NEXT:    %[[XHAT:.*]] = graph.div %[[D]], %[[STD]]
// CHECK-NEXT:    %[[GK:.*]] = graph.reshape %[[G]] shape [1, 4, 1, 1]
// CHECK-NEXT:    %[[SCALED:.*]] = graph.mul %[[XHAT]], %[[GK]]
// CHECK-NEXT:    %[[BK:.*]] = graph.reshape %[[B]] shape [1, 4, 1, 1]
// CHECK-NEXT:    %[[Y:.*]] = graph.add %[[SCALED]], %[[BK]]
// CHECK-NEXT:    %[[CM1:.*]] = graph.sub %[[COUNT]], %[[UNIT]]
// CHECK-NEXT:    %[[UNBIASED:.*]] = graph.div %[[GSQ]], %[[CM1]]
// CHECK-NEXT:    %[[KEEP:.*]] = graph.constant dense<9.700000e-01> : tensor<f32>
// CHECK-NEXT:    %[[M1:.*]] = graph.mul %[[M]], %[[KEEP]]
// CHECK-NEXT:    %[[MC:.*]] = graph.reshape %[[MEAN]] shape [4]
// CHECK-NEXT:    %[[MOM:.*]] = graph.constant dense<3.000000e-02> : tensor<f32>
// CHECK-NEXT:    %[[M2:.*]] = graph.mul %[[MC]], %[[MOM]]
// CHECK-NEXT:    %[[NEWM:.*]] = graph.add %[[M1]], %[[M2]]
// CHECK-NEXT:    %[[V1:.*]] = graph.mul %[[V]], %[[KEEP]]
// CHECK-NEXT:    %[[VC:.*]] = graph.reshape %[[UNBIASED]] shape [4]
// CHECK-NEXT:    %[[V2:.*]] = graph.mul %[[VC]], %[[MOM]]
// CHECK-NEXT:    %[[NEWV:.*]] = graph.add %[[V1]], %[[V2]]
// CHECK-NEXT:    %[[S:.*]] = graph.silu %[[Y]]
// CHECK-NEXT:    func.return %[[S]], %[[NEWM]], %[[NEWV]] : tensor<?x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>

// Every op made from the batch norm is located at it (line 76).
// LOC-COUNT-3: graph.all_reduce {{.*}} loc("{{.*}}sync-batch-norm.mlir":76:8)
// LOC:         graph.sqrt {{.*}} loc("{{.*}}sync-batch-norm.mlir":76:8)
// LOC:         graph.add {{.*}} -> tensor<4xf32> loc("{{.*}}sync-batch-norm.mlir":76:8)
// LOC:         graph.add {{.*}} -> tensor<4xf32> loc("{{.*}}sync-batch-norm.mlir":76:8)
// LOC-NEXT:    graph.silu {{.*}} loc("{{.*}}sync-batch-norm.mlir":77:8)

// The statistics add up over the three chunks: 3 + 2 + 0 all-reduces.
// STATS:      sync-batch-norm
// STATS-NEXT:   (S)  5 all-reduces  - Number of graph.all_reduce ops inserted
// STATS-NEXT:   (S)  2 batch-norms  - Number of batch norms synced

// world=1 (the default) leaves the training batch norm as it is.
// SINGLE: graph.batch_norm {{.*}} training
// SINGLE-NOT: graph.all_reduce
func.func @forward(%x: tensor<?x4x5x5xf32>) -> tensor<?x4x5x5xf32> {
  %g = graph.param "bn.weight" : tensor<4xf32>
  %b = graph.param "bn.bias" : tensor<4xf32>
  %m = graph.param "bn.running_mean" : tensor<4xf32>
  %v = graph.param "bn.running_var" : tensor<4xf32>
  %y = graph.batch_norm %x, %g, %b, %m, %v eps 1.000000e-03 momentum 3.000000e-02 : (tensor<?x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x4x5x5xf32>
  %s = graph.silu %y : tensor<?x4x5x5xf32>
  func.return %s : tensor<?x4x5x5xf32>
}

// -----

// A static batch: every rank runs 3 samples, so the global count is the
// constant 2 * 3 * 2 (two all-reduces, no count to reduce); a rank-2 input
// [N, C] reduces over the batch alone.
// CHECK-LABEL: func.func @forward
// CHECK-SAME:    (%[[X:.*]]: tensor<3x4xf32>)
// CHECK:         %[[COUNT:.*]] = graph.constant dense<6.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[SUM:.*]] = graph.reduce_sum %[[X]] axes [0] keepdims : (tensor<3x4xf32>) -> tensor<1x4xf32>
// CHECK-NEXT:    %[[GSUM:.*]] = graph.all_reduce %[[SUM]] reduction sum world 2 : (tensor<1x4xf32>) -> tensor<1x4xf32>
// CHECK-NEXT:    graph.div %[[GSUM]], %[[COUNT]]
// CHECK-COUNT-1: graph.all_reduce
// CHECK-NOT:     graph.all_reduce
// CHECK:         func.return
func.func @forward(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %g = graph.param "bn.weight" : tensor<4xf32>
  %b = graph.param "bn.bias" : tensor<4xf32>
  %m = graph.param "bn.running_mean" : tensor<4xf32>
  %v = graph.param "bn.running_var" : tensor<4xf32>
  %y = graph.batch_norm %x, %g, %b, %m, %v : (tensor<3x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  func.return %y : tensor<3x4xf32>
}

// -----

// LeNet-like: no batch norm, nothing to synchronise.
// CHECK-LABEL: func.func @forward
// CHECK-NOT:     graph.all_reduce
func.func @forward(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %y = graph.relu %x : tensor<?x4xf32>
  func.return %y : tensor<?x4xf32>
}
