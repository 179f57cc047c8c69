// RUN: teeny-opt %s -p 'view-op-graph{max-label-len=-1}' --verify-diagnostics
// RUN: not teeny-opt %s -p 'view-op-graph{max-label-len=x}' 2>&1 | filecheck %s --check-prefix=VALUE
// RUN: not teeny-opt %s --view-op-graph='print-atrs=false' 2>&1 | filecheck %s --check-prefix=FLAG
// RUN: not teeny-opt %s --view-op-graph='x},dce{' 2>&1 | filecheck %s --check-prefix=INJECTED
// RUN: not teeny-opt %s -p 'func.func(view-op-graph)' 2>&1 | filecheck %s --check-prefix=NESTED
// RUN: not teeny-opt %s -p 'view-op-graph{out=%t.dot},view-op-graph{out=%t.dot}' 2>&1 | filecheck %s --check-prefix=TWICE
// RUN: not teeny-opt %s -p 'view-op-graph{out=%s}' 2>&1 | filecheck %s --check-prefix=INPUT
// RUN: not teeny-opt %s --view-op-graph='out=%t.ir' -o %t.ir 2>&1 | filecheck %s --check-prefix=OUTPUT
// RUN: not teeny-opt %s --view-op-graph='out=%t.missing/g.dot' 2>&1 | filecheck %s --check-prefix=FOLDER
// RUN: not teeny-opt %s --view-op-graph='out=%t.dot' --split-input-file 2>&1 | filecheck %s --check-prefix=SPLIT
// RUN: not teeny-opt %s --view-op-graph-after=fuse-pointwize 2>&1 | filecheck %s --check-prefix=AFTER

// view-op-graph refuses options it cannot use and outputs that would lose
// data, before anything runs where it can (teeny-opt checks the pipeline's
// graphs when it builds it); a negative max-label-len is refused when the pass
// runs, at the first op of the module.

// VALUE: error: bad value 'x' for option 'max-label-len' of pass 'view-op-graph': expected an integer
// FLAG: teeny-opt: error: --view-op-graph: pass 'view-op-graph' has no option 'print-atrs' (valid options: max-label-len, out, print-attrs, print-control-flow-edges, print-data-flow-edges, print-result-types); did you mean 'print-attrs'?
// INJECTED: teeny-opt: error: --view-op-graph: pass 'view-op-graph' has no option 'x'
// NESTED: error: pass 'view-op-graph' cannot run on 'func.func' (it may be anchored on: builtin.module)
// TWICE: teeny-opt: error: view-op-graph: two graphs of the pipeline write '{{.*}}.dot'; give each view-op-graph its own out=FILE
// INPUT: teeny-opt: error: view-op-graph: refusing to overwrite the input file '{{.*}}view-op-graph-invalid.mlir' with out={{.*}}view-op-graph-invalid.mlir
// OUTPUT: teeny-opt: error: view-op-graph: out={{.*}}.ir is the -o file '{{.*}}.ir' the IR is written to
// FOLDER: teeny-opt: error: view-op-graph: cannot write '{{.*}}.missing/g.dot': the folder '{{.*}}.missing' does not exist
// SPLIT: teeny-opt: error: view-op-graph: out={{.*}}.dot with --split-input-file would be replaced by each chunk's graph; draw to stderr (no out=) or split the file
// AFTER: teeny-opt: error: --view-op-graph-after: unknown pass 'fuse-pointwize' {{.*}}; did you mean 'fuse-pointwise'?

// expected-error@+1 {{view-op-graph: max-label-len must be at least 0, got -1}}
func.func @f(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %y = graph.silu %x : tensor<?x4xf32>
  func.return %y : tensor<?x4xf32>
}
