// RUN: teeny-opt %s -p plan-memory --split-input-file --verify-diagnostics
// RUN: not teeny-opt %s -p 'plan-memory{strategy=bogus}' --split-input-file 2>&1 | filecheck %s --check-prefix=STRATEGY
// RUN: not teeny-opt %s -p 'emit-triton{out-dir=%t memory=bogus}' --split-input-file 2>&1 | filecheck %s --check-prefix=EMIT

// plan-memory reads the kernel IR emit-triton reads, and refuses the rest the
// same way; the strategy and emit-triton's memory option are checked first.

// STRATEGY: error: plan-memory: unknown strategy=bogus (known: best, size, size-lifetime, search, naive)
// EMIT: error: emit-triton: unknown memory=bogus (known: planned, naive)

func.func @forward(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error@+1 {{emit-triton expects only kernel.weight, kernel.launch, kernel.param, kernel.slice, kernel.reshape, kernel.concat, kernel.all_reduce and func.return in @forward, found 'graph.silu' (run lower-graph-to-kernel first)}}
  %y = graph.silu %x : tensor<?x4xf32>
  func.return %y : tensor<?x4xf32>
}

// -----

// expected-error@+1 {{plan-memory expects a function @forward in the module}}
func.func @main(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  func.return %x : tensor<?x4xf32>
}
