// fuse-conv-bn-act is the old name of fuse-epilogues, kept as an alias
// (teeny_ir.driver.pass_registry.ALIASES): pipelines that name it still run the
// pass, with its options, and the pass reports under its own name.

// RUN: teeny-opt %s -p 'fuse-conv-bn-act{mode=inference}' | filecheck %s
// RUN: teeny-opt %s --dump-pass-pipeline -p 'func.func(fuse-conv-bn-act{mode=training})' -o /dev/null 2>&1 | filecheck %s --check-prefix=DUMP
// RUN: teeny-opt %s -p 'fuse-conv-bn-act' --mlir-pass-statistics -o /dev/null 2>&1 | filecheck %s --check-prefix=STATS

// CHECK-LABEL: func.func @conv_silu
// CHECK:         %[[Y:.*]] = graph.fused_conv2d %{{.*}}, %{{.*}} scale #derive.param<fill(1.0) : [16]> shift #derive.param<fill(0.0) : [16]> activation silu
// CHECK-NEXT:    func.return %[[Y]]
// DUMP: {{^}}builtin.module(func.func(fuse-epilogues{mode=training})){{$}}
// STATS: {{^}}fuse-epilogues{{$}}
// STATS-NEXT: (S) 1 fusions
func.func @conv_silu(%x: tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32> {
  %w = graph.param "m.conv.weight" : tensor<16x8x1x1xf32>
  %c = graph.conv2d %x, %w : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<?x16x4x4xf32>
  %y = graph.silu %c : tensor<?x16x4x4xf32>
  func.return %y : tensor<?x16x4x4xf32>
}
