// fuse-epilogues folds a matmul's bias add (a [N] graph.param along the last
// dimension, either operand order) and activation into graph.matmul, and an
// activation after a standalone inference batch norm into graph.batch_norm;
// the fused ops lower to one launch each, with the bias as the matmul's shift slot.

// RUN: teeny-opt %s -p fuse-epilogues | filecheck %s --check-prefix=FUSE
// RUN: teeny-opt %s -p 'fuse-epilogues{mode=training}' | filecheck %s --check-prefix=TRAIN
// RUN: teeny-opt %s -p 'fuse-epilogues,lower-graph-to-kernel' | filecheck %s --check-prefix=LOWER
// RUN: teeny-opt %s -p 'func.func(fuse-epilogues)' --mlir-pass-statistics -o /dev/null 2>&1 | filecheck %s --check-prefix=STATS

// FUSE-LABEL: func.func @matmul_bias_silu
// FUSE:         %[[B:.*]] = graph.param "bias" : tensor<45xf32>
// FUSE-NEXT:    %[[Y:.*]] = graph.matmul %a, %r, %[[B]] activation silu : (tensor<?x3x37x29xf32>, tensor<29x45xf32>, tensor<45xf32>) -> tensor<?x3x37x45xf32>
// FUSE-NEXT:    func.return %[[Y]]
// TRAIN-LABEL: func.func @matmul_bias_silu
// TRAIN:         graph.matmul %a, %r, %{{.*}} activation silu
// LOWER-LABEL: func.func @matmul_bias_silu
// LOWER:         kernel.weight "bias" : tensor<45xf32>
// LOWER-NEXT:    kernel.launch "matmul" (%a, %r) {{{.*}}ACTIVATION = "silu"} params [scale : tensor<45xf32> = #derive.param<fill(1.0) : [45]>, shift : tensor<45xf32> = #derive.param<identity("bias") : [45]>]
func.func @matmul_bias_silu(%a: tensor<?x3x37x29xf32>, %r: tensor<29x45xf32>) -> tensor<?x3x37x45xf32> {
  %b = graph.param "bias" : tensor<45xf32>
  %y = graph.matmul %a, %r : (tensor<?x3x37x29xf32>, tensor<29x45xf32>) -> tensor<?x3x37x45xf32>
  %z = graph.add %b, %y : (tensor<45xf32>, tensor<?x3x37x45xf32>) -> tensor<?x3x37x45xf32>
  %s = graph.silu %z : tensor<?x3x37x45xf32>
  func.return %s : tensor<?x3x37x45xf32>
}

// A bias that is not a graph.param stays a graph.add (and a remark says why).
// FUSE-LABEL: func.func @matmul_bias_not_a_param
// FUSE:         graph.matmul %a, %r :
// FUSE-NEXT:    graph.add
// FUSE-NEXT:    graph.relu
func.func @matmul_bias_not_a_param(%a: tensor<?x7xf32>, %r: tensor<7x5xf32>, %c: tensor<5xf32>) -> tensor<?x5xf32> {
  %y = graph.matmul %a, %r : (tensor<?x7xf32>, tensor<7x5xf32>) -> tensor<?x5xf32>
  %z = graph.add %y, %c : (tensor<?x5xf32>, tensor<5xf32>) -> tensor<?x5xf32>
  %s = graph.relu %z : tensor<?x5xf32>
  func.return %s : tensor<?x5xf32>
}

// FUSE-LABEL: func.func @batch_norm_silu
// FUSE:         %[[N:.*]] = graph.batch_norm %x, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} eps 1.000000e-03 activation silu : (tensor<?x5x7x9xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>) -> tensor<?x5x7x9xf32>
// FUSE-NEXT:    func.return %[[N]]
// TRAIN-LABEL: func.func @batch_norm_silu
// TRAIN:         graph.batch_norm %x, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} eps 1.000000e-03 : (
// TRAIN-NEXT:    graph.silu
// LOWER-LABEL: func.func @batch_norm_silu
// LOWER:         kernel.launch "channel_affine" (%x) {ACTIVATION = "silu", BLOCK = 1024}
func.func @batch_norm_silu(%x: tensor<?x5x7x9xf32>) -> tensor<?x5x7x9xf32> {
  %g = graph.param "bn.weight" : tensor<5xf32>
  %be = graph.param "bn.bias" : tensor<5xf32>
  %m = graph.param "bn.running_mean" : tensor<5xf32>
  %v = graph.param "bn.running_var" : tensor<5xf32>
  %n = graph.batch_norm %x, %g, %be, %m, %v eps 1.0e-3 : (tensor<?x5x7x9xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>) -> tensor<?x5x7x9xf32>
  %y = graph.silu %n : tensor<?x5x7x9xf32>
  func.return %y : tensor<?x5x7x9xf32>
}

// The matmul and batch-norm fusions count with the conv and linear ones; the
// graph.add of a non-param bias is the one blocked fusion.
// STATS:      fuse-epilogues
// STATS-NEXT:   (S) 2 fusions      - Number of epilogue chains fused into one op
// STATS-NEXT:   (S) 1 not-fused    - Number of fusions blocked (one remark each)
