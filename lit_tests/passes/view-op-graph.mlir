// RUN: teeny-opt %s -p view-op-graph -o /dev/null 2>&1 | filecheck %s
// RUN: teeny-opt %s -p 'view-op-graph{print-attrs=false print-result-types=false}' -o /dev/null 2>&1 | filecheck %s --check-prefix=BARE
// RUN: teeny-opt %s -p 'view-op-graph{print-data-flow-edges=false print-control-flow-edges=true max-label-len=4}' -o /dev/null 2>&1 | filecheck %s --check-prefix=CFG
// RUN: teeny-opt %s -p 'view-op-graph,fuse-pointwise,view-op-graph' -o /dev/null 2>&1 | filecheck %s --check-prefix=FUSED
// RUN: teeny-opt %s -p fuse-pointwise --view-op-graph-before=fuse-pointwise --view-op-graph-after=fuse-pointwise -o /dev/null 2>&1 | filecheck %s --check-prefix=FLAGS
// RUN: teeny-opt %s -p 'view-op-graph{out=%t.dot}' | filecheck %s --check-prefix=IR
// RUN: cat %t.dot | filecheck %s
// RUN: teeny-opt %s -p fuse-pointwise --view-op-graph='out=%t.flag.dot print-attrs=false' --view-op-graph-after=fuse-pointwise --dump-pass-pipeline -o /dev/null 2>&1 | filecheck %s --check-prefix=PIPELINE
// RUN: cat %t.flag.after-fuse-pointwise.dot %t.flag.dot | filecheck %s --check-prefix=FILES

// The module as mlir-opt's view-op-graph draws it: a compound digraph, one
// cluster per function, its arguments as ellipses, one Mrecord node per op with
// a port per operand (in<i>) and result (out<i>), data-flow edges between the
// ports once every node is out. Attributes are sorted and cut at 20 characters.

// CHECK-LABEL: digraph G {
// CHECK-NEXT:    compound = true;
// CHECK-NEXT:    label = "view-op-graph{{( \(input\))?}}";
// CHECK-NEXT:    labelloc = t;
// CHECK-NEXT:    subgraph cluster_1 {
// CHECK-NEXT:      label = "func.func @decode\lfunction_type: (tensor<?x2x84xf32>,...\lsym_name: \"decode\"\l";
// CHECK-NEXT:      v2 [label = "%a : tensor<?x2x84xf32>", shape = ellipse];
// CHECK-NEXT:      v3 [label = "%b : tensor<1x2x84xf32>", shape = ellipse];
// CHECK-NEXT:      v4 [label = "%s : tensor<1x84xf32>", shape = ellipse];
// CHECK-NEXT:      v5 [fillcolor = "0.000000 0.35 1.0", label = "{{[{][{]}}<in0> %a|<in1> %b}|graph.sub\l|{<out0> %d tensor\<?x2x84xf32\>}}", shape = Mrecord, style = filled];
// CHECK-NEXT:      v6 [fillcolor = "0.200000 0.35 1.0", label = "{{[{][{]}}<in0> %d|<in1> %s}|graph.mul\l|{<out0> %m tensor\<?x2x84xf32\>}}", shape = Mrecord, style = filled];
// CHECK-NEXT:      v7 [fillcolor = "0.400000 0.35 1.0", label = "{{[{][{]}}<in0> %m}|graph.silu\l|{<out0> %y tensor\<?x2x84xf32\>}}", shape = Mrecord, style = filled];
// CHECK-NEXT:      v8 [fillcolor = "0.600000 0.35 1.0", label = "{{[{][{]}}<in0> %y}|func.return\l}", shape = Mrecord, style = filled];
// CHECK-NEXT:    }
// CHECK-NEXT:    subgraph cluster_9 {
// CHECK-NEXT:      label = "func.func @weights\lfunction_type: () -> tensor<4xf32>\lsym_name: \"weights\"\l";
// CHECK-NEXT:      v10 [fillcolor = "0.800000 0.35 1.0", label = "{graph.param\l\lparam_name: \"a.very.long.paramet...\l|{<out0> %w tensor\<4xf32\>}}", shape = Mrecord, style = filled];
// CHECK-NEXT:      v11 [fillcolor = "0.600000 0.35 1.0", label = "{{[{][{]}}<in0> %w}|func.return\l}", shape = Mrecord, style = filled];
// CHECK-NEXT:    }
// CHECK-NEXT:    v2 -> v5:in0:n [style = solid];
// CHECK-NEXT:    v3 -> v5:in1:n [style = solid];
// CHECK-NEXT:    v5:out0:s -> v6:in0:n [style = solid];
// CHECK-NEXT:    v4 -> v6:in1:n [style = solid];
// CHECK-NEXT:    v6:out0:s -> v7:in0:n [style = solid];
// CHECK-NEXT:    v7:out0:s -> v8:in0:n [style = solid];
// CHECK-NEXT:    v10:out0:s -> v11:in0:n [style = solid];
// CHECK-NEXT:  }

