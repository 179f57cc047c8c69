// RUN: teeny-opt %s --split-input-file --verify-diagnostics

// Every parse and verify message of #derive.param<...>.

func.func @unknown_kind() attributes {
  // expected-error@+1 {{unknown derivation kind 'bogus' (valid: identity, reshape, fill, literal, bn_scale, bn_shift)}}
  d = #derive.param<bogus("w") : [4]>
} {
  func.return
}

// -----

func.func @sources_not_parenthesised() attributes {
  // expected-error@+1 {{'(' expected (source weight names)}}
  d = #derive.param<identity "w" : [4]>
} {
  func.return
}

// -----

func.func @sources_unclosed() attributes {
  // expected-error@+1 {{')' expected (source weight names)}}
  d = #derive.param<identity("w" : [4]>
} {
  func.return
}

// -----

func.func @source_not_string() attributes {
  // expected-error@+1 {{string literal expected}}
  d = #derive.param<identity(w) : [4]>
} {
  func.return
}

// -----

func.func @fill_not_float() attributes {
  // expected-error@+1 {{Expected float literal}}
  d = #derive.param<fill(1) : [4]>
} {
  func.return
}

// -----

func.func @fill_source_name() attributes {
  // expected-error@+1 {{Expected float literal}}
  d = #derive.param<fill("w") : [4]>
} {
  func.return
}

// -----

func.func @fill_infinite() attributes {
  // expected-error@+1 {{fill value must be finite, got inf}}
  d = #derive.param<fill(1.0e400) : [4]>
} {
  func.return
}

// -----

func.func @eps_not_float() attributes {
  // expected-error@+1 {{Expected float literal}}
  d = #derive.param<bn_scale("g", "v") eps 1 : [4]>
} {
  func.return
}

// -----

func.func @missing_colon() attributes {
  // expected-error@+1 {{Expected ':'}}
  d = #derive.param<identity("w") [4]>
} {
  func.return
}

// -----

func.func @shape_not_list() attributes {
  // expected-error@+1 {{'[' expected (the parameter's shape)}}
  d = #derive.param<identity("w") : 4>
} {
  func.return
}

// -----

func.func @shape_unclosed() attributes {
  // expected-error@+1 {{']' expected (the parameter's shape)}}
  d = #derive.param<identity("w") : [4>
} {
  func.return
}

// -----

func.func @shape_not_integer() attributes {
  // expected-error@+1 {{Expected integer literal}}
  d = #derive.param<identity("w") : [4, 2.0]>
} {
  func.return
}

// -----

func.func @shape_zero() attributes {
  // expected-error@+1 {{derivation shape [4, 0] has a size below 1}}
  d = #derive.param<reshape("w") : [4, 0]>
} {
  func.return
}

// -----

func.func @shape_negative() attributes {
  // expected-error@+1 {{derivation shape [-1] has a size below 1}}
  d = #derive.param<identity("w") : [-1]>
} {
  func.return
}

// -----

func.func @trailing_text() attributes {
  // expected-error@+1 {{'>' expected}}
  d = #derive.param<identity("w") : [4] extra>
} {
  func.return
}

// -----

func.func @identity_two_sources() attributes {
  // expected-error@+1 {{derivation 'identity' takes 1 source weights, got 2}}
  d = #derive.param<identity("w", "v") : [4]>
} {
  func.return
}

// -----

func.func @reshape_no_source() attributes {
  // expected-error@+1 {{derivation 'reshape' takes 1 source weights, got 0}}
  d = #derive.param<reshape() : [4]>
} {
  func.return
}

// -----

func.func @bn_scale_one_source() attributes {
  // expected-error@+1 {{derivation 'bn_scale' takes 2 source weights, got 1}}
  d = #derive.param<bn_scale("g") eps 0.001 : [4]>
} {
  func.return
}

// -----

func.func @bn_shift_three_sources() attributes {
  // expected-error@+1 {{derivation 'bn_shift' takes 4 or 5 source weights, got 3}}
  d = #derive.param<bn_shift("g", "b", "m") eps 0.001 : [4]>
} {
  func.return
}

// -----

func.func @bn_shift_six_sources() attributes {
  // expected-error@+1 {{derivation 'bn_shift' takes 4 or 5 source weights, got 6}}
  d = #derive.param<bn_shift("g", "b", "m", "v", "c", "d") eps 0.001 : [4]>
} {
  func.return
}

// -----

func.func @empty_source_name() attributes {
  // expected-error@+1 {{derivation source weight names must be non-empty}}
  d = #derive.param<identity("") : [4]>
} {
  func.return
}

// -----

func.func @bn_missing_eps() attributes {
  // expected-error@+1 {{batch-norm derivations need eps > 0, got 0.0}}
  d = #derive.param<bn_scale("g", "v") : [4]>
} {
  func.return
}

// -----

func.func @bn_negative_eps() attributes {
  // expected-error@+1 {{batch-norm derivations need eps > 0, got -0.001}}
  d = #derive.param<bn_shift("g", "b", "m", "v") eps -1.0e-3 : [4]>
} {
  func.return
}

// -----

// expected-error@+1 {{derivation 'identity' takes no eps}}
func.func @eps_on_identity() attributes {d = #derive.param<identity("w") eps 0.5 : [16]>} {
  func.return
}

// -----

// expected-error@+1 {{literal of shape [3] needs 3 values, got 2}}
func.func @literal_count() attributes {d = #derive.param<literal(1.0, 2.0) : [3]>} {
  func.return
}
