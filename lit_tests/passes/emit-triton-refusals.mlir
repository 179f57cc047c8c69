// RUN: rm -rf %t && mkdir -p %t && touch %t/file
// RUN: teeny-opt %s -p 'emit-triton{out-dir=%t/file/sub}' --split-input-file --verify-diagnostics
// RUN: not teeny-opt %s -p 'emit-triton{out-dir=%t/file/sub}' --split-input-file 2>&1 | filecheck %s
// RUN: test -f %t/file && not test -s %t/file

// emit-triton refuses at pass time, with a located error (exit 1, never an
// internal error), an out-dir that cannot be made, and anything the plan schema
// would refuse later: the draft plan is checked against the schema itself.
// Nothing is written.

// CHECK-NOT: internal error
// CHECK: error: cannot create out-dir '{{.*}}/file/sub': '{{.*}}/file' is not a directory
// CHECK-NOT: internal error
// CHECK: error: emit-triton: weight name 'wwww{{w*}}'... is 2000 characters long, but the launch plan holds at most 1000 (plan schema at weights/0/name)
// CHECK-NOT: internal error
// CHECK: error: emit-triton: grid[0] expression 'cdiv(B * 96, 128) + B - B{{.*}}'... is 1617 characters long
// CHECK-NOT: internal error
// CHECK: error: emit-triton: @forward returns no results, but a launch plan needs at least 1 output
// CHECK-NOT: internal error
// CHECK: error: emit-triton expects @forward to have a single block, found 2
// CHECK-NOT: internal error

// The out-dir's parent is a regular file (checked once the IR is fine).
// expected-error@+1 {{cannot create out-dir}}
func.func @forward(%x: tensor<?x8x3x4xf32>) -> tensor<?x8x3x4xf32> {
  %z = kernel.launch "elementwise" (%x) {OP = "relu", BLOCK = 128}
      args [x = in0, y = in0, out = out0, numel = "B*96", size1 = "1", size2 = "B", size3 = "8", size4 = "3", size5 = "4",
            x_stride0 = "B*96", x_stride1 = "B*96", x_stride2 = "96", x_stride3 = "12", x_stride4 = "4", x_stride5 = "1",
            y_stride0 = "B*96", y_stride1 = "B*96", y_stride2 = "96", y_stride3 = "12", y_stride4 = "4", y_stride5 = "1"]
      grid ["cdiv(B*96, 128)", "1", "1"] warps 4 stages 1 : (tensor<?x8x3x4xf32>) -> tensor<?x8x3x4xf32>
  func.return %z : tensor<?x8x3x4xf32>
}

// -----

// A weight name longer than the plan schema's text limit.
func.func @forward(%x: tensor<?x8x3x4xf32>) -> tensor<?x8x3x4xf32> {
  // expected-error@+1 {{is 2000 characters long, but the launch plan holds at most 1000}}
  kernel.weight "wwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwww" : tensor<8xf32>
  func.return %x : tensor<?x8x3x4xf32>
}

// -----

// Within the parser's limit as written, over the schema's once canonical (spaced).
func.func @forward(%x: tensor<?x8x3x4xf32>) -> tensor<?x8x3x4xf32> {
  // expected-error@+1 {{grid[0] expression 'cdiv(B * 96, 128) + B - B}}
  %z = kernel.launch "elementwise" (%x) {OP = "relu", BLOCK = 128}
      args [x = in0, y = in0, out = out0, numel = "B*96", size1 = "1", size2 = "B", size3 = "8", size4 = "3", size5 = "4",
            x_stride0 = "B*96", x_stride1 = "B*96", x_stride2 = "96", x_stride3 = "12", x_stride4 = "4", x_stride5 = "1",
            y_stride0 = "B*96", y_stride1 = "B*96", y_stride2 = "96", y_stride3 = "12", y_stride4 = "4", y_stride5 = "1"]
      grid ["cdiv(B*96,128)+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B+B-B", "1", "1"] warps 4 stages 1 : (tensor<?x8x3x4xf32>) -> tensor<?x8x3x4xf32>
  func.return %z : tensor<?x8x3x4xf32>
}

// -----

// A plan needs at least one output.
func.func @forward(%x: tensor<?x8x3x4xf32>) {
  // expected-error@+1 {{@forward returns no results, but a launch plan needs at least 1 output}}
  func.return
}

// -----

// A plan is one straight-line sequence of launches.
// expected-error@+1 {{emit-triton expects @forward to have a single block, found 2}}
func.func @forward(%x: tensor<?x8x3x4xf32>) -> tensor<?x8x3x4xf32> {
  func.return %x : tensor<?x8x3x4xf32>
^bb1:
  func.return %x : tensor<?x8x3x4xf32>
}
