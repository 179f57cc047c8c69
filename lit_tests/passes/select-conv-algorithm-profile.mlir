// The tile profile option: `gpu` (the default) and `interpreter`.
// RUN: teeny-opt %s -p select-conv-algorithm | filecheck %s --check-prefix=GPU
// RUN: teeny-opt %s -p 'select-conv-algorithm{profile=gpu}' | filecheck %s --check-prefix=GPU
// RUN: teeny-opt %s -p 'select-conv-algorithm{profile=interpreter}' | filecheck %s --check-prefix=INTERP
// RUN: teeny-opt %s -p 'func.func(select-conv-algorithm{profile=interpreter})' | filecheck %s --check-prefix=INTERP

// The pipeline prints the option only when it is not the default.
// RUN: teeny-opt %s -p 'select-conv-algorithm{profile=gpu}' --dump-pass-pipeline -o /dev/null 2>&1 | filecheck %s --check-prefix=DUMP-GPU
// DUMP-GPU: {{^}}builtin.module(select-conv-algorithm){{$}}
// RUN: teeny-opt %s -p 'select-conv-algorithm{profile=interpreter}' --dump-pass-pipeline -o /dev/null 2>&1 | filecheck %s --check-prefix=DUMP-INTERP
// DUMP-INTERP: {{^}}builtin.module(select-conv-algorithm{profile=interpreter}){{$}}

// An unknown profile is one located line naming the valid ones.
// RUN: not teeny-opt %s -p 'select-conv-algorithm{profile=fast}' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// UNKNOWN: {{^}}teeny-opt: <pipeline>:1:1: error: bad value 'fast' for option 'profile' of pass 'select-conv-algorithm': expected one of gpu, interpreter{{$}}
// RUN: not teeny-opt %s -p 'select-conv-algorithm{profile=interpretr}' 2>&1 | filecheck %s --check-prefix=NEAR
// NEAR: {{^}}teeny-opt: <pipeline>:1:1: error: bad value 'interpretr' for option 'profile' of pass 'select-conv-algorithm': expected one of gpu, interpreter; did you mean 'interpreter'?{{$}}
// RUN: not teeny-opt %s -p 'select-conv-algorithm{tiles=gpu}' 2>&1 | filecheck %s --check-prefix=NO-OPTION
// NO-OPTION: {{^}}teeny-opt: <pipeline>:1:1: error: pass 'select-conv-algorithm' has no option 'tiles' (valid options: profile){{$}}

// One convolution of each algorithm (YOLOv8n-like shapes at 64x64), then the
// interpreter rules at their boundaries.
// gemm M 1024 / N 16 / K 32: gpu [128, 64, 16]; interpreter [1024, 16, 32].
// implicit-gemm M 256 / N 32 / K 144: gpu [128, 32, 32]; interpreter [1024, 32, 256]
// (a 2**18-element gather of 256 columns; the tile spans images).
// depthwise M 256 / C 32 / taps 9: gpu [128, 32, 1]; interpreter [256, 8, 16]
// (2**15 / (256 * 16) = 8 channels).
// GPU-LABEL:    func.func @one_of_each
// GPU:            algorithm gemm tiles [128, 64, 16] : (tensor<?x32x32x32xf32>
// GPU:            algorithm "implicit-gemm" tiles [128, 32, 32] : (tensor<?x16x32x32xf32>
// GPU:            algorithm depthwise tiles [128, 32, 1] : (tensor<?x32x16x16xf32>
// INTERP-LABEL: func.func @one_of_each
// INTERP:         algorithm gemm tiles [1024, 16, 32] : (tensor<?x32x32x32xf32>
// INTERP:         algorithm "implicit-gemm" tiles [1024, 32, 256] : (tensor<?x16x32x32xf32>
// INTERP:         algorithm depthwise tiles [256, 8, 16] : (tensor<?x32x16x16xf32>
func.func @one_of_each(%a: tensor<?x32x32x32xf32>, %b: tensor<?x16x32x32xf32>, %c: tensor<?x32x16x16xf32>) -> (tensor<?x16x32x32xf32>, tensor<?x32x16x16xf32>, tensor<?x32x16x16xf32>) {
  %w1 = graph.param "w1" : tensor<16x32x1x1xf32>
  %w3 = graph.param "w3" : tensor<32x16x3x3xf32>
  %wd = graph.param "wd" : tensor<32x1x3x3xf32>
  %ya = graph.conv2d %a, %w1 : (tensor<?x32x32x32xf32>, tensor<16x32x1x1xf32>) -> tensor<?x16x32x32xf32>
  %yb = graph.conv2d %b, %w3 strides [2, 2] padding [1, 1, 1, 1] : (tensor<?x16x32x32xf32>, tensor<32x16x3x3xf32>) -> tensor<?x32x16x16xf32>
  %yc = graph.conv2d %c, %wd padding [1, 1, 1, 1] groups 32 : (tensor<?x32x16x16xf32>, tensor<32x1x3x3xf32>) -> tensor<?x32x16x16xf32>
  func.return %ya, %yb, %yc : tensor<?x16x32x32xf32>, tensor<?x32x16x16xf32>, tensor<?x32x16x16xf32>
}

