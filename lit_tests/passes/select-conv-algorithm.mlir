// RUN: teeny-opt %s --split-input-file -p select-conv-algorithm | filecheck %s
// RUN: teeny-opt %s --split-input-file -p 'func.func(select-conv-algorithm),select-conv-algorithm' | filecheck %s

// The second RUN line shows the pass is idempotent.

// CHECK-LABEL: func.func @fused_gemm
// CHECK-SAME:    (%[[X:.*]]: tensor<?x8x4x4xf32>)
// CHECK:         %[[Y:.*]] = graph.fused_conv2d %[[X]], %{{.*}} scale #derive.param<fill(1.0) : [16]> shift #derive.param<fill(0.0) : [16]> activation silu algorithm gemm tiles [64, 64, 8] : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<?x16x4x4xf32>
// CHECK-NEXT:    func.return %[[Y]]
func.func @fused_gemm(%x: tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32> {
  %w = graph.param "w" : tensor<16x8x1x1xf32>
  %y = graph.fused_conv2d %x, %w scale #derive.param<fill(1.0) : [16]> shift #derive.param<fill(0.0) : [16]> activation silu : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<?x16x4x4xf32>
  func.return %y : tensor<?x16x4x4xf32>
}

// -----

// Tiles from pick_gemm_tile_sizes(M = OH * OW, N = C_out, K = C_in), at the boundaries:
// M 128 / N 128 / K 128 -> [128, 128, 32]; M 127 / N 127 / K 127 -> [64, 64, 16];
// M 128 / N 1 / K 32 -> [128, 64, 16]; M 1 / N 128 / K 31 -> [64, 128, 8].
// CHECK-LABEL: func.func @tile_boundaries
// CHECK:         algorithm gemm tiles [128, 128, 32] : (tensor<?x128x16x8xf32>
// CHECK:         algorithm gemm tiles [64, 64, 16] : (tensor<?x127x127x1xf32>
// CHECK:         algorithm gemm tiles [128, 64, 16] : (tensor<?x32x8x16xf32>
// CHECK:         algorithm gemm tiles [64, 128, 8] : (tensor<?x31x1x1xf32>
func.func @tile_boundaries(%a: tensor<?x128x16x8xf32>, %b: tensor<?x127x127x1xf32>, %c: tensor<?x32x8x16xf32>, %d: tensor<?x31x1x1xf32>) -> (tensor<?x128x16x8xf32>, tensor<?x127x127x1xf32>, tensor<?x1x8x16xf32>, tensor<?x128x1x1xf32>) {
  %wa = graph.param "wa" : tensor<128x128x1x1xf32>
  %wb = graph.param "wb" : tensor<127x127x1x1xf32>
  %wc = graph.param "wc" : tensor<1x32x1x1xf32>
  %wd = graph.param "wd" : tensor<128x31x1x1xf32>
  %ya = graph.conv2d %a, %wa : (tensor<?x128x16x8xf32>, tensor<128x128x1x1xf32>) -> tensor<?x128x16x8xf32>
  %yb = graph.conv2d %b, %wb : (tensor<?x127x127x1xf32>, tensor<127x127x1x1xf32>) -> tensor<?x127x127x1xf32>
  %yc = graph.conv2d %c, %wc : (tensor<?x32x8x16xf32>, tensor<1x32x1x1xf32>) -> tensor<?x1x8x16xf32>
  %yd = graph.conv2d %d, %wd : (tensor<?x31x1x1xf32>, tensor<128x31x1x1xf32>) -> tensor<?x128x1x1xf32>
  func.return %ya, %yb, %yc, %yd : tensor<?x128x16x8xf32>, tensor<?x127x127x1xf32>, tensor<?x1x8x16xf32>, tensor<?x128x1x1xf32>
}

// -----

// Every convolution that is neither gemm nor depthwise takes implicit-gemm, with
// tiles from pick_implicit_gemm_tile_sizes(M = OH * OW, N = C_out / groups,
// K = C_in / groups * KH * KW): 3x3, 1x1 stride 2, padded 1x1, grouped, dilated 1x1.
// CHECK-LABEL: func.func @implicit_gemm
// CHECK:         graph.fused_conv2d %{{.*}}, %{{.*}} scale #derive.param<fill(1.0) : [4]> shift #derive.param<fill(0.0) : [4]> algorithm "implicit-gemm" tiles [64, 16, 16] : (tensor<?x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<?x4x6x6xf32>
// CHECK:         graph.fused_conv2d %{{.*}}, %{{.*}} strides [2, 2] scale {{.*}} algorithm "implicit-gemm" tiles [64, 16, 16] : (tensor<?x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<?x4x4x4xf32>
// CHECK:         graph.fused_conv2d %{{.*}}, %{{.*}} padding [1, 1, 1, 1] scale {{.*}} activation silu algorithm "implicit-gemm" tiles [64, 16, 16] : (tensor<?x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<?x4x10x10xf32>
// CHECK:         graph.fused_conv2d %{{.*}}, %{{.*}} groups 2 scale {{.*}} algorithm "implicit-gemm" tiles [64, 16, 16] : (tensor<?x4x8x8xf32>, tensor<4x2x1x1xf32>) -> tensor<?x4x8x8xf32>
// CHECK:         graph.fused_conv2d %{{.*}}, %{{.*}} dilation [2, 2] scale {{.*}} algorithm "implicit-gemm" tiles [64, 16, 16] : (tensor<?x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<?x4x8x8xf32>
// CHECK-NOT:     graph.conv2d
func.func @implicit_gemm(%x: tensor<?x4x8x8xf32>) -> (tensor<?x4x6x6xf32>, tensor<?x4x4x4xf32>, tensor<?x4x10x10xf32>, tensor<?x4x8x8xf32>, tensor<?x4x8x8xf32>) {
  %w3 = graph.param "w3" : tensor<4x4x3x3xf32>
  %w1 = graph.param "w1" : tensor<4x4x1x1xf32>
  %wg = graph.param "wg" : tensor<4x2x1x1xf32>
  %a = graph.conv2d %x, %w3 : (tensor<?x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<?x4x6x6xf32>
  %b = graph.conv2d %x, %w1 strides [2, 2] : (tensor<?x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<?x4x4x4xf32>
  %c = graph.fused_conv2d %x, %w1 padding [1, 1, 1, 1] scale #derive.param<fill(1.0) : [4]> shift #derive.param<fill(0.0) : [4]> activation silu : (tensor<?x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<?x4x10x10xf32>
  %d = graph.conv2d %x, %wg groups 2 : (tensor<?x4x8x8xf32>, tensor<4x2x1x1xf32>) -> tensor<?x4x8x8xf32>
  %e = graph.conv2d %x, %w1 dilation [2, 2] : (tensor<?x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<?x4x8x8xf32>
  func.return %a, %b, %c, %d, %e : tensor<?x4x6x6xf32>, tensor<?x4x4x4xf32>, tensor<?x4x10x10xf32>, tensor<?x4x8x8xf32>, tensor<?x4x8x8xf32>
}

// -----

// Implicit-GEMM tiles at the boundaries: M 128 / N 17 / K 128 -> [128, 32, 32];
// M 127 / N 16 / K 127 -> [64, 16, 16]; N 129 per group (258 / 2) / M 1 / K 9 ->
// [64, 128, 16]; the stem (C_in 3, 3x3 stride 2, K 27) -> [64, 16, 32] (16 < K <= 32:
// one K step of 32, padded as two steps of 16 would be).
// CHECK-LABEL: func.func @implicit_gemm_tile_boundaries
// CHECK:         algorithm "implicit-gemm" tiles [128, 32, 32] : (tensor<?x64x16x9xf32>
// CHECK:         algorithm "implicit-gemm" tiles [64, 16, 16] : (tensor<?x127x127x1xf32>
// CHECK:         algorithm "implicit-gemm" tiles [64, 128, 16] : (tensor<?x2x1x1xf32>
// CHECK:         algorithm "implicit-gemm" tiles [64, 16, 32] : (tensor<?x3x16x16xf32>
func.func @implicit_gemm_tile_boundaries(%a: tensor<?x64x16x9xf32>, %b: tensor<?x127x127x1xf32>, %c: tensor<?x2x1x1xf32>, %d: tensor<?x3x16x16xf32>) -> (tensor<?x17x16x8xf32>, tensor<?x16x127x1xf32>, tensor<?x258x1x1xf32>, tensor<?x16x8x8xf32>) {
  %wa = graph.param "wa" : tensor<17x64x1x2xf32>
  %wb = graph.param "wb" : tensor<16x127x1x1xf32>
  %wc = graph.param "wc" : tensor<258x1x3x3xf32>
  %wd = graph.param "wd" : tensor<16x3x3x3xf32>
  %ya = graph.conv2d %a, %wa : (tensor<?x64x16x9xf32>, tensor<17x64x1x2xf32>) -> tensor<?x17x16x8xf32>
  %yb = graph.conv2d %b, %wb dilation [2, 2] : (tensor<?x127x127x1xf32>, tensor<16x127x1x1xf32>) -> tensor<?x16x127x1xf32>
  %yc = graph.conv2d %c, %wc padding [1, 1, 1, 1] groups 2 : (tensor<?x2x1x1xf32>, tensor<258x1x3x3xf32>) -> tensor<?x258x1x1xf32>
  %yd = graph.conv2d %d, %wd strides [2, 2] padding [1, 1, 1, 1] : (tensor<?x3x16x16xf32>, tensor<16x3x3x3xf32>) -> tensor<?x16x8x8xf32>
  func.return %ya, %yb, %yc, %yd : tensor<?x17x16x8xf32>, tensor<?x16x127x1xf32>, tensor<?x258x1x1xf32>, tensor<?x16x8x8xf32>
}

// -----

// Depthwise convolutions (groups == C_in == C_out, any window) take the
// depthwise_conv family, with tiles [positions, channels, taps] from
// pick_depthwise_tile_sizes(M = OH * OW, N = C, K = KH * KW): gpu BLOCK_P 128
// from M 128 (64 below), BLOCK_C = C rounded up to a power of two (at most 32),
// BLOCK_T 1. M 128 / C 17 -> [128, 32, 1]; M 127 / C 16 -> [64, 16, 1];
// M 1 / C 3 with a 1x1 window -> [64, 4, 1]; C 64 -> [64, 32, 1]. Fused ones too.
// CHECK-LABEL: func.func @depthwise
// CHECK:         graph.fused_conv2d %{{.*}}, %{{.*}} padding [1, 1, 1, 1] groups 17 scale #derive.param<fill(1.0) : [17]> shift #derive.param<fill(0.0) : [17]> algorithm depthwise tiles [128, 32, 1] : (tensor<?x17x16x8xf32>, tensor<17x1x3x3xf32>) -> tensor<?x17x16x8xf32>
// CHECK:         algorithm depthwise tiles [64, 16, 1] : (tensor<?x16x127x1xf32>
// CHECK:         algorithm depthwise tiles [64, 4, 1] : (tensor<?x3x1x1xf32>
// CHECK:         graph.fused_conv2d {{.*}} strides [2, 2] padding [0, 1, 2, 3] dilation [2, 2] groups 64 {{.*}} activation silu algorithm depthwise tiles [64, 32, 1] : (tensor<?x64x9x9xf32>
func.func @depthwise(%a: tensor<?x17x16x8xf32>, %b: tensor<?x16x127x1xf32>, %c: tensor<?x3x1x1xf32>, %d: tensor<?x64x9x9xf32>) -> (tensor<?x17x16x8xf32>, tensor<?x16x127x1xf32>, tensor<?x3x1x1xf32>, tensor<?x64x4x5xf32>) {
  %wa = graph.param "wa" : tensor<17x1x3x3xf32>
  %wb = graph.param "wb" : tensor<16x1x3x1xf32>
  %wc = graph.param "wc" : tensor<3x1x1x1xf32>
  %wd = graph.param "wd" : tensor<64x1x3x3xf32>
  %ya = graph.conv2d %a, %wa padding [1, 1, 1, 1] groups 17 : (tensor<?x17x16x8xf32>, tensor<17x1x3x3xf32>) -> tensor<?x17x16x8xf32>
  %yb = graph.conv2d %b, %wb padding [1, 0, 1, 0] groups 16 : (tensor<?x16x127x1xf32>, tensor<16x1x3x1xf32>) -> tensor<?x16x127x1xf32>
  %yc = graph.conv2d %c, %wc groups 3 : (tensor<?x3x1x1xf32>, tensor<3x1x1x1xf32>) -> tensor<?x3x1x1xf32>
  %yd = graph.fused_conv2d %d, %wd strides [2, 2] padding [0, 1, 2, 3] dilation [2, 2] groups 64 scale #derive.param<fill(1.0) : [64]> shift #derive.param<fill(0.0) : [64]> activation silu : (tensor<?x64x9x9xf32>, tensor<64x1x3x3xf32>) -> tensor<?x64x4x5xf32>
  func.return %ya, %yb, %yc, %yd : tensor<?x17x16x8xf32>, tensor<?x16x127x1xf32>, tensor<?x3x1x1xf32>, tensor<?x64x4x5xf32>
}

// -----

// A plain conv2d becomes a fused one with the identity epilogue; its bias
// param is named by the shift (and removed, now unused).
// CHECK-LABEL: func.func @plain_convs_are_wrapped
// CHECK-SAME:    (%[[X:.*]]: tensor<?x2x4x4xf32>)
// CHECK-NOT:     graph.param "b"
// CHECK:         %[[A:.*]] = graph.fused_conv2d %[[X]], %[[W:.*]] scale #derive.param<fill(1.0) : [4]> shift #derive.param<fill(0.0) : [4]> algorithm gemm tiles [64, 64, 8] {note = "kept"} : (tensor<?x2x4x4xf32>, tensor<4x2x1x1xf32>) -> tensor<?x4x4x4xf32>
// CHECK-NEXT:    %[[B:.*]] = graph.fused_conv2d %[[X]], %[[W]] scale #derive.param<fill(1.0) : [4]> shift #derive.param<identity("b") : [4]> algorithm gemm tiles [64, 64, 8] : (tensor<?x2x4x4xf32>, tensor<4x2x1x1xf32>) -> tensor<?x4x4x4xf32>
// CHECK-NEXT:    func.return %[[A]], %[[B]]
// CHECK-NOT:     graph.conv2d
func.func @plain_convs_are_wrapped(%x: tensor<?x2x4x4xf32>) -> (tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>) {
  %w = graph.param "w" : tensor<4x2x1x1xf32>
  %b = graph.param "b" : tensor<4xf32>
  %c = graph.conv2d %x, %w {note = "kept"} : (tensor<?x2x4x4xf32>, tensor<4x2x1x1xf32>) -> tensor<?x4x4x4xf32>
  %d = graph.conv2d %x, %w, %b : (tensor<?x2x4x4xf32>, tensor<4x2x1x1xf32>, tensor<4xf32>) -> tensor<?x4x4x4xf32>
  func.return %c, %d : tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>
}

// -----

// A bias param still used elsewhere stays.
// CHECK-LABEL: func.func @shared_bias_stays
// CHECK:         %[[B:.*]] = graph.param "b"
// CHECK:         graph.fused_conv2d {{.*}} shift #derive.param<identity("b") : [4]>
// CHECK:         func.return %{{.*}}, %[[B]]
func.func @shared_bias_stays(%x: tensor<?x2x4x4xf32>) -> (tensor<?x4x4x4xf32>, tensor<4xf32>) {
  %w = graph.param "w" : tensor<4x2x1x1xf32>
  %b = graph.param "b" : tensor<4xf32>
  %d = graph.conv2d %x, %w, %b : (tensor<?x2x4x4xf32>, tensor<4x2x1x1xf32>, tensor<4xf32>) -> tensor<?x4x4x4xf32>
  func.return %d, %b : tensor<?x4x4x4xf32>, tensor<4xf32>
}

// -----

// Does not apply: a function without convolutions.
// CHECK-LABEL: func.func @no_convs
// CHECK-NEXT:    graph.silu
// CHECK-NOT:     algorithm
func.func @no_convs(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %y = graph.silu %x : tensor<?x4xf32>
  func.return %y : tensor<?x4xf32>
}
