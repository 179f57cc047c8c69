// RUN: teeny-opt %s --split-input-file --verify-diagnostics

// A hex float literal is the element's bits: more significant bits than the
// type has, or a leading minus, is an error at the literal (as in mlir-opt).

func.func @f32_nine_digits() {
  // expected-error@+1 {{hexadecimal float constant out of range for type f32: it has 32 bits (8 hex digits)}}
  %c = graph.constant dense<0x17FC00000> : tensor<2xf32>
  func.return
}

// -----

func.func @f32_sixteen_digits_in_a_list() {
  // expected-error@+1 {{hexadecimal float constant out of range for type f32: it has 32 bits (8 hex digits)}}
  %c = graph.constant dense<[1.0, 0x7FF8000000000000]> : tensor<2xf32>
  func.return
}

// -----

func.func @f32_generic_form() {
  // expected-error@+1 {{hexadecimal float constant out of range for type f32: it has 32 bits (8 hex digits)}}
  %c = "graph.constant"() <{value = dense<0x100000000> : tensor<2xf32>}> : () -> tensor<2xf32>
  func.return
}

// -----

func.func @f32_leading_minus() {
  // expected-error@+1 {{hexadecimal float literal should not have a leading minus}}
  %c = graph.constant dense<-0x3F800000> : tensor<2xf32>
  func.return
}

// -----

func.func @f32_attribute_leading_minus() {
  // expected-error@+1 {{hexadecimal float literal should not have a leading minus}}
  %c = graph.constant {a = -0x3F800000 : f32} dense<1.0> : tensor<2xf32>
  func.return
}

// -----

func.func @f32_attribute_too_wide() {
  // expected-error@+1 {{Hexadecimal float constant out of range for type}}
  %c = graph.constant {a = 0x13F800000 : f32} dense<1.0> : tensor<2xf32>
  func.return
}

// -----

func.func @nan_is_no_literal() {
  // expected-error@+1 {{Expected either a float, integer, or complex literal}}
  %c = graph.constant dense<nan> : tensor<2xf32>
  func.return
}

// -----

func.func @f64_option_seventeen_digits(%x: tensor<?x4x2x2xf32>, %p: tensor<4xf32>) {
  // expected-error@+1 {{hexadecimal float constant out of range for type f64: it has 64 bits (16 hex digits)}}
  %y = graph.batch_norm %x, %p, %p, %p, %p eps 0x14132D68700000000 : (tensor<?x4x2x2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x4x2x2xf32>
  func.return
}

// -----

func.func @f64_option_leading_minus(%x: tensor<?x4x2x2xf32>) {
  // expected-error@+1 {{hexadecimal float literal should not have a leading minus}}
  %y = graph.leaky_relu %x negative_slope -0x3FC999999999999A : tensor<?x4x2x2xf32>
  func.return
}

// -----

func.func @f64_option_nan_verifies(%x: tensor<?x4x2x2xf32>) {
  // expected-error@+1 {{negative_slope}}
  %y = graph.leaky_relu %x negative_slope 0x7FF8000000000000 : tensor<?x4x2x2xf32>
  func.return
}

// -----

func.func @derivation_too_wide() attributes {
  // expected-error@+1 {{hexadecimal float constant out of range for type f64: it has 64 bits (16 hex digits)}}
  d = #derive.param<fill(0x13FF0000000000000) : [4]>
} {
  func.return
}
