// Empty and comment-only input is an empty module, as in mlir-opt; a file
// metadata trailer carrying an MLIR reproducer configuration is read and ignored.

// RUN: teeny-opt %s --split-input-file | filecheck %s --check-prefix=SPLIT --match-full-lines
// RUN: teeny-opt %s | filecheck %s --check-prefix=WHOLE --match-full-lines
// RUN: teeny-opt %s -p cse | filecheck %s --check-prefix=WHOLE --match-full-lines

// This first chunk holds only comments; the next one is empty.

// SPLIT:      builtin.module {
// SPLIT-NEXT: }
// SPLIT-NEXT: // -----
// SPLIT-NEXT: builtin.module {
// SPLIT-NEXT: }
// SPLIT-NEXT: // -----
// SPLIT-NEXT: builtin.module {
// SPLIT-NEXT:   func.func @with_reproducer_trailer() {
// SPLIT-NEXT:     func.return
// SPLIT-NEXT:   }
// SPLIT-NEXT: }

// Without splitting, the separators are comments and the file is one module.
// WHOLE:      builtin.module {
// WHOLE-NEXT:   func.func @with_reproducer_trailer() {
// WHOLE-NEXT:     func.return
// WHOLE-NEXT:   }
// WHOLE-NEXT: }

// -----
// -----

func.func @with_reproducer_trailer() {
  func.return
}

{-# external_resources: { mlir_reproducer: { pipeline: "builtin.module(cse)", disable_threading: true, verify_each: true } } #-}
