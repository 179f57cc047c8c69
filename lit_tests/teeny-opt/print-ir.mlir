// Instrumentation output goes to stderr; -o /dev/null keeps only it in the pipe.

// RUN: teeny-opt %s -p 'func.func(cse),dce' --mlir-print-ir-after-all -o /dev/null 2>&1 | filecheck %s --check-prefix=AFTER
// RUN: teeny-opt %s -p 'func.func(cse),dce' --mlir-print-ir-before-all -o /dev/null 2>&1 | filecheck %s --check-prefix=BEFORE
// RUN: teeny-opt %s -p 'func.func(cse),dce' --mlir-print-ir-before-all --mlir-print-ir-after-all -o /dev/null 2>&1 | filecheck %s --check-prefix=BOTH
// RUN: teeny-opt %s -p 'func.func(cse),dce' --mlir-timing -o /dev/null 2>&1 | filecheck %s --check-prefix=TIMING
// RUN: teeny-opt %s --mlir-timing -o /dev/null 2>&1 | filecheck %s --check-prefix=TIMING-NO-PASSES
// RUN: teeny-opt %s -p cse --mlir-print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: teeny-opt %s --mlir-print-debuginfo | filecheck %s --check-prefix=DEBUGINFO

// A function pass dumps each function, named in the banner; a module pass
// dumps the module.
// AFTER:      {{^}}// -----// IR Dump After cse ('func.func' operation: @f) //----- //{{$}}
// AFTER-NEXT: {{^}}func.func @f(%a: i32) -> i32 {
// AFTER-NEXT:   %[[X:.*]] = arith.addi %a, %a : i32
// AFTER-NEXT:   arith.muli %[[X]], %[[X]] : i32
// AFTER:      {{^}}// -----// IR Dump After cse ('func.func' operation: @g) //----- //{{$}}
// AFTER-NEXT: {{^}}func.func @g(
// AFTER-NEXT:   func.return
// AFTER:      {{^}}// -----// IR Dump After dce //----- //{{$}}
// AFTER-NEXT: {{^}}builtin.module {
// AFTER-NOT:  IR Dump Before

// BEFORE:      {{^}}// -----// IR Dump Before cse ('func.func' operation: @f) //----- //{{$}}
// BEFORE-NEXT: {{^}}func.func @f(%a: i32) -> i32 {
// BEFORE-NEXT:   arith.addi %a, %a : i32
// BEFORE-NEXT:   arith.addi %a, %a : i32
// BEFORE:      {{^}}// -----// IR Dump Before cse ('func.func' operation: @g) //----- //{{$}}
// BEFORE-NEXT: {{^}}func.func @g(
// BEFORE-NEXT:   graph.silu
// BEFORE:      {{^}}// -----// IR Dump Before dce //----- //{{$}}
// BEFORE-NEXT: {{^}}builtin.module {
// BEFORE-NOT:  IR Dump After

// Before and after alternate, pass by pass and function by function.
// BOTH:      IR Dump Before cse ('func.func' operation: @f)
// BOTH:      IR Dump After cse ('func.func' operation: @f)
// BOTH:      IR Dump Before cse ('func.func' operation: @g)
// BOTH:      IR Dump After cse ('func.func' operation: @g)
// BOTH:      IR Dump Before dce //
// BOTH:      IR Dump After dce //

