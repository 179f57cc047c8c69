// Every error below is annotated, so --verify-diagnostics accepts the file;
// the second RUN line checks how the same errors print without it.

// RUN: teeny-opt %s --split-input-file --verify-diagnostics
// RUN: not teeny-opt %s --split-input-file 2>&1 | filecheck %s

// Parse errors: `file:line:col: error:`, the source line and a caret.

func.func @missing_type(%a: i32) -> i32 {
  %0 = arith.addi %a, %a
  // CHECK: diagnostics.mlir:[[# @LINE + 2]]:3: error: Expected ':'
  // expected-error@+1 {{Expected ':'}}
  func.return %0 : i32
}

// -----

func.func @redefined(%a: i32) -> i32 {
  %0 = arith.addi %a, %a : i32
  // CHECK: diagnostics.mlir:[[# @LINE + 4]]:3: error: SSA value %0 is already defined
  // CHECK-NEXT: {{^}}  %0 = arith.addi %a, %a : i32{{$}}
  // CHECK-NEXT: {{^}}  ^{{$}}
  // expected-error@+1 {{SSA value %0 is already defined}}
  %0 = arith.addi %a, %a : i32
  func.return %0 : i32
}

// -----

func.func @type_mismatch(%a: i32) -> i32 {
  // CHECK: diagnostics.mlir:[[# @LINE + 2]]:19: error: operand is used with type i64, but has been previously used or defined with type i32
  // expected-error@+1 {{operand is used with type i64}}
  %0 = arith.addi %a, %a : i64
  func.return %0 : i32
}

// -----

func.func @unterminated_string() {
  // CHECK: diagnostics.mlir:[[# @LINE + 2]]:36: error: End of file reached before closing string literal.
  // expected-error@+1 {{closing string literal}}
  %0 = "arith.constant"() {value = "abc} : () -> i32
  func.return
}

// -----

// Verifier errors: every failing op in a chunk is reported, each with a note
// showing the op (the note is left out under --verify-diagnostics, as in MLIR).

func.func @two_bad_returns(%a: i32) -> i64 {
  // CHECK: diagnostics.mlir:[[# @LINE + 3]]:3: error: 'func.return' op Expected arguments to have the same types as the function output types: expected [i64], got [i32]
  // CHECK: diagnostics.mlir:[[# @LINE + 2]]:3: note: see current operation: "func.return"(%a) : (i32) -> ()
  // expected-error@+1 {{'func.return' op Expected arguments to have the same types as the function output types}}
  func.return %a : i32
}
func.func @bad_silu(%x: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: diagnostics.mlir:[[# @LINE + 3]]:8: error: 'graph.silu' op expected result type tensor<4xf32>, got tensor<5xf32>
  // CHECK: diagnostics.mlir:[[# @LINE + 2]]:8: note: see current operation: %0 = "graph.silu"(%x) : (tensor<4xf32>) -> tensor<5xf32>
  // expected-error@+1 {{'graph.silu' op expected result type tensor<4xf32>, got tensor<5xf32>}}
  %0 = "graph.silu"(%x) : (tensor<4xf32>) -> tensor<5xf32>
  func.return %x : tensor<4xf32>
}
func.func @third(%a: i32) -> i64 {
  // CHECK: diagnostics.mlir:[[# @LINE + 2]]:3: error: 'func.return' op Expected arguments
  // expected-error@below {{'func.return' op Expected arguments}}
  func.return %a : i32
}

// -----

// A correct chunk among bad ones produces no diagnostic (and, as the run
// fails, no output).
// CHECK-NOT: error
// CHECK-NOT: builtin.module
func.func @fine(%a: i32) -> i32 {
  func.return %a : i32
}
