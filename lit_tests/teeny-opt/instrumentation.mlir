// Instrumentation flags built on the pass manager's hooks; everything goes to
// stderr, and -o /dev/null keeps only it in the pipe.

// RUN: teeny-opt %s -p 'func.func(cse,canonicalize),dce' --mlir-print-ir-after=cse,dce -o /dev/null 2>&1 | filecheck %s --check-prefix=AFTER
// RUN: teeny-opt %s -p 'func.func(cse,canonicalize),dce' --mlir-print-ir-after=cse --mlir-print-ir-after=dce -o /dev/null 2>&1 | filecheck %s --check-prefix=AFTER
// RUN: teeny-opt %s -p 'func.func(cse,canonicalize),dce' --mlir-print-ir-before=canonicalize -o /dev/null 2>&1 | filecheck %s --check-prefix=BEFORE
// RUN: teeny-opt %s -p 'func.func(cse),dce' --mlir-print-ir-after-all --mlir-print-ir-after-change -o /dev/null 2>&1 | filecheck %s --check-prefix=CHANGE
// RUN: not teeny-opt %s -p 'func.func(cse),emit-triton' --mlir-print-ir-after-failure -o /dev/null 2>&1 | filecheck %s --check-prefix=FAILURE
// RUN: teeny-opt %s -p 'func.func(cse),dce' --mlir-pass-statistics -o /dev/null 2>&1 | filecheck %s --check-prefix=STATS --match-full-lines
// RUN: teeny-opt %s -p 'func.func(cse),cse' --mlir-pass-statistics --mlir-pass-statistics-display=list -o /dev/null 2>&1 | filecheck %s --check-prefix=STATS-LIST --match-full-lines
// RUN: teeny-opt %s -p 'func.func(cse),dce' --mlir-timing --mlir-output-format=json -o /dev/null 2>&1 | filecheck %s --check-prefix=JSON
// RUN: not teeny-opt %s --mlir-print-ir-after=cs 2>&1 | filecheck %s --check-prefix=UNKNOWN-PASS
// RUN: not teeny-opt %s --mlir-output-format=yaml 2>&1 | filecheck %s --check-prefix=BAD-FORMAT
// RUN: not teeny-opt %s --list 2>&1 | filecheck %s --check-prefix=ABBREVIATED
// RUN: not teeny-opt %s --mlir-print-ir-aft 2>&1 | filecheck %s --check-prefix=ABBREVIATED-PRINT
// RUN: teeny-opt --version | filecheck %s --check-prefix=VERSION

// Only the named passes; a nested one once per function.
// AFTER:      {{^}}// -----// IR Dump After cse ('func.func' operation: @f) //----- //{{$}}
// AFTER-NEXT: {{^}}func.func @f(%a: i32) -> i32 {
// AFTER:      {{^}}// -----// IR Dump After cse ('func.func' operation: @g) //----- //{{$}}
// AFTER:      {{^}}// -----// IR Dump After dce //----- //{{$}}
// AFTER-NEXT: {{^}}builtin.module {
// AFTER-NOT:  IR Dump

// BEFORE:      {{^}}// -----// IR Dump Before canonicalize ('func.func' operation: @f) //----- //{{$}}
// BEFORE-NEXT: {{^}}func.func @f(%a: i32) -> i32 {
// BEFORE-NEXT:   arith.addi %a, %a : i32
// BEFORE-NEXT:   arith.muli
// BEFORE:      {{^}}// -----// IR Dump Before canonicalize ('func.func' operation: @g) //----- //{{$}}
// BEFORE-NOT:  IR Dump

// cse changes @f only, and dce has nothing left to remove.
// CHANGE:     {{^}}// -----// IR Dump After cse ('func.func' operation: @f) //----- //{{$}}
// CHANGE-NOT: IR Dump

// A failing pass is dumped as it left the IR; the passes that succeeded are not.
// FAILURE-NOT: IR Dump After cse
// FAILURE:     {{^}}// -----// IR Dump After emit-triton Failed //----- //{{$}}
// FAILURE-NEXT: {{^}}builtin.module {
// FAILURE:     error: emit-triton needs out-dir=DIR