// MLIR's execution time report: one row per stage, nested rows indented.
// TIMING:      ... Execution time report ...
// TIMING:      Total Execution Time: {{[0-9]+\.[0-9]+}} seconds
// TIMING:      ----Wall Time----  ----Name----
// TIMING-NEXT: {{^ +[0-9]+\.[0-9]+ \( *[0-9]+\.[0-9]%\)  Parser$}}
// TIMING-NEXT: {{^ +[0-9]+\.[0-9]+ \( *[0-9]+\.[0-9]%\)  Verifier$}}
// TIMING-NEXT: {{^ +[0-9]+\.[0-9]+ \( *[0-9]+\.[0-9]%\)  'func.func' Pipeline$}}
// TIMING-NEXT: {{^ +[0-9]+\.[0-9]+ \( *[0-9]+\.[0-9]%\)    cse$}}
// TIMING-NEXT: {{^ +[0-9]+\.[0-9]+ \( *[0-9]+\.[0-9]%\)    \(verifier\)$}}
// TIMING-NEXT: {{^ +[0-9]+\.[0-9]+ \( *[0-9]+\.[0-9]%\)  dce$}}
// TIMING-NEXT: {{^ +[0-9]+\.[0-9]+ \( *[0-9]+\.[0-9]%\)  \(verifier\)$}}
// TIMING-NEXT: {{^ +[0-9]+\.[0-9]+ \( *[0-9]+\.[0-9]%\)  Output$}}
// TIMING-NEXT: {{^ +[0-9]+\.[0-9]+ \(100\.0%\)  Total$}}

// TIMING-NO-PASSES:      ----Wall Time----  ----Name----
// TIMING-NO-PASSES-NEXT: Parser
// TIMING-NO-PASSES-NEXT: Verifier
// TIMING-NO-PASSES-NEXT: Output
// TIMING-NO-PASSES-NEXT: Total

// GENERIC:      {{^}}"builtin.module"() ({
// GENERIC-NEXT: {{^}}  "func.func"() <{sym_name = "f", function_type = (i32) -> i32}> ({
// GENERIC-NEXT: {{^}}  ^bb0(%[[A:.*]]: i32):
// GENERIC-NEXT:   %[[X:.*]] = "arith.addi"(%[[A]], %[[A]]) <{overflowFlags = #arith.overflow<none>}> : (i32, i32) -> i32
// GENERIC-NEXT:   "arith.muli"(%[[X]], %[[X]]) <{overflowFlags = #arith.overflow<none>}> : (i32, i32) -> i32
// GENERIC:      "func.func"() <{sym_name = "g", function_type = (tensor<2xf32>) -> tensor<2xf32>}> ({
// GENERIC:      "func.return"(%{{.*}}) : (tensor<2xf32>) -> ()
// GENERIC:      {{^}}}) : () -> (){{$}}

// Each op is located at its name, as in MLIR.
// DEBUGINFO-LABEL: func.func @f(
// DEBUGINFO-NEXT:    arith.addi %a, %a : i32 loc("{{.*}}print-ir.mlir":[[# @LINE + 5]]:8)
// DEBUGINFO-NEXT:    arith.addi %a, %a : i32 loc("{{.*}}print-ir.mlir":[[# @LINE + 5]]:8)
// DEBUGINFO-NEXT:    arith.muli %0, %1 : i32 loc("{{.*}}print-ir.mlir":[[# @LINE + 5]]:8)
// DEBUGINFO-NEXT:    func.return %2 : i32 loc("{{.*}}print-ir.mlir":[[# @LINE + 5]]:3)
func.func @f(%a: i32) -> i32 {
  %0 = arith.addi %a, %a : i32
  %1 = arith.addi %a, %a : i32
  %2 = arith.muli %0, %1 : i32
  func.return %2 : i32
}
// DEBUGINFO-NEXT: } loc("{{.*}}print-ir.mlir":[[# @LINE - 6]]:1)

// DEBUGINFO-LABEL: func.func @g(
// DEBUGINFO-NEXT:    graph.silu %x : tensor<2xf32> loc("{{.*}}print-ir.mlir":[[# @LINE + 3]]:8)
// DEBUGINFO-NEXT:    func.return %x : tensor<2xf32> loc("{{.*}}print-ir.mlir":[[# @LINE + 3]]:3)
func.func @g(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = graph.silu %x : tensor<2xf32>
  func.return %x : tensor<2xf32>
}
