// RUN: teeny-opt %s -p plan-memory | filecheck %s
// RUN: teeny-opt %s -p 'plan-memory{strategy=size-lifetime}' | filecheck %s
// RUN: teeny-opt %s -p 'plan-memory{strategy=naive}' | filecheck %s --check-prefix=NAIVE
// RUN: teeny-opt %s -p 'emit-triton{out-dir=%t}' -o /dev/null && cat %t/plan.json | filecheck %s --check-prefix=PLAN
// RUN: teeny-opt %s -p 'emit-triton{out-dir=%t.naive memory=naive}' -o /dev/null && cat %t.naive/plan.json | filecheck %s --check-prefix=PLAN-NAIVE

// plan-memory runs the memory planner of emit-triton and writes the placement
// into the IR: per launch result its byte offset in the arena, on @forward the
// arena and the strategy. Each buffer holds 96 floats per image, 384 bytes,
// rounded up to 512 (offsets are multiples of 256 for every B). %y is dead once
// %z is computed, so the result %u reuses its bytes: the arena is 2 images of
// 512 bytes per batch item, where one buffer after another takes 3.

// CHECK:      func.func @forward
// CHECK-SAME:   attributes {teeny.arena = "B * 1024", teeny.memory = "{{search|size-lifetime}}"}
// CHECK:      kernel.launch "conv1x1_gemm"
// CHECK-SAME:   attributes {teeny.offsets = ["0"]}
// CHECK:      kernel.launch "elementwise"
// CHECK-SAME:   attributes {teeny.offsets = ["B * 512"]}
// CHECK:      kernel.launch "elementwise"
// CHECK-SAME:   attributes {teeny.offsets = ["0"]}

// NAIVE:      attributes {teeny.arena = "B * 1536", teeny.memory = "naive"}
// NAIVE:      teeny.offsets = ["0"]
// NAIVE:      teeny.offsets = ["B * 512"]
// NAIVE:      teeny.offsets = ["B * 1024"]

// emit-triton writes the same placement into plan.json (plan version 6).
// PLAN:      "arena": "B * 1024",
// PLAN:      "buffers": [
// PLAN:        "name": "t0",
// PLAN-NEXT:   "offset": "0",
// PLAN:        "name": "t1",
// PLAN-NEXT:   "offset": "B * 512",
// PLAN:        "name": "t2",
// PLAN-NEXT:   "offset": "0",
// PLAN:      "memory": "search",
// PLAN:      "version": 8

// PLAN-NAIVE: "arena": "B * 1536",
// PLAN-NAIVE: "offset": "B * 1024",
// PLAN-NAIVE: "memory": "naive",

func.func @forward(%x: tensor<?x4x3x4xf32>) -> tensor<?x8x3x4xf32> {
  kernel.weight "conv.weight\"); import os; #" : tensor<8x4x1x1xf32>
  %y = kernel.launch "conv1x1_gemm" (%x) {BLOCK_M = 16, BLOCK_N = 16, BLOCK_K = 16, GROUP_M = 8, ACTIVATION = "relu"}
      params [w : tensor<8x4xf32> = #derive.param<reshape("conv.weight\"); import os; #") : [8, 4]>,
              scale : tensor<8xf32> = #derive.param<fill(1.0) : [8]>,
              shift : tensor<8xf32> = #derive.param<fill(0.0) : [8]>]
      args [x = in0, w = param.w, scale = param.scale, shift = param.shift, r = in0, y = out0,
            B = "B", C_IN = "4", C_OUT = "8", M = "12", x_batch_stride = "48", r_batch_stride = "48", y_batch_stride = "96", HAS_RESIDUAL = "0"]
      grid ["B * cdiv(12, 16) * cdiv(8, 16)", "1", "1"] warps 4 stages 2
      : (tensor<?x4x3x4xf32>) -> tensor<?x8x3x4xf32>
  %z = kernel.launch "elementwise" (%y) {OP = "relu", BLOCK = 128}
      args [x = in0, y = in0, out = out0, numel = "B*96", size1 = "1", size2 = "B", size3 = "8", size4 = "3", size5 = "4",
            x_stride0 = "B*96", x_stride1 = "B*96", x_stride2 = "96", x_stride3 = "12", x_stride4 = "4", x_stride5 = "1",
            y_stride0 = "B*96", y_stride1 = "B*96", y_stride2 = "96", y_stride3 = "12", y_stride4 = "4", y_stride5 = "1"]
      grid ["cdiv(B*96, 128)", "1", "1"] warps 4 stages 1
      : (tensor<?x8x3x4xf32>) -> tensor<?x8x3x4xf32>
  %u = kernel.launch "elementwise" (%z) {OP = "relu", BLOCK = 128}
      args [x = in0, y = in0, out = out0, numel = "B * 96", size1 = "1", size2 = "B", size3 = "8", size4 = "3", size5 = "4",
            x_stride0 = "B * 96", x_stride1 = "B * 96", x_stride2 = "96", x_stride3 = "12", x_stride4 = "4", x_stride5 = "1",
            y_stride0 = "B * 96", y_stride1 = "B * 96", y_stride2 = "96", y_stride3 = "12", y_stride4 = "4", y_stride5 = "1"]
      grid ["cdiv(B * 96, 128)", "1", "1"] warps 4 stages 1
      : (tensor<?x8x3x4xf32>) -> tensor<?x8x3x4xf32>
  func.return %u : tensor<?x8x3x4xf32>
}
