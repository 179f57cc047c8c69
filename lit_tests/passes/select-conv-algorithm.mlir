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
