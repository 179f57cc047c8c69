// RUN: teeny-opt %s | teeny-opt | filecheck %s
// RUN: teeny-opt %s --mlir-print-op-generic | teeny-opt | filecheck %s

// eps is absent when default (1e-5), and not printed.
// CHECK-LABEL: func.func @batch_norm_backward_default_eps(
// CHECK-SAME:      %[[X:[^:]*]]: tensor<?x16x8x8xf32>, %[[G:[^:]*]]: tensor<16xf32>, %[[DY:[^:]*]]: tensor<?x16x8x8xf32>
// CHECK:         %[[DX:.*]], %[[DG:.*]], %[[DB:.*]] = graph.batch_norm_backward %[[X]], %[[G]], %[[DY]] : (tensor<?x16x8x8xf32>, tensor<16xf32>, tensor<?x16x8x8xf32>) -> (tensor<?x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>)
// CHECK:         func.return %[[DX]], %[[DG]], %[[DB]]
func.func @batch_norm_backward_default_eps(%x: tensor<?x16x8x8xf32>, %g: tensor<16xf32>, %dy: tensor<?x16x8x8xf32>) -> (tensor<?x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>) {
  %dx, %dg, %db = graph.batch_norm_backward %x, %g, %dy : (tensor<?x16x8x8xf32>, tensor<16xf32>, tensor<?x16x8x8xf32>) -> (tensor<?x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>)
  func.return %dx, %dg, %db : tensor<?x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>
}

// CHECK-LABEL: func.func @batch_norm_backward_eps
// CHECK:         graph.batch_norm_backward %{{.*}}, %{{.*}}, %{{.*}} eps 1.000000e-03 {note = "kept"} : (tensor<4x3x5xf32>, tensor<3xf32>, tensor<4x3x5xf32>) -> (tensor<4x3x5xf32>, tensor<3xf32>, tensor<3xf32>)
func.func @batch_norm_backward_eps(%x: tensor<4x3x5xf32>, %g: tensor<3xf32>, %dy: tensor<4x3x5xf32>) -> tensor<4x3x5xf32> {
  %dx, %dg, %db = graph.batch_norm_backward %x, %g, %dy eps 1.0e-03 {note = "kept"} : (tensor<4x3x5xf32>, tensor<3xf32>, tensor<4x3x5xf32>) -> (tensor<4x3x5xf32>, tensor<3xf32>, tensor<3xf32>)
  func.return %dx : tensor<4x3x5xf32>
}

// Rank 2 [N, C]: the statistics are over the batch alone.
// CHECK-LABEL: func.func @batch_norm_backward_rank2
// CHECK:         graph.batch_norm_backward %{{.*}}, %{{.*}}, %{{.*}} eps 1.000000e-01 : (tensor<?x7xf32>, tensor<7xf32>, tensor<?x7xf32>) -> (tensor<?x7xf32>, tensor<7xf32>, tensor<7xf32>)
func.func @batch_norm_backward_rank2(%x: tensor<?x7xf32>, %g: tensor<7xf32>, %dy: tensor<?x7xf32>) -> tensor<7xf32> {
  %dx, %dg, %db = graph.batch_norm_backward %x, %g, %dy eps 0.1 : (tensor<?x7xf32>, tensor<7xf32>, tensor<?x7xf32>) -> (tensor<?x7xf32>, tensor<7xf32>, tensor<7xf32>)
  func.return %db : tensor<7xf32>
}
