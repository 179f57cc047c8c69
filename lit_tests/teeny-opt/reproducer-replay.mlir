// A file ending with MLIR's reproducer trailer: --run-reproducer runs its
// pipeline (and its verify_each); without the flag the trailer is ignored.

// RUN: teeny-opt %s --run-reproducer | filecheck %s --check-prefix=REPLAY
// RUN: teeny-opt %s --run-reproducer --dump-pass-pipeline -o /dev/null 2>&1 | filecheck %s --check-prefix=PIPELINE
// RUN: teeny-opt %s | filecheck %s --check-prefix=PLAIN

// REPLAY-LABEL: func.func @f
// REPLAY-NEXT:    %[[X:.*]] = arith.addi %a, %a : i32
// REPLAY-NEXT:    arith.muli %[[X]], %[[X]] : i32

// PIPELINE: {{^}}builtin.module(func.func(cse)){{$}}

// PLAIN-LABEL: func.func @f
// PLAIN-NEXT:    arith.addi
// PLAIN-NEXT:    arith.addi

func.func @f(%a: i32) -> i32 {
  %0 = arith.addi %a, %a : i32
  %1 = arith.addi %a, %a : i32
  %2 = arith.muli %0, %1 : i32
  func.return %2 : i32
}

{-#
  external_resources: {
    mlir_reproducer: {
      pipeline: "builtin.module(func.func(cse))",
      disable_threading: true,
      verify_each: true
    }
  }
#-}