// BARE:      label = "func.func @decode\l";
// BARE-NEXT: v2 [label = "%a", shape = ellipse];
// BARE:      label = "{{[{][{]}}<in0> %a|<in1> %b}|graph.sub\l|{<out0> %d}}"
// BARE:      label = "{graph.param\l|{<out0> %w}}"
// BARE-NOT:  param_name

// Control-flow edges join consecutive ops (dashed); no data-flow edge is drawn.
// CFG:      label = "{graph.param\l\lparam_name: \"a.v...\l|{<out0> %w tens...}}"
// CFG:      v5 -> v6 [style = dashed];
// CFG-NEXT: v6 -> v7 [style = dashed];
// CFG-NEXT: v7 -> v8 [style = dashed];
// CFG-NEXT: v10 -> v11 [style = dashed];
// CFG-NEXT: }
// CFG-NOT:  solid

// Before and after fuse-pointwise: one digraph each, titled with the pass the
// graph follows; the fused op shows its program and every op it absorbed.
// FUSED:      label = "view-op-graph (input)";
// FUSED:      graph.silu
// FUSED:      label = "view-op-graph (after fuse-pointwise)";
// FUSED:      v5 [fillcolor = "0.000000 0.35 1.0", label = "{{[{][{]}}<in0> %a|<in1> %b|<in2> %s}|graph.fused_pointwise\lprogram:\l  $0 = sub %0 %1\l  $1 = mul $0 %2\l  $2 = silu $1\labsorbed 3:\l  graph.sub at {{.*}}view-op-graph.mlir:90:8\l  graph.mul at {{.*}}view-op-graph.mlir:91:8\l  graph.silu at {{.*}}view-op-graph.mlir:92:8\l|{<out0> %y tensor\<?x2x84xf32\>}}", shape = Mrecord, style = filled];
// FUSED:      v2 -> v5:in0:n [style = solid];
// FUSED-NEXT: v3 -> v5:in1:n [style = solid];
// FUSED-NEXT: v4 -> v5:in2:n [style = solid];

// FLAGS:     label = "before fuse-pointwise";
// FLAGS:     graph.sub
// FLAGS:     label = "after fuse-pointwise";
// FLAGS-NOT: graph.sub\l
// FLAGS:     graph.fused_pointwise

// view-op-graph leaves the IR as it was.
// IR-LABEL: func.func @decode
// IR-NEXT:    %d = graph.sub %a, %b
// IR-NEXT:    %m = graph.mul %d, %s
// IR-NEXT:    %y = graph.silu %m

// --view-op-graph appends the pass; the graph after the named pass goes to the
// same FILE with the point before the extension.
// PIPELINE: builtin.module(fuse-pointwise,view-op-graph{print-attrs=false out={{.*}}.flag.dot})
// FILES:      label = "after fuse-pointwise";
// FILES:      graph.fused_pointwise
// FILES:      label = "view-op-graph (after fuse-pointwise)";
// FILES:      graph.fused_pointwise

func.func @decode(%a: tensor<?x2x84xf32>, %b: tensor<1x2x84xf32>, %s: tensor<1x84xf32>) -> tensor<?x2x84xf32> {
  %d = graph.sub %a, %b : (tensor<?x2x84xf32>, tensor<1x2x84xf32>) -> tensor<?x2x84xf32>
  %m = graph.mul %d, %s : (tensor<?x2x84xf32>, tensor<1x84xf32>) -> tensor<?x2x84xf32>
  %y = graph.silu %m : tensor<?x2x84xf32>
  func.return %y : tensor<?x2x84xf32>
}

func.func @weights() -> tensor<4xf32> {
  %w = graph.param "a.very.long.parameter.name" : tensor<4xf32>
  func.return %w : tensor<4xf32>
}
