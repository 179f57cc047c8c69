// RUN: teeny-opt %s -p 'lower-graph-to-kernel' | filecheck %s
// RUN: teeny-opt %s -p 'lower-graph-to-kernel' | teeny-opt | filecheck %s
// RUN: teeny-opt %s -p 'lower-graph-to-kernel,emit-triton{out-dir=%t}' -o /dev/null
// RUN: cat %t/plan.json | filecheck %s --check-prefix=PLAN

// A cross-entropy becomes one launch with two results: the loss, which replaces
// the graph op's, and a [3] i64 status (targets out of range: count, first index,
// its value) that nothing in the IR uses and the runtime checks after the run.
// CHECK-LABEL: func.func @forward
// CHECK-SAME:    (%[[X:.*]]: tensor<?x13xf32>, %[[T:.*]]: tensor<?xi64>) -> tensor<f32>
// CHECK-NEXT:    %[[L:.*]], %{{.*}} = kernel.launch "cross_entropy" (%[[X]], %[[T]]) {BLOCK_ROWS = 128, BLOCK_C = 16}
// CHECK-SAME:      args [logits = in0, targets = in1, loss = out0, status = out1, N = "B", C = "13", logits_batch_stride = "13"]
// CHECK-SAME:      grid ["1", "1", "1"] warps 4 stages 1 : (tensor<?x13xf32>, tensor<?xi64>) -> (tensor<f32>, tensor<3xi64>)
// CHECK-NEXT:    func.return %[[L]] : tensor<f32>

// The plan's inputs and buffers carry their dtypes.
// PLAN:      "buffers": [
// PLAN-NEXT:   {
// PLAN-NEXT:     "dtype": "f32",
// PLAN-NEXT:     "name": "t0",
// PLAN-NEXT:     "offset": "0",
// PLAN-NEXT:     "shape": []
// PLAN-NEXT:   },
// PLAN-NEXT:   {
// PLAN-NEXT:     "dtype": "i64",
// PLAN-NEXT:     "name": "t1",
// PLAN-NEXT:     "offset": "256",
// PLAN-NEXT:     "shape": [
// PLAN-NEXT:       3
// PLAN:      "inputs": [
// PLAN-NEXT:   {
// PLAN-NEXT:     "dtype": "f32",
// PLAN-NEXT:     "name": "in0",
// PLAN:          "dtype": "i64",
// PLAN-NEXT:     "name": "in1",
// PLAN-NEXT:     "shape": [
// PLAN-NEXT:       "B"
// PLAN:      "version": 8
func.func @forward(%x: tensor<?x13xf32>, %t: tensor<?xi64>) -> tensor<f32> {
  %l = graph.cross_entropy %x, %t : (tensor<?x13xf32>, tensor<?xi64>) -> tensor<f32>
  func.return %l : tensor<f32>
}
