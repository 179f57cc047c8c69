// RUN: teeny-opt %s --split-input-file -p dce | filecheck %s
// RUN: teeny-opt %s --split-input-file --pass-pipeline='builtin.module(dce)' | filecheck %s
// RUN: teeny-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(dce))' | filecheck %s

// CHECK-LABEL: func.func @unused_arith
// CHECK-SAME:    (%[[A:.*]]: i32)
// CHECK-NEXT:    func.return %[[A]] : i32
func.func @unused_arith(%a: i32) -> i32 {
  %c1 = arith.constant 1 : i32
  %0 = arith.addi %a, %c1 : i32
  func.return %a : i32
}

// -----

// A chain of ops that only feed each other is dead as a whole.
// CHECK-LABEL: func.func @dead_chain
// CHECK-SAME:    (%[[X:.*]]: tensor<?x8xf32>)
// CHECK-NEXT:    func.return %[[X]] : tensor<?x8xf32>
func.func @dead_chain(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %0 = graph.silu %x : tensor<?x8xf32>
  %1 = graph.silu %0 : tensor<?x8xf32>
  %2 = graph.silu %1 : tensor<?x8xf32>
  func.return %x : tensor<?x8xf32>
}

// -----

// CHECK-LABEL: func.func @live_ops_stay
// CHECK-SAME:    (%[[X:.*]]: tensor<?x8xf32>)
// CHECK-NEXT:    %[[Y:.*]] = graph.silu %[[X]] : tensor<?x8xf32>
// CHECK-NEXT:    %[[Z:.*]] = graph.silu %[[Y]] : tensor<?x8xf32>
// CHECK-NEXT:    func.return %[[Z]] : tensor<?x8xf32>
func.func @live_ops_stay(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %0 = graph.silu %x : tensor<?x8xf32>
  %1 = graph.silu %0 : tensor<?x8xf32>
  func.return %1 : tensor<?x8xf32>
}

// -----

// A call may have side effects: its unused result does not make it dead.
func.func private @effect(i32) -> i32

// CHECK-LABEL: func.func @calls_stay
// CHECK-NEXT:    func.call @effect
// CHECK-NEXT:    func.return
func.func @calls_stay(%a: i32) {
  %0 = func.call @effect(%a) : (i32) -> i32
  func.return
}

// -----

// dce leaves duplicates alone (that is cse's job).
// CHECK-LABEL: func.func @duplicates_stay
// CHECK-SAME:    (%[[A:.*]]: i32)
// CHECK-NEXT:    %[[X:.*]] = arith.addi %[[A]], %[[A]] : i32
// CHECK-NEXT:    %[[Y:.*]] = arith.addi %[[A]], %[[A]] : i32
// CHECK-NEXT:    func.return %[[X]], %[[Y]] : i32, i32
func.func @duplicates_stay(%a: i32) -> (i32, i32) {
  %0 = arith.addi %a, %a : i32
  %1 = arith.addi %a, %a : i32
  func.return %0, %1 : i32, i32
}
