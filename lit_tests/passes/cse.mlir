// RUN: teeny-opt %s --split-input-file -p cse | filecheck %s
// RUN: teeny-opt %s --split-input-file --pass-pipeline='builtin.module(cse)' | filecheck %s
// RUN: teeny-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(cse))' | filecheck %s
// RUN: teeny-opt %s --split-input-file -p 'func.func(cse)' | filecheck %s

// Module-level and function-level cse give the same result on every case.

// CHECK-LABEL: func.func @duplicate_arith
// CHECK-SAME:    (%[[A:.*]]: i32, %[[B:.*]]: i32)
// CHECK-NEXT:    %[[SUM:.*]] = arith.addi %[[A]], %[[B]] : i32
// CHECK-NEXT:    %[[PRODUCT:.*]] = arith.muli %[[SUM]], %[[SUM]] : i32
// CHECK-NEXT:    func.return %[[PRODUCT]] : i32
func.func @duplicate_arith(%a: i32, %b: i32) -> i32 {
  %0 = arith.addi %a, %b : i32
  %1 = arith.addi %a, %b : i32
  %2 = arith.muli %0, %1 : i32
  func.return %2 : i32
}

// -----

// CHECK-LABEL: func.func @duplicate_constants
// CHECK-NEXT:    %[[C:.*]] = arith.constant 7 : i32
// CHECK-NEXT:    func.return %[[C]], %[[C]] : i32, i32
func.func @duplicate_constants() -> (i32, i32) {
  %0 = arith.constant 7 : i32
  %1 = arith.constant 7 : i32
  func.return %0, %1 : i32, i32
}

// -----

// A chain of duplicates collapses once its operands have been merged.
// CHECK-LABEL: func.func @duplicate_chain
// CHECK-SAME:    (%[[A:.*]]: i32)
// CHECK-NEXT:    %[[X:.*]] = arith.addi %[[A]], %[[A]] : i32
// CHECK-NEXT:    %[[Y:.*]] = arith.muli %[[X]], %[[A]] : i32
// CHECK-NEXT:    func.return %[[Y]], %[[Y]] : i32, i32
func.func @duplicate_chain(%a: i32) -> (i32, i32) {
  %0 = arith.addi %a, %a : i32
  %1 = arith.addi %a, %a : i32
  %2 = arith.muli %0, %a : i32
  %3 = arith.muli %1, %a : i32
  func.return %2, %3 : i32, i32
}

// -----

// CHECK-LABEL: func.func @duplicate_silu
// CHECK-SAME:    (%[[X:.*]]: tensor<?x4xf32>)
// CHECK-NEXT:    %[[Y:.*]] = graph.silu %[[X]] : tensor<?x4xf32>
// CHECK-NEXT:    func.return %[[Y]], %[[Y]] : tensor<?x4xf32>, tensor<?x4xf32>
func.func @duplicate_silu(%x: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>) {
  %0 = graph.silu %x : tensor<?x4xf32>
  %1 = graph.silu %x : tensor<?x4xf32>
  func.return %0, %1 : tensor<?x4xf32>, tensor<?x4xf32>
}

// -----

// Different operands, operand order, predicates or attributes: nothing to merge.
// CHECK-LABEL: func.func @not_equivalent
// CHECK-SAME:    (%[[A:.*]]: i32, %[[B:.*]]: i32, %[[F:.*]]: f32)
// CHECK-NEXT:    %[[R0:.*]] = arith.addi %[[A]], %[[B]] : i32
// CHECK-NEXT:    %[[R1:.*]] = arith.addi %[[B]], %[[A]] : i32
// CHECK-NEXT:    %[[R2:.*]] = arith.cmpi slt, %[[A]], %[[B]] : i32
// CHECK-NEXT:    %[[R3:.*]] = arith.cmpi sgt, %[[A]], %[[B]] : i32
// CHECK-NEXT:    %[[R4:.*]] = arith.addf %[[F]], %[[F]] : f32
// CHECK-NEXT:    %[[R5:.*]] = arith.addf %[[F]], %[[F]] fastmath<fast> : f32
// CHECK-NEXT:    func.return %[[R0]], %[[R1]], %[[R2]], %[[R3]], %[[R4]], %[[R5]] :
func.func @not_equivalent(%a: i32, %b: i32, %f: f32) -> (i32, i32, i1, i1, f32, f32) {
  %0 = arith.addi %a, %b : i32
  %1 = arith.addi %b, %a : i32
  %2 = arith.cmpi slt, %a, %b : i32
  %3 = arith.cmpi sgt, %a, %b : i32
  %4 = arith.addf %f, %f : f32
  %5 = arith.addf %f, %f fastmath<fast> : f32
  func.return %0, %1, %2, %3, %4, %5 : i32, i32, i1, i1, f32, f32
}

// -----

// Calls may have side effects: identical calls all stay.
func.func private @effect(i32) -> i32

// CHECK-LABEL: func.func @calls_stay
// CHECK-NEXT:    %[[R0:.*]] = func.call @effect
// CHECK-NEXT:    %[[R1:.*]] = func.call @effect
// CHECK-NEXT:    func.return %[[R0]], %[[R1]] : i32, i32
func.func @calls_stay(%a: i32) -> (i32, i32) {
  %0 = func.call @effect(%a) : (i32) -> i32
  %1 = func.call @effect(%a) : (i32) -> i32
  func.return %0, %1 : i32, i32
}

// -----

// Identical ops in different functions are not merged across the boundary.
// CHECK-LABEL: func.func @first
// CHECK-NEXT:    arith.addi
// CHECK-LABEL: func.func @second
// CHECK-NEXT:    arith.addi
func.func @first(%a: i32) -> i32 {
  %0 = arith.addi %a, %a : i32
  func.return %0 : i32
}
func.func @second(%a: i32) -> i32 {
  %0 = arith.addi %a, %a : i32
  func.return %0 : i32
}
