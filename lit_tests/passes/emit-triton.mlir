// RUN: teeny-opt %s -p 'emit-triton{out-dir=%t}' | filecheck %s --check-prefix=IR
// RUN: cat %t/plan.json | filecheck %s --check-prefix=PLAN
// RUN: ls %t %t/kernels | filecheck %s --check-prefix=FILES
// RUN: teeny-opt %s -p 'emit-triton{out-dir=%t.aot archs=80}' -o /dev/null
// RUN: cat %t.aot/plan.json | filecheck %s --check-prefix=AOT

// emit-triton writes the kernels and the plan and leaves the IR as it was.
// IR-LABEL: func.func @forward
// IR-NEXT:    kernel.weight "conv.weight\22); import os; #" : tensor<8x4x1x1xf32>
// IR:         kernel.launch "conv1x1_gemm"
// IR:         kernel.launch "elementwise"
// IR:         kernel.launch "elementwise"
// IR-NEXT:    func.return

// Generated names only: inputs in<N>, params p<N>, buffers t<N>, kernels
// <family>_<ordinal> (variants deduplicated by family and constexprs);
// weight names are JSON strings. Keys are sorted; expressions canonical.
// Without a residual the GEMM's r is the input again and its last dim,
// HAS_RESIDUAL, is 0 (a dim, not a constexpr); batch strides are one image;
// each launch names the op it came from; there are no views.
// PLAN:      "buffers": [
// PLAN:        "name": "t0",
// PLAN:        "name": "t1",
// PLAN:        "name": "t2",
// PLAN:      "format": "teeny-ir-plan",
// PLAN-NEXT: "function": "forward",
// PLAN-NEXT: "inputs": [
// PLAN:        "name": "in0",
// PLAN-NEXT:   "shape": [
// PLAN-NEXT:     "B",
// PLAN-NEXT:     4,
// PLAN:      "kernels": [
// PLAN:          "ACTIVATION": "relu",
// PLAN:          "GROUP_M": 8
// PLAN-NOT:      "HAS_RESIDUAL"
// PLAN:        "family": "conv1x1_gemm",
// PLAN-NEXT:   "file": "kernels/conv1x1_gemm_0.py",
// PLAN-NEXT:   "name": "conv1x1_gemm_0",
// PLAN-NEXT:   "source_sha256": "{{[0-9a-f]+}}"
// PLAN:        "family": "elementwise",
// PLAN-NEXT:   "file": "kernels/elementwise_0.py",
// PLAN-NEXT:   "name": "elementwise_0",
// PLAN-NOT:    "name": "elementwise_1"
// PLAN:      "launches": [
// PLAN:            "tensor": "in0"
// PLAN:            "tensor": "p0"
// PLAN:            "tensor": "p1"
// PLAN:            "tensor": "p2"
// PLAN:            "tensor": "in0"
// PLAN:            "tensor": "t0"
// PLAN:            "expr": "12"
// PLAN:            "expr": "48"
// PLAN:            "expr": "48"
// PLAN:            "expr": "96"
// PLAN-NEXT:     },
// PLAN-NEXT:     {
// PLAN-NEXT:       "expr": "0"
// PLAN:        "grid": [
// PLAN-NEXT:     "B * cdiv(12, 16) * cdiv(8, 16)",
// PLAN-NEXT:     "1",
// PLAN-NEXT:     "1"
// PLAN:        "kernel": "conv1x1_gemm_0",
// PLAN-NEXT:   "num_stages": 2,
// PLAN-NEXT:   "num_warps": 4,
// PLAN-NEXT:   "sources": [
// PLAN-NEXT:     {
// PLAN-NEXT:       "loc": "{{.*}}emit-triton.mlir:{{[0-9]+}}:8",
// PLAN-NEXT:       "op": "kernel.launch"
// PLAN:            "expr": "B * 96"
// PLAN:        "grid": [
// PLAN-NEXT:     "cdiv(B * 96, 128)",
// PLAN:        "kernel": "elementwise_0",
// PLAN:        "kernel": "elementwise_0",
// PLAN:      "outputs": [
// PLAN-NEXT:   {
// PLAN-NEXT:     "tensor": "t2"
// PLAN:      "params": [
// PLAN:            "kind": "reshape",
// PLAN-NEXT:       "shape": [
// PLAN-NEXT:         8,
// PLAN-NEXT:         4
// PLAN-NEXT:       ],
// PLAN-NEXT:       "sources": [
// PLAN-NEXT:         "conv.weight\"); import os; #"
// PLAN:        "name": "p0",
// PLAN:            "kind": "fill",
// PLAN:            "value": 1.0
// PLAN:            "kind": "fill",
// PLAN:            "value": 0.0
// PLAN:      "version": 8,
// PLAN-NEXT: "views": [],
// PLAN-NEXT: "weights": [
// PLAN:        "name": "conv.weight\"); import os; #",

// FILES:      kernels
// FILES-NEXT: plan.json
// FILES:      conv1x1_gemm_0.py
// FILES-NEXT: elementwise_0.py
// FILES-NOT:  {{.}}

// With archs, each variant is compiled ahead of time and its cubin recorded.
// AOT:      "compiled": [
// AOT-NEXT:   {
// AOT-NEXT:     "arch": 80,
// AOT-NEXT:     "cubin": "kernels/conv1x1_gemm_0.sm80.cubin",
// AOT-NEXT:     "cubin_sha256": "{{[0-9a-f]+}}",
// AOT-NEXT:     "name": "conv1x1_gemm_0",
// AOT-NEXT:     "num_stages": 2,
// AOT-NEXT:     "num_warps": 4,
// AOT-NEXT:     "shared": {{[0-9]+}}
// AOT:        "cubin": "kernels/elementwise_0.sm80.cubin",

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
