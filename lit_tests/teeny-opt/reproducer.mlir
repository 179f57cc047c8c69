// --mlir-pass-pipeline-crash-reproducer writes the IR from before the failing
// pass with MLIR's reproducer trailer; --run-reproducer replays it.

// RUN: not teeny-opt %s -p 'func.func(cse),emit-triton' --mlir-pass-pipeline-crash-reproducer=%t 2>&1 | filecheck %s --check-prefix=NOTE
// RUN: filecheck %s --input-file=%t --check-prefix=REPRO --match-full-lines
// RUN: not teeny-opt %t --run-reproducer 2>&1 | filecheck %s --check-prefix=REPLAY
// RUN: teeny-opt %t | filecheck %s --check-prefix=IGNORED
// RUN: not teeny-opt %s -p cse --mlir-pass-pipeline-crash-reproducer=%s 2>&1 | filecheck %s --check-prefix=INPUT
// RUN: not teeny-opt %s --run-reproducer 2>&1 | filecheck %s --check-prefix=NO-TRAILER
// RUN: not teeny-opt %t --run-reproducer -p cse 2>&1 | filecheck %s --check-prefix=PIPELINE-TOO

// NOTE:      error: emit-triton needs out-dir=DIR (the directory to write)
// NOTE:      {{^}}teeny-opt: note: reproducer generated at '{{.*}}reproducer.mlir.tmp'{{$}}

// The IR before emit-triton: cse has run.
// REPRO:      builtin.module {
// REPRO-NEXT:   func.func @f(%a: i32) -> i32 {
// REPRO-NEXT:     %0 = arith.addi %a, %a : i32
// REPRO-NEXT:     %1 = arith.muli %0, %0 : i32
// REPRO-NEXT:     func.return %1 : i32
// REPRO-NEXT:   }
// REPRO-NEXT: }
// REPRO-EMPTY:
// REPRO-NEXT: {-#
// REPRO-NEXT:   external_resources: {
// REPRO-NEXT:     mlir_reproducer: {
// REPRO-NEXT:       pipeline: "builtin.module(emit-triton)",
// REPRO-NEXT:       disable_threading: true,
// REPRO-NEXT:       verify_each: true
// REPRO-NEXT:     }
// REPRO-NEXT:   }
// REPRO-NEXT: #-}

// The replay fails the same way, located in the reproducer.
// REPLAY:     {{^}}{{.*}}reproducer.mlir.tmp:1:1: error: emit-triton needs out-dir=DIR (the directory to write){{$}}
// REPLAY-NOT: reproducer generated

// Without --run-reproducer the trailer is read and ignored.
// IGNORED:     func.func @f
// IGNORED-NOT: {-#

// INPUT: {{^}}teeny-opt: error: refusing to overwrite the input file '{{.*}}reproducer.mlir' with the crash reproducer{{$}}
// NO-TRAILER: reproducer.mlir:[[# @LINE + 8]]:2: error: expected the input to end with a reproducer trailer '{-# external_resources: { mlir_reproducer: { pipeline: "..." } } #-}'
// PIPELINE-TOO: {{^}}teeny-opt: error: --run-reproducer runs the reproducer's own pipeline: give no --pass-pipeline or -p{{$}}

func.func @f(%a: i32) -> i32 {
  %0 = arith.addi %a, %a : i32
  %1 = arith.addi %a, %a : i32
  %2 = arith.muli %0, %1 : i32
  func.return %2 : i32
}
