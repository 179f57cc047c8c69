// RUN: teeny-opt %s | teeny-opt | filecheck %s
// RUN: teeny-opt %s --mlir-print-op-generic | teeny-opt | filecheck %s

// graph.broadcast: numpy broadcasting to the result type (the backward of the
// reductions, and zero gradients over a dynamic batch).

// The batch comes from the input.
// CHECK-LABEL: func.func @broadcast_keepdims(
// CHECK-SAME:      %[[G:[^:]*]]: tensor<?x16x1x1xf32>
// CHECK:         %[[Y:.*]] = graph.broadcast %[[G]] : (tensor<?x16x1x1xf32>) -> tensor<?x16x8x8xf32>
// CHECK:         func.return %[[Y]]
func.func @broadcast_keepdims(%g: tensor<?x16x1x1xf32>) -> tensor<?x16x8x8xf32> {
  %y = graph.broadcast %g : (tensor<?x16x1x1xf32>) -> tensor<?x16x8x8xf32>
  func.return %y : tensor<?x16x8x8xf32>
}

// Static shapes; leading dimensions are added.
// CHECK-LABEL: func.func @broadcast_static
// CHECK:         graph.broadcast %{{.*}} {note = "kept"} : (tensor<5xf32>) -> tensor<2x3x5xf32>
func.func @broadcast_static(%v: tensor<5xf32>) -> tensor<2x3x5xf32> {
  %y = graph.broadcast %v {note = "kept"} : (tensor<5xf32>) -> tensor<2x3x5xf32>
  func.return %y : tensor<2x3x5xf32>
}

// A dynamic batch the input lacks comes from the batch source.
// CHECK-LABEL: func.func @broadcast_batch_source(
// CHECK-SAME:      %[[Z:[^:]*]]: tensor<f32>, %[[X:[^:]*]]: tensor<?x32xf32>
// CHECK:         graph.broadcast %[[Z]], %[[X]] : (tensor<f32>, tensor<?x32xf32>) -> tensor<?x16xf32>
// CHECK:         graph.broadcast %{{.*}}, %[[X]] : (tensor<1x16xf32>, tensor<?x32xf32>) -> tensor<?x16xf32>
func.func @broadcast_batch_source(%zero: tensor<f32>, %x: tensor<?x32xf32>, %m: tensor<1x16xf32>) -> (tensor<?x16xf32>, tensor<?x16xf32>) {
  %a = graph.broadcast %zero, %x : (tensor<f32>, tensor<?x32xf32>) -> tensor<?x16xf32>
  %b = graph.broadcast %m, %x : (tensor<1x16xf32>, tensor<?x32xf32>) -> tensor<?x16xf32>
  func.return %a, %b : tensor<?x16xf32>, tensor<?x16xf32>
}