// Interpreter boundaries. gemm: M 127 -> 128 and M 128 -> 128 rows; N 17 -> 32;
// M 8192 capped at 2048, which caps N and K at 2**15 / 2048 = 16.
// implicit-gemm (the gather BLOCK_M x BLOCK_K fills 2**18 elements, whatever one
// image's M): K 127 -> 128, K 128 -> 128 (2048 rows), K 129 -> 256 (1024 rows);
// K 2304 caps at 512 and N 256 at 128 (512 rows).
// INTERP-LABEL: func.func @interpreter_boundaries
// INTERP:         algorithm gemm tiles [128, 16, 16] : (tensor<?x16x127x1xf32>
// INTERP:         algorithm gemm tiles [128, 32, 16] : (tensor<?x16x128x1xf32>
// INTERP:         algorithm gemm tiles [2048, 16, 16] : (tensor<?x128x8192x1xf32>
// INTERP:         algorithm "implicit-gemm" tiles [2048, 16, 128] : (tensor<?x127x4x1xf32>
// INTERP:         algorithm "implicit-gemm" tiles [2048, 16, 128] : (tensor<?x128x4x1xf32>
// INTERP:         algorithm "implicit-gemm" tiles [1024, 16, 256] : (tensor<?x129x4x1xf32>
// INTERP:         algorithm "implicit-gemm" tiles [512, 128, 512] : (tensor<?x256x2x2xf32>
func.func @interpreter_boundaries(%a: tensor<?x16x127x1xf32>, %b: tensor<?x16x128x1xf32>, %c: tensor<?x128x8192x1xf32>, %d: tensor<?x127x4x1xf32>, %e: tensor<?x128x4x1xf32>, %f: tensor<?x129x4x1xf32>, %g: tensor<?x256x2x2xf32>) -> (tensor<?x16x127x1xf32>, tensor<?x17x128x1xf32>, tensor<?x128x8192x1xf32>, tensor<?x16x4x1xf32>, tensor<?x16x4x1xf32>, tensor<?x16x4x1xf32>, tensor<?x256x2x2xf32>) {
  %wa = graph.param "wa" : tensor<16x16x1x1xf32>
  %wb = graph.param "wb" : tensor<17x16x1x1xf32>
  %wc = graph.param "wc" : tensor<128x128x1x1xf32>
  %wd = graph.param "wd" : tensor<16x127x1x1xf32>
  %we = graph.param "we" : tensor<16x128x1x1xf32>
  %wf = graph.param "wf" : tensor<16x129x1x1xf32>
  %wg = graph.param "wg" : tensor<256x256x3x3xf32>
  %ya = graph.conv2d %a, %wa : (tensor<?x16x127x1xf32>, tensor<16x16x1x1xf32>) -> tensor<?x16x127x1xf32>
  %yb = graph.conv2d %b, %wb : (tensor<?x16x128x1xf32>, tensor<17x16x1x1xf32>) -> tensor<?x17x128x1xf32>
  %yc = graph.conv2d %c, %wc : (tensor<?x128x8192x1xf32>, tensor<128x128x1x1xf32>) -> tensor<?x128x8192x1xf32>
  %yd = graph.conv2d %d, %wd dilation [2, 2] : (tensor<?x127x4x1xf32>, tensor<16x127x1x1xf32>) -> tensor<?x16x4x1xf32>
  %ye = graph.conv2d %e, %we dilation [2, 2] : (tensor<?x128x4x1xf32>, tensor<16x128x1x1xf32>) -> tensor<?x16x4x1xf32>
  %yf = graph.conv2d %f, %wf dilation [2, 2] : (tensor<?x129x4x1xf32>, tensor<16x129x1x1xf32>) -> tensor<?x16x4x1xf32>
  %yg = graph.conv2d %g, %wg padding [1, 1, 1, 1] : (tensor<?x256x2x2xf32>, tensor<256x256x3x3xf32>) -> tensor<?x256x2x2xf32>
  func.return %ya, %yb, %yc, %yd, %ye, %yf, %yg : tensor<?x16x127x1xf32>, tensor<?x17x128x1xf32>, tensor<?x128x8192x1xf32>, tensor<?x16x4x1xf32>, tensor<?x16x4x1xf32>, tensor<?x16x4x1xf32>, tensor<?x256x2x2xf32>
}

// Depthwise, interpreter: taps 25 (5x5) -> 32; a 64x64 output (M 4096) takes
// 2**15 / 32 = 1024 rows, leaving 2**15 / (1024 * 32) = 1 channel of 16; a 7x7
// output (M 49) -> 64 rows, all 16 channels.
// INTERP-LABEL: func.func @depthwise_interpreter
// INTERP:         algorithm depthwise tiles [1024, 1, 32] : (tensor<?x16x64x64xf32>
// INTERP:         algorithm depthwise tiles [64, 16, 32] : (tensor<?x16x7x7xf32>
func.func @depthwise_interpreter(%a: tensor<?x16x64x64xf32>, %b: tensor<?x16x7x7xf32>) -> (tensor<?x16x64x64xf32>, tensor<?x16x7x7xf32>) {
  %w = graph.param "w" : tensor<16x1x5x5xf32>
  %ya = graph.conv2d %a, %w padding [2, 2, 2, 2] groups 16 : (tensor<?x16x64x64xf32>, tensor<16x1x5x5xf32>) -> tensor<?x16x64x64xf32>
  %yb = graph.conv2d %b, %w padding [2, 2, 2, 2] groups 16 : (tensor<?x16x7x7xf32>, tensor<16x1x5x5xf32>) -> tensor<?x16x7x7xf32>
  func.return %ya, %yb : tensor<?x16x64x64xf32>, tensor<?x16x7x7xf32>
}
