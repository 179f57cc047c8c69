// Hardened parsing: every limit and located parse error that xDSL would turn
// into a traceback, a hang or an unlocated message.
// RUN: teeny-opt %s --split-input-file --verify-diagnostics
// expected-error@+1 {{integer bitwidth is limited to 16777215 bits}}
func.func @wide(%a: i16777216) {
  func.return
}

// -----

// expected-error@+1 {{dimension size 2147483648 exceeds the limit of 2147483647}}
func.func @big(%a: tensor<2147483648xf32>) {
  func.return
}

// -----

// expected-error@+1 {{nesting is deeper than the limit of 96 levels}}
func.func @deep(%a: tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<tuple<i32>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>) {
  func.return
}

// -----

func.func @undeclared(%a: i32) -> i32 {
  // expected-error@+1 {{use of undeclared SSA value name '%nope'}}
  %0 = arith.addi %a, %nope : i32
  func.return %0 : i32
}

// -----

func.func @unknown() {
  // expected-error@+1 {{operation 'arith.frobnicate' is not registered}}
  arith.frobnicate
  func.return
}

// -----

func.func @use_before_def() -> i32 {
  // expected-error@+1 {{'arith.addi' op operand #0 does not dominate this use}}
  %0 = arith.addi %1, %1 : i32
  // expected-note@+1 {{operand defined here}}
  %1 = arith.constant 1 : i32
  func.return %0 : i32
}

// -----

func.func @shape_mismatch() {
  // expected-error@+1 {{Shape mismatch in dense literal}}
  %0 = arith.constant dense<[1, 2, 3]> : tensor<2xi32>
  func.return
}

// -----

func.func @dup() {
  func.return
^bb1:
  func.return
// expected-error@+1 {{re-declaration of block 'bb1'}}
^bb1:
  func.return
}

// -----

func.func @unterminated() {
  // expected-error@+1 {{End of file reached before closing string literal}}
  %0 = "graph.param"() <{param_name = "model.0.conv.weight}> : () -> tensor<2xf32>
}

// -----

func.func @huge_splat() {
  // expected-error@+1 {{dense literal of 200000000 elements exceeds the limit of 1048576}}
  %0 = arith.constant dense<1.0> : tensor<200000000xf32>
  func.return
}
