// --mlir-pass-statistics: the ops each pass created, erased and modified, plus
// the statistics a pass reports itself (fuse-epilogues: fusions, not-fused).

// RUN: teeny-opt %s -p 'func.func(fuse-epilogues)' --mlir-pass-statistics -o /dev/null 2>&1 | filecheck %s --match-full-lines

// One chain fused: the fused op created; conv2d, batch_norm, silu and the four
// batch-norm params erased; func.return modified (it returns the fused op). The
// silu of @shared is not fused (its conv2d result has two uses).
// CHECK:      'func.func' Pipeline
// CHECK-NEXT:   fuse-epilogues
// CHECK-NEXT:     (S) 1 fusions      - Number of epilogue chains fused into one op
// CHECK-NEXT:     (S) 1 not-fused    - Number of fusions blocked (one remark each)
// CHECK-NEXT:     (S) 1 ops-created  - Number of operations created
// CHECK-NEXT:     (S) 7 ops-erased   - Number of operations erased
// CHECK-NEXT:     (S) 1 ops-modified - Number of operations modified in place
// CHECK-EMPTY:

func.func @conv_bn_silu(%x: tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32> {
  %w = graph.param "m.conv.weight" : tensor<16x8x1x1xf32>
  %g = graph.param "m.bn.weight" : tensor<16xf32>
  %b = graph.param "m.bn.bias" : tensor<16xf32>
  %m = graph.param "m.bn.running_mean" : tensor<16xf32>
  %v = graph.param "m.bn.running_var" : tensor<16xf32>
  %c = graph.conv2d %x, %w : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<?x16x4x4xf32>
  %n = graph.batch_norm %c, %g, %b, %m, %v eps 1.0e-3 : (tensor<?x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x16x4x4xf32>
  %y = graph.silu %n : tensor<?x16x4x4xf32>
  func.return %y : tensor<?x16x4x4xf32>
}

func.func @shared(%x: tensor<?x8x4x4xf32>) -> (tensor<?x16x4x4xf32>, tensor<?x16x4x4xf32>) {
  %w = graph.param "s.conv.weight" : tensor<16x8x1x1xf32>
  %c = graph.conv2d %x, %w : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<?x16x4x4xf32>
  %y = graph.silu %c : tensor<?x16x4x4xf32>
  func.return %c, %y : tensor<?x16x4x4xf32>, tensor<?x16x4x4xf32>
}
