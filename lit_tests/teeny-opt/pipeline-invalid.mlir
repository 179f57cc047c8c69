// Each bad pipeline is one located line on stderr, exit status 1, and no IR.

// RUN: not teeny-opt %s -p cs 2>&1 | filecheck %s --check-prefix=UNKNOWN-PASS
// UNKNOWN-PASS: {{^}}teeny-opt: <pipeline>:1:1: error: unknown pass or pipeline 'cs' (valid: {{[^)]*}}); did you mean 'cse'?{{$}}
// UNKNOWN-PASS-NOT: builtin.module

// RUN: not teeny-opt %s --pass-pipeline='builtin.module(func.func(dcee))' 2>&1 | filecheck %s --check-prefix=UNKNOWN-NESTED
// UNKNOWN-NESTED: {{^}}teeny-opt: <pipeline>:1:26: error: unknown pass or pipeline 'dcee' (valid: {{[^)]*}}); did you mean 'dce'?{{$}}

// No near match: no suggestion.
// RUN: not teeny-opt %s -p xyzzy 2>&1 | filecheck %s --check-prefix=NO-SUGGESTION
// NO-SUGGESTION: {{^}}teeny-opt: <pipeline>:1:1: error: unknown pass or pipeline 'xyzzy' (valid: {{[^)]*}}){{$}}

// RUN: not teeny-opt %s -p 'cse{foo=1}' 2>&1 | filecheck %s --check-prefix=UNKNOWN-OPTION
// UNKNOWN-OPTION: {{^}}teeny-opt: <pipeline>:1:1: error: pass 'cse' has no option 'foo' (valid options: none){{$}}
// UNKNOWN-OPTION-NOT: builtin.module

// RUN: not teeny-opt %s -p 'cleanup{x=1}' 2>&1 | filecheck %s --check-prefix=NAMED-OPTION
// NAMED-OPTION: {{^}}teeny-opt: <pipeline>:1:1: error: named pipeline 'cleanup' takes no options{{$}}

// A named pipeline's options are typed and declared, as MLIR's registered pipelines' are.
// RUN: not teeny-opt %s -p 'cse,teeny-inference{prof=gpu}' 2>&1 | filecheck %s --check-prefix=PIPELINE-OPTION
// PIPELINE-OPTION: {{^}}teeny-opt: <pipeline>:1:5: error: named pipeline 'teeny-inference' has no option 'prof' (valid options: profile); did you mean 'profile'?{{$}}
// RUN: not teeny-opt %s -p 'teeny-inference{profile=cpu}' 2>&1 | filecheck %s --check-prefix=PIPELINE-VALUE
// PIPELINE-VALUE: {{^}}teeny-opt: <pipeline>:1:1: error: bad value 'cpu' for option 'profile' of named pipeline 'teeny-inference': expected one of gpu, interpreter{{.*}}

// A named pipeline anchors itself on the module: it cannot be nested.
// RUN: not teeny-opt %s -p 'func.func(cleanup)' 2>&1 | filecheck %s --check-prefix=NAMED-NESTED
// NAMED-NESTED: {{^}}teeny-opt: <pipeline>:1:{{[0-9]+}}: error: named pipeline 'cleanup' must be used at the top level{{$}}

// An anchor nested where it cannot run.
// RUN: not teeny-opt %s -p 'func.func(func.func(cse))' 2>&1 | filecheck %s --check-prefix=BAD-NESTING
// BAD-NESTING: {{^}}teeny-opt: <pipeline>:1:{{[0-9]+}}: error: 'func.func' cannot be nested in 'func.func'{{$}}
// RUN: not teeny-opt %s --pass-pipeline='builtin.module(builtin.module(cse))' 2>&1 | filecheck %s --check-prefix=MODULE-IN-MODULE
// MODULE-IN-MODULE: {{^}}teeny-opt: <pipeline>:1:{{[0-9]+}}: error: unknown op anchor 'builtin.module' (valid nested anchors: func.func){{$}}

// RUN: not teeny-opt %s --pass-pipeline='builtin.module(func.fun(cse))' 2>&1 | filecheck %s --check-prefix=UNKNOWN-ANCHOR
// UNKNOWN-ANCHOR: {{^}}teeny-opt: <pipeline>:1:16: error: unknown op anchor 'func.fun' (valid nested anchors: func.func); did you mean 'func.func'?{{$}}

// Syntax errors point at the offending character.
// RUN: not teeny-opt %s --pass-pipeline='builtin.module(cse' 2>&1 | filecheck %s --check-prefix=UNCLOSED
// UNCLOSED: {{^}}teeny-opt: <pipeline>:1:19: error: expected ')' to close '(' at 1:15{{$}}
// RUN: not teeny-opt %s --pass-pipeline='builtin.module(cse))' 2>&1 | filecheck %s --check-prefix=UNBALANCED
// UNBALANCED: {{^}}teeny-opt: <pipeline>:1:20: error: unbalanced ')'{{$}}
// RUN: not teeny-opt %s -p 'cse,,dce' 2>&1 | filecheck %s --check-prefix=EMPTY-ELEMENT
// EMPTY-ELEMENT: {{^}}teeny-opt: <pipeline>:1:5: error: empty pipeline element{{$}}
// RUN: not teeny-opt %s -p 'cse dce' 2>&1 | filecheck %s --check-prefix=MISSING-COMMA
// MISSING-COMMA: {{^}}teeny-opt: <pipeline>:1:5: error: expected ',' or end of pipeline{{$}}
// RUN: not teeny-opt %s -p 'cse{foo="x' 2>&1 | filecheck %s --check-prefix=UNTERMINATED
// UNTERMINATED: {{^}}teeny-opt: <pipeline>:1:9: error: unterminated string{{$}}

// Usage errors.
// RUN: not teeny-opt %s -p cse --pass-pipeline='builtin.module(cse)' 2>&1 | filecheck %s --check-prefix=BOTH
// BOTH: {{^}}teeny-opt: error: give --pass-pipeline or -p, not both{{$}}
// RUN: not teeny-opt %s --bogus 2>&1 | filecheck %s --check-prefix=BAD-FLAG
// BAD-FLAG: {{^}}teeny-opt: error: unrecognized arguments: --bogus{{$}}
