// --dump-pass-pipeline prints the canonical pipeline on stderr, before the IR.

// RUN: teeny-opt %s --dump-pass-pipeline -p cse -o /dev/null 2>&1 | filecheck %s --check-prefix=CSE
// A named pipeline expands, its options routed to the passes they configure (printed before
// the pipeline runs; this file's arith ops do not lower, hence 'not').
// RUN: not teeny-opt %s --dump-pass-pipeline -p 'teeny-inference{profile=interpreter}' -o /dev/null 2>&1 | filecheck %s --check-prefix=PROFILE
// PROFILE: {{^}}builtin.module(split-bias,fuse-attention,fuse-epilogues,fuse-pointwise,select-conv-algorithm{profile=interpreter},lower-graph-to-kernel{profile=interpreter}){{$}}
// RUN: teeny-opt %s --dump-pass-pipeline --pass-pipeline='builtin.module(cse)' -o /dev/null 2>&1 | filecheck %s --check-prefix=CSE
// RUN: teeny-opt %s --dump-pass-pipeline --pass-pipeline=' builtin.module( cse ) ' -o /dev/null 2>&1 | filecheck %s --check-prefix=CSE
// RUN: teeny-opt %s --dump-pass-pipeline -p 'cse{}' -o /dev/null 2>&1 | filecheck %s --check-prefix=CSE
// CSE: {{^}}builtin.module(cse){{$}}

// Nested anchors: the short form nests in builtin.module like the full form.
// RUN: teeny-opt %s --dump-pass-pipeline -p 'func.func(cse,canonicalize),dce' -o /dev/null 2>&1 | filecheck %s --check-prefix=NESTED
// RUN: teeny-opt %s --dump-pass-pipeline --pass-pipeline='builtin.module(func.func(cse, canonicalize), dce)' -o /dev/null 2>&1 | filecheck %s --check-prefix=NESTED
// NESTED: {{^}}builtin.module(func.func(cse,canonicalize),dce){{$}}

// Consecutive nests stay separate; an empty nest is kept.
// RUN: teeny-opt %s --dump-pass-pipeline -p 'func.func(cse),func.func(dce),func.func()' -o /dev/null 2>&1 | filecheck %s --check-prefix=SEPARATE
// SEPARATE: {{^}}builtin.module(func.func(cse),func.func(dce),func.func()){{$}}

// No pipeline: an empty one.
// RUN: teeny-opt %s --dump-pass-pipeline -o /dev/null 2>&1 | filecheck %s --check-prefix=EMPTY
// RUN: teeny-opt %s --dump-pass-pipeline --pass-pipeline='builtin.module()' -o /dev/null 2>&1 | filecheck %s --check-prefix=EMPTY
// EMPTY: {{^}}builtin.module(){{$}}

// The named pipeline `cleanup` expands in place, alone or among passes.
// RUN: teeny-opt %s --dump-pass-pipeline -p cleanup -o /dev/null 2>&1 | filecheck %s --check-prefix=CLEANUP
// RUN: teeny-opt %s --dump-pass-pipeline --pass-pipeline='builtin.module(cleanup)' -o /dev/null 2>&1 | filecheck %s --check-prefix=CLEANUP
// CLEANUP: {{^}}builtin.module(func.func(canonicalize,cse),dce){{$}}
// RUN: teeny-opt %s --dump-pass-pipeline -p 'cse,cleanup,dce' -o /dev/null 2>&1 | filecheck %s --check-prefix=CLEANUP-AMONG
// CLEANUP-AMONG: {{^}}builtin.module(cse,func.func(canonicalize,cse),dce,dce){{$}}

// The dump comes first, then the IR on stdout.
// RUN: teeny-opt %s --dump-pass-pipeline -p cse 2>&1 | filecheck %s --check-prefix=ORDER
// ORDER:      {{^}}builtin.module(cse){{$}}
// ORDER-NEXT: {{^}}builtin.module {

// `cleanup`, its expansion and the short form all transform the IR the same way.
// RUN: teeny-opt %s -p cleanup | filecheck %s --check-prefix=IR
// RUN: teeny-opt %s --pass-pipeline='builtin.module(func.func(canonicalize,cse),dce)' | filecheck %s --check-prefix=IR
// RUN: teeny-opt %s -p 'func.func(canonicalize,cse),dce' | filecheck %s --check-prefix=IR

// IR-LABEL: func.func @cleaned
// IR-SAME:    (%[[A:.*]]: i32, %[[X:.*]]: tensor<?x4xf32>)
// IR-NEXT:    %[[P:.*]] = arith.muli %[[A]], %[[A]] : i32
// IR-NEXT:    %[[S:.*]] = graph.silu %[[X]] : tensor<?x4xf32>
// IR-NEXT:    func.return %[[P]], %[[S]], %[[S]] : i32, tensor<?x4xf32>, tensor<?x4xf32>
func.func @cleaned(%a: i32, %x: tensor<?x4xf32>) -> (i32, tensor<?x4xf32>, tensor<?x4xf32>) {
  %c0 = arith.constant 0 : i32
  %0 = arith.addi %a, %c0 : i32
  %1 = arith.muli %0, %a : i32
  %2 = graph.silu %x : tensor<?x4xf32>
  %3 = graph.silu %x : tensor<?x4xf32>
  %4 = arith.subi %1, %a : i32
  func.return %1, %2, %3 : i32, tensor<?x4xf32>, tensor<?x4xf32>
}