// mlir-opt's pass statistics report: the pipeline's tree, statistics sorted by name.
// STATS:      ===-------------------------------------------------------------------------===
// STATS-NEXT:                          ... Pass statistics report ...
// STATS-NEXT: ===-------------------------------------------------------------------------===
// STATS-NEXT: 'func.func' Pipeline
// STATS-NEXT:   cse
// STATS-NEXT:     (S) 0 ops-created  - Number of operations created
// STATS-NEXT:     (S) 1 ops-erased   - Number of operations erased
// STATS-NEXT:     (S) 1 ops-modified - Number of operations modified in place
// STATS-NEXT: dce
// STATS-NEXT:   (S) 0 ops-created  - Number of operations created
// STATS-NEXT:   (S) 0 ops-erased   - Number of operations erased
// STATS-NEXT:   (S) 0 ops-modified - Number of operations modified in place
// STATS-EMPTY:

// The list display merges every run of a pass under its name.
// STATS-LIST:      ===-------------------------------------------------------------------------===
// STATS-LIST-NEXT:                          ... Pass statistics report ...
// STATS-LIST-NEXT: ===-------------------------------------------------------------------------===
// STATS-LIST-NEXT:   cse
// STATS-LIST-NEXT:     (S) 0 ops-created  - Number of operations created
// STATS-LIST-NEXT:     (S) 1 ops-erased   - Number of operations erased
// STATS-LIST-NEXT:     (S) 1 ops-modified - Number of operations modified in place
// STATS-LIST-EMPTY:

// mlir-opt's JSON timing: one object per row, nested rows in "passes".
// JSON:      {{^}}[{{$}}
// JSON-NEXT: {{^}}{"wall": {"duration": {{ +[0-9]+\.[0-9][0-9][0-9][0-9]}}, "percentage": {{ *[0-9]+\.[0-9]}}}, "name": "Parser", "passes": [{{$}}
// JSON-NEXT: {{^}}{}]},{{$}}
// JSON-NEXT: {{^}}{"wall": {{.*}}, "name": "Verifier", "passes": [{{$}}
// JSON-NEXT: {{^}}{}]},{{$}}
// JSON-NEXT: {{^}}{"wall": {{.*}}, "name": "'func.func' Pipeline", "passes": [{{$}}
// JSON-NEXT: {{^}}  {"wall": {{.*}}, "name": "cse", "passes": [{{$}}
// JSON-NEXT: {{^}}  {}]},{{$}}
// JSON-NEXT: {{^}}  {"wall": {{.*}}, "name": "(verifier)", "passes": [{{$}}
// JSON-NEXT: {{^}}  {}]},{{$}}
// JSON-NEXT: {{^}}{}]},{{$}}
// JSON-NEXT: {{^}}{"wall": {{.*}}, "name": "dce", "passes": [{{$}}
// JSON:      {{^}}{"wall": {{.*}}, "name": "Output", "passes": [{{$}}
// JSON-NEXT: {{^}}{}]},{{$}}
// JSON-NEXT: {{^}}{"wall": {{.*}}, "name": "Rest"},{{$}}
// JSON-NEXT: {{^}}{"wall": {"duration": {{ +[0-9]+\.[0-9][0-9][0-9][0-9]}}, "percentage": 100.0}, "name": "Total"}{{$}}
// JSON-NEXT: {{^}}]{{$}}
// JSON-NOT:  Execution time report

// Usage errors: one line, exit status 1.
// UNKNOWN-PASS: {{^}}teeny-opt: error: --mlir-print-ir-after: unknown pass 'cs' (valid: {{[^)]*}}); did you mean 'cse'?{{$}}
// BAD-FORMAT: {{^}}teeny-opt: error: argument --mlir-output-format: invalid choice: 'yaml' (choose from {{.*}}){{$}}
// Flags are never abbreviated (as LLVM's): --list is not --list-passes.
// ABBREVIATED: {{^}}teeny-opt: error: unrecognized arguments: --list{{$}}
// ABBREVIATED-PRINT: {{^}}teeny-opt: error: unrecognized arguments: --mlir-print-ir-aft{{$}}

// VERSION:      {{^}}teeny-opt (teeny_ir) {{[0-9]+\.[0-9]+\.[0-9]+.*$}}
// VERSION-NEXT: {{^}}  xDSL {{[0-9]+\.[0-9]+\.[0-9]+.*$}}

func.func @f(%a: i32) -> i32 {
  %0 = arith.addi %a, %a : i32
  %1 = arith.addi %a, %a : i32
  %2 = arith.muli %0, %1 : i32
  func.return %2 : i32
}
func.func @g(%x: tensor<2xf32>) -> tensor<2xf32> {
  func.return %x : tensor<2xf32>
}
