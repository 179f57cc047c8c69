// RUN: rm -rf %t && teeny-opt %s -p 'emit-triton{out-dir=%t}' --split-input-file --verify-diagnostics
// RUN: not test -e %t
// RUN: not teeny-opt %s -p emit-triton --split-input-file 2>&1 | filecheck %s --check-prefix=NO-DIR
// RUN: not teeny-opt %s -p 'emit-triton{out-dir=%t archs=75}' --split-input-file 2>&1 | filecheck %s --check-prefix=ARCH

// emit-triton reads only kernel IR (weights, launches and views): every other
// op in @forward is reported, nothing is written (%t never appears), and the
// options are checked first.

// NO-DIR: error: emit-triton needs out-dir=DIR (the directory to write)
// ARCH: error: emit-triton: unknown arch 75 (known: 80, 86, 87, 89, 90, 100, 120)

func.func @forward(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error@+1 {{emit-triton expects only kernel.weight, kernel.launch, kernel.param, kernel.slice, kernel.reshape, kernel.concat, kernel.all_reduce and func.return in @forward, found 'graph.silu' (run lower-graph-to-kernel first)}}
  %y = graph.silu %x : tensor<?x4xf32>
  // expected-error@+1 {{found 'graph.relu'}}
  %z = graph.relu %y : tensor<?x4xf32>
  func.return %z : tensor<?x4xf32>
}

// -----

// expected-error@+1 {{emit-triton expects a function @forward in the module}}
func.func @main(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  func.return %x : tensor<?x4xf32>
}

// -----

// expected-error@+1 {{emit-triton expects @forward to have a body}}
func.func private @forward(tensor<?x4xf32>) -> tensor<?x4xf32>

// -----

// The function's inputs must be f32 with at most a dynamic batch.
// expected-error@+1 {{emit-triton expects f32 or i64 tensors whose only dynamic dimension is the batch (0), got tensor<4x?xf32>}}
func.func @forward(%x: tensor<4x?xf32>) -> tensor<4x?xf32> {
  func.return %x : tensor<4x?xf32>
}
