// --verify-diagnostics fails on every mismatch between the diagnostics and the
// `expected-*` annotations, and reports each one at its line.

// RUN: not teeny-opt %s --split-input-file --verify-diagnostics 2>&1 | filecheck %s

func.func @wrong_message(%a: i32) -> i64 {
  // CHECK: verify-diagnostics.mlir:[[# @LINE + 3]]:3: error: unexpected error: 'func.return' op Expected arguments to have the same types as the function output types: expected [i64], got [i32]
  // CHECK: verify-diagnostics.mlir:[[# @LINE + 1]]:6: error: expected error "some other message" was not produced
  // expected-error@+1 {{some other message}}
  func.return %a : i32
}

// -----

func.func @wrong_line(%a: i32) -> i64 {
  // CHECK: verify-diagnostics.mlir:[[# @LINE + 3]]:3: error: unexpected error: 'func.return' op Expected arguments
  // CHECK: verify-diagnostics.mlir:[[# @LINE + 1]]:6: error: expected error "'func.return' op Expected arguments" was not produced
  // expected-error@+2 {{'func.return' op Expected arguments}}
  func.return %a : i32
}

// -----

func.func @nothing_produced(%a: i32) -> i32 {
  // CHECK: verify-diagnostics.mlir:[[# @LINE + 1]]:6: error: expected error "nothing wrong here" was not produced
  // expected-error@+1 {{nothing wrong here}}
  func.return %a : i32
}

// -----

func.func @not_annotated(%a: i32) -> i64 {
  // CHECK: verify-diagnostics.mlir:[[# @LINE + 1]]:3: error: unexpected error: 'func.return' op Expected arguments
  func.return %a : i32
}

// -----

// Matching annotations, plain and `-re`, are silent.
// CHECK-NOT: unexpected error
func.func @matched(%a: i32) -> i64 {
  // expected-error@+1 {{'func.return' op Expected arguments}}
  func.return %a : i32
}
func.func @matched_re(%a: i32) -> i64 {
  // expected-error-re@+1 {{expected [{{i[0-9]+}}], got [i32]}}
  func.return %a : i32
}

// -----

// Unlike MLIR, a malformed annotation is an error, not silently ignored.
func.func @malformed(%a: i32) -> i32 {
  // CHECK: verify-diagnostics.mlir:[[# @LINE + 1]]:{{[0-9]+}}: error:
  // expected-error@+1 {{missing closing braces
  func.return %a : i32
}
