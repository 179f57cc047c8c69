// RUN: teeny-opt %s --split-input-file -p fuse-epilogues | filecheck %s --check-prefixes=CHECK,INFER
// RUN: teeny-opt %s --split-input-file -p 'func.func(fuse-epilogues{mode=inference})' | filecheck %s --check-prefixes=CHECK,INFER
// RUN: teeny-opt %s --split-input-file -p 'fuse-epilogues{mode=training}' | filecheck %s --check-prefixes=CHECK,TRAIN

// CHECK lines hold in both modes; INFER only in inference mode, TRAIN only in
// training mode (which never folds batch-norm statistics).

// CHECK-LABEL: func.func @conv_bn_silu
// CHECK-SAME:    (%[[X:.*]]: tensor<?x8x4x4xf32>)
// CHECK:         %[[W:.*]] = graph.param "m.conv.weight"
// INFER-NOT:     graph.param "m.bn
// INFER:         %[[Y:.*]] = graph.fused_conv2d %[[X]], %[[W]] scale #derive.param<bn_scale("m.bn.weight", "m.bn.running_var") eps 0.001 : [16]> shift #derive.param<bn_shift("m.bn.weight", "m.bn.bias", "m.bn.running_mean", "m.bn.running_var") eps 0.001 : [16]> activation silu : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<?x16x4x4xf32>
// INFER-NEXT:    func.return %[[Y]]
// TRAIN:         graph.conv2d
// TRAIN-NEXT:    graph.batch_norm
// TRAIN-NEXT:    graph.silu
// TRAIN-NOT:     graph.fused_conv2d
func.func @conv_bn_silu(%x: tensor<?x8x4x4xf32>) -> tensor<?x16x4x4xf32> {
  %w = graph.param "m.conv.weight" : tensor<16x8x1x1xf32>
  %g = graph.param "m.bn.weight" : tensor<16xf32>
  %b = graph.param "m.bn.bias" : tensor<16xf32>
  %m = graph.param "m.bn.running_mean" : tensor<16xf32>
  %v = graph.param "m.bn.running_var" : tensor<16xf32>
  %c = graph.conv2d %x, %w : (tensor<?x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<?x16x4x4xf32>
  %n = graph.batch_norm %c, %g, %b, %m, %v eps 1.0e-3 : (tensor<?x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x16x4x4xf32>
  %y = graph.silu %n : tensor<?x16x4x4xf32>
  func.return %y : tensor<?x16x4x4xf32>
}

// -----

// The bias of a bias_add (split-bias's output) folds into the shift.
// CHECK-LABEL: func.func @conv_bias_add_bn_relu
// INFER-NOT:     graph.param "b"
// INFER:         graph.fused_conv2d %{{.*}}, %{{.*}} strides [2, 2] padding [1, 1, 1, 1] scale #derive.param<bn_scale("g", "v") eps 1.0e-05 : [4]> shift #derive.param<bn_shift("g", "be", "m", "v", "b") eps 1.0e-05 : [4]> activation relu : (tensor<?x2x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<?x4x4x4xf32>
// INFER-NOT:     graph.
// TRAIN:         graph.fused_conv2d %{{.*}}, %{{.*}} strides [2, 2] padding [1, 1, 1, 1] scale #derive.param<fill(1.0) : [4]> shift #derive.param<identity("b") : [4]> : (tensor<?x2x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<?x4x4x4xf32>
// TRAIN-NEXT:    graph.batch_norm
// TRAIN-NEXT:    graph.relu
func.func @conv_bias_add_bn_relu(%x: tensor<?x2x8x8xf32>) -> tensor<?x4x4x4xf32> {
  %w = graph.param "w" : tensor<4x2x3x3xf32>
  %bias = graph.param "b" : tensor<4xf32>
  %g = graph.param "g" : tensor<4xf32>
  %be = graph.param "be" : tensor<4xf32>
  %m = graph.param "m" : tensor<4xf32>
  %v = graph.param "v" : tensor<4xf32>
  %c = graph.conv2d %x, %w strides [2, 2] padding [1, 1, 1, 1] : (tensor<?x2x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<?x4x4x4xf32>
  %a = graph.bias_add %c, %bias : (tensor<?x4x4x4xf32>, tensor<4xf32>) -> tensor<?x4x4x4xf32>
  %n = graph.batch_norm %a, %g, %be, %m, %v : (tensor<?x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x4x4x4xf32>
  %y = graph.relu %n : tensor<?x4x4x4xf32>
  func.return %y : tensor<?x4x4x4xf32>
}

// -----

// A conv2d that still has its bias operand (split-bias not run) folds it the same way.
// CHECK-LABEL: func.func @conv_bias_operand_bn
// INFER:         graph.fused_conv2d %{{.*}}, %{{.*}} scale #derive.param<bn_scale("g", "v") eps 1.0e-05 : [4]> shift #derive.param<bn_shift("g", "be", "m", "v", "b") eps 1.0e-05 : [4]> :
// TRAIN:         graph.conv2d %{{.*}}, %{{.*}}, %{{.*}} :
// TRAIN-NEXT:    graph.batch_norm
func.func @conv_bias_operand_bn(%x: tensor<?x2x4x4xf32>) -> tensor<?x4x4x4xf32> {
  %w = graph.param "w" : tensor<4x2x1x1xf32>
  %bias = graph.param "b" : tensor<4xf32>
  %g = graph.param "g" : tensor<4xf32>
  %be = graph.param "be" : tensor<4xf32>
  %m = graph.param "m" : tensor<4xf32>
  %v = graph.param "v" : tensor<4xf32>
  %c = graph.conv2d %x, %w, %bias : (tensor<?x2x4x4xf32>, tensor<4x2x1x1xf32>, tensor<4xf32>) -> tensor<?x4x4x4xf32>
  %n = graph.batch_norm %c, %g, %be, %m, %v : (tensor<?x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x4x4x4xf32>
  func.return %n : tensor<?x4x4x4xf32>
}

// -----

// A bias alone: scale 1, shift = the bias.
// CHECK-LABEL: func.func @conv_bias_add
// CHECK-NOT:     graph.param "b"
// CHECK:         %[[Y:.*]] = graph.fused_conv2d %{{.*}}, %{{.*}} scale #derive.param<fill(1.0) : [4]> shift #derive.param<identity("b") : [4]> : (tensor<?x2x4x4xf32>, tensor<4x2x1x1xf32>) -> tensor<?x4x4x4xf32>
// CHECK-NEXT:    func.return %[[Y]]
func.func @conv_bias_add(%x: tensor<?x2x4x4xf32>) -> tensor<?x4x4x4xf32> {
  %w = graph.param "w" : tensor<4x2x1x1xf32>
  %bias = graph.param "b" : tensor<4xf32>
  %c = graph.conv2d %x, %w : (tensor<?x2x4x4xf32>, tensor<4x2x1x1xf32>) -> tensor<?x4x4x4xf32>
  %y = graph.bias_add %c, %bias : (tensor<?x4x4x4xf32>, tensor<4xf32>) -> tensor<?x4x4x4xf32>
  func.return %y : tensor<?x4x4x4xf32>
}

// -----

// An activation alone: scale 1, shift 0; the conv's own bias becomes the shift.
// CHECK-LABEL: func.func @conv_activation
// CHECK:         graph.fused_conv2d %{{.*}}, %{{.*}} scale #derive.param<fill(1.0) : [4]> shift #derive.param<fill(0.0) : [4]> activation sigmoid :
// CHECK:         graph.fused_conv2d %{{.*}}, %{{.*}} scale #derive.param<fill(1.0) : [4]> shift #derive.param<identity("b") : [4]> activation relu :
func.func @conv_activation(%x: tensor<?x2x4x4xf32>) -> (tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>) {
  %w = graph.param "w" : tensor<4x2x1x1xf32>
  %bias = graph.param "b" : tensor<4xf32>
  %c = graph.conv2d %x, %w : (tensor<?x2x4x4xf32>, tensor<4x2x1x1xf32>) -> tensor<?x4x4x4xf32>
  %y = graph.sigmoid %c : tensor<?x4x4x4xf32>
  %d = graph.conv2d %x, %w, %bias : (tensor<?x2x4x4xf32>, tensor<4x2x1x1xf32>, tensor<4xf32>) -> tensor<?x4x4x4xf32>
  %z = graph.relu %d : tensor<?x4x4x4xf32>
  func.return %y, %z : tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>
}

// -----

// Back-to-back chains fuse one by one; the second reads the first's result.
// CHECK-LABEL: func.func @two_chains
// CHECK-SAME:    (%[[X:.*]]: tensor<?x4x4x4xf32>)
// CHECK:         %[[A:.*]] = graph.fused_conv2d %[[X]], %{{.*}} scale {{.*}} activation silu
// CHECK-NEXT:    %[[B:.*]] = graph.fused_conv2d %[[A]], %{{.*}} scale {{.*}} activation relu
// CHECK-NEXT:    func.return %[[B]]
func.func @two_chains(%x: tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32> {
  %w = graph.param "w" : tensor<4x4x1x1xf32>
  %c0 = graph.conv2d %x, %w : (tensor<?x4x4x4xf32>, tensor<4x4x1x1xf32>) -> tensor<?x4x4x4xf32>
  %y0 = graph.silu %c0 : tensor<?x4x4x4xf32>
  %c1 = graph.conv2d %y0, %w : (tensor<?x4x4x4xf32>, tensor<4x4x1x1xf32>) -> tensor<?x4x4x4xf32>
  %y1 = graph.relu %c1 : tensor<?x4x4x4xf32>
  func.return %y1 : tensor<?x4x4x4xf32>
}

// -----

// Does not apply: a lone convolution (with or without a bias) has nothing to fuse.
// CHECK-LABEL: func.func @lone_convs
// CHECK:         graph.conv2d %{{.*}}, %{{.*}} :
// CHECK-NEXT:    graph.conv2d %{{.*}}, %{{.*}}, %{{.*}} :
// CHECK-NOT:     graph.fused_conv2d
func.func @lone_convs(%x: tensor<?x2x4x4xf32>) -> (tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>) {
  %w = graph.param "w" : tensor<4x2x1x1xf32>
  %bias = graph.param "b" : tensor<4xf32>
  %c = graph.conv2d %x, %w : (tensor<?x2x4x4xf32>, tensor<4x2x1x1xf32>) -> tensor<?x4x4x4xf32>
  %d = graph.conv2d %x, %w, %bias : (tensor<?x2x4x4xf32>, tensor<4x2x1x1xf32>, tensor<4xf32>) -> tensor<?x4x4x4xf32>
  func.return %c, %d : tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>
}

// -----

// No convolution chain: a batch norm not fed by a convolution stays a batch
// norm; inference mode folds the activation after it into its `activation`,
// training mode leaves both ops.
// CHECK-LABEL: func.func @no_conv
// INFER:         %[[Y:.*]] = graph.batch_norm %{{.*}} activation silu : (tensor<?x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x4x4x4xf32>
// INFER-NEXT:    func.return %[[Y]]
// TRAIN:         graph.batch_norm
// TRAIN-NEXT:    graph.silu
// CHECK-NOT:     graph.fused_conv2d
func.func @no_conv(%x: tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32> {
  %g = graph.param "g" : tensor<4xf32>
  %n = graph.batch_norm %x, %g, %g, %g, %g : (tensor<?x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x4x4x4xf32>
  %y = graph.silu %n : tensor<?x4x4x4xf32>
  func.return %y : tensor<?x4x4x4xf32>
}

// -----

// Only params the fusion orphaned go: a dead one that was already there stays,
// and so does a statistic still used elsewhere.
// CHECK-LABEL: func.func @cleanup_only_orphans
// CHECK:         graph.param "unrelated"
// CHECK:         %[[M:.*]] = graph.param "m"
// INFER-NOT:     graph.param "v"
// INFER:         graph.fused_conv2d
// INFER:         func.return %{{.*}}, %[[M]]
func.func @cleanup_only_orphans(%x: tensor<?x2x4x4xf32>) -> (tensor<?x4x4x4xf32>, tensor<4xf32>) {
  %unrelated = graph.param "unrelated" : tensor<4xf32>
  %w = graph.param "w" : tensor<4x2x1x1xf32>
  %g = graph.param "g" : tensor<4xf32>
  %m = graph.param "m" : tensor<4xf32>
  %v = graph.param "v" : tensor<4xf32>
  %c = graph.conv2d %x, %w : (tensor<?x2x4x4xf32>, tensor<4x2x1x1xf32>) -> tensor<?x4x4x4xf32>
  %n = graph.batch_norm %c, %g, %g, %m, %v : (tensor<?x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x4x4x4xf32>
  func.return %n, %m : tensor<?x4x4x4xf32>, tensor<4xf32>
}

// -----

// A residual add after the chain (YOLOv8's bottleneck, x + SiLU(BN(conv(x)))) becomes
// the fused op's residual, residual first; the fused op takes the add's place.
// Training mode keeps the batch norm, so nothing reaches the add.
// CHECK-LABEL: func.func @bottleneck_residual_lhs
// CHECK-SAME:    (%[[X:.*]]: tensor<?x8x4x4xf32>)
// CHECK:         %[[W:.*]] = graph.param "m.cv2.conv.weight"
// INFER-NOT:     graph.param "m.cv2.bn
// INFER:         %[[Y:.*]] = graph.fused_conv2d %[[X]], %[[W]] residual %[[X]] padding [1, 1, 1, 1] scale #derive.param<bn_scale("m.cv2.bn.weight", "m.cv2.bn.running_var") eps 0.001 : [8]> shift #derive.param<bn_shift("m.cv2.bn.weight", "m.cv2.bn.bias", "m.cv2.bn.running_mean", "m.cv2.bn.running_var") eps 0.001 : [8]> activation silu : (tensor<?x8x4x4xf32>, tensor<8x8x3x3xf32>, tensor<?x8x4x4xf32>) -> tensor<?x8x4x4xf32>
// INFER-NOT:     graph.add
// INFER-NEXT:    func.return %[[Y]]
// TRAIN:         graph.conv2d
// TRAIN-NEXT:    graph.batch_norm
// TRAIN-NEXT:    graph.silu
// TRAIN-NEXT:    graph.add
// TRAIN-NOT:     graph.fused_conv2d
func.func @bottleneck_residual_lhs(%x: tensor<?x8x4x4xf32>) -> tensor<?x8x4x4xf32> {
  %w = graph.param "m.cv2.conv.weight" : tensor<8x8x3x3xf32>
  %g = graph.param "m.cv2.bn.weight" : tensor<8xf32>
  %b = graph.param "m.cv2.bn.bias" : tensor<8xf32>
  %m = graph.param "m.cv2.bn.running_mean" : tensor<8xf32>
  %v = graph.param "m.cv2.bn.running_var" : tensor<8xf32>
  %c = graph.conv2d %x, %w padding [1, 1, 1, 1] : (tensor<?x8x4x4xf32>, tensor<8x8x3x3xf32>) -> tensor<?x8x4x4xf32>
  %n = graph.batch_norm %c, %g, %b, %m, %v eps 1.0e-3 : (tensor<?x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x8x4x4xf32>
  %y = graph.silu %n : tensor<?x8x4x4xf32>
  %z = graph.add %x, %y : (tensor<?x8x4x4xf32>, tensor<?x8x4x4xf32>) -> tensor<?x8x4x4xf32>
  func.return %z : tensor<?x8x4x4xf32>
}

// -----

// The chain's value first; bias + SiLU without batch norm; the residual a block
// argument other than the input. Training mode fuses conv + bias + silu and keeps the add.
// CHECK-LABEL: func.func @bias_silu_residual_rhs
// CHECK-SAME:    (%[[X:.*]]: tensor<?x2x4x4xf32>, %[[R:.*]]: tensor<?x4x4x4xf32>)
// CHECK-NOT:     graph.param "b"
// INFER:         %[[Y:.*]] = graph.fused_conv2d %[[X]], %{{.*}} residual %[[R]] scale #derive.param<fill(1.0) : [4]> shift #derive.param<identity("b") : [4]> activation silu : (tensor<?x2x4x4xf32>, tensor<4x2x1x1xf32>, tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32>
// INFER-NEXT:    func.return %[[Y]]
// TRAIN:         %[[Y:.*]] = graph.fused_conv2d %[[X]], %{{.*}} scale #derive.param<fill(1.0) : [4]> shift #derive.param<identity("b") : [4]> activation silu : (tensor<?x2x4x4xf32>, tensor<4x2x1x1xf32>) -> tensor<?x4x4x4xf32>
// TRAIN-NEXT:    %[[Z:.*]] = graph.add %[[Y]], %[[R]]
// TRAIN-NEXT:    func.return %[[Z]]
func.func @bias_silu_residual_rhs(%x: tensor<?x2x4x4xf32>, %r: tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32> {
  %w = graph.param "w" : tensor<4x2x1x1xf32>
  %bias = graph.param "b" : tensor<4xf32>
  %c = graph.conv2d %x, %w : (tensor<?x2x4x4xf32>, tensor<4x2x1x1xf32>) -> tensor<?x4x4x4xf32>
  %a = graph.bias_add %c, %bias : (tensor<?x4x4x4xf32>, tensor<4xf32>) -> tensor<?x4x4x4xf32>
  %y = graph.silu %a : tensor<?x4x4x4xf32>
  %z = graph.add %y, %r : (tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32>
  func.return %z : tensor<?x4x4x4xf32>
}

// -----

// A bias alone (the conv's own), or nothing at all, before the add: the residual
// still folds (here an op's result computed before the convolution). Training
// mode leaves both convolutions alone: a conv with only an add after it.
// CHECK-LABEL: func.func @bias_or_nothing_then_residual
// CHECK-SAME:    (%[[X:.*]]: tensor<?x4x4x4xf32>)
// CHECK:         %[[R:.*]] = graph.relu %[[X]]
// CHECK-NEXT:    %[[W:.*]] = graph.param "w"
// INFER-NOT:     graph.param "b"
// INFER-NEXT:    %[[A:.*]] = graph.fused_conv2d %[[X]], %[[W]] residual %[[R]] scale #derive.param<fill(1.0) : [4]> shift #derive.param<identity("b") : [4]> : (tensor<?x4x4x4xf32>, tensor<4x4x1x1xf32>, tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32>
// INFER-NEXT:    %[[B:.*]] = graph.fused_conv2d %[[X]], %[[W]] residual %[[R]] scale #derive.param<fill(1.0) : [4]> shift #derive.param<fill(0.0) : [4]> : (tensor<?x4x4x4xf32>, tensor<4x4x1x1xf32>, tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32>
// INFER-NEXT:    func.return %[[A]], %[[B]]
// TRAIN:         graph.conv2d %[[X]], %[[W]], %{{.*}} :
// TRAIN-NEXT:    graph.add
// TRAIN-NEXT:    graph.conv2d %[[X]], %[[W]] :
// TRAIN-NEXT:    graph.add
// TRAIN-NOT:     graph.fused_conv2d
func.func @bias_or_nothing_then_residual(%x: tensor<?x4x4x4xf32>) -> (tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>) {
  %r = graph.relu %x : tensor<?x4x4x4xf32>
  %w = graph.param "w" : tensor<4x4x1x1xf32>
  %bias = graph.param "b" : tensor<4xf32>
  %c = graph.conv2d %x, %w, %bias : (tensor<?x4x4x4xf32>, tensor<4x4x1x1xf32>, tensor<4xf32>) -> tensor<?x4x4x4xf32>
  %y = graph.add %c, %r : (tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32>
  %d = graph.conv2d %x, %w : (tensor<?x4x4x4xf32>, tensor<4x4x1x1xf32>) -> tensor<?x4x4x4xf32>
  %z = graph.add %r, %d : (tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32>
  func.return %y, %z : tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>
}

// -----

// Two bottlenecks in a row, as in YOLOv8's C2f (n=2): the second's residual is
// the first's fused op, which comes before the second's convolutions.
// CHECK-LABEL: func.func @two_bottlenecks
// CHECK-SAME:    (%[[X:.*]]: tensor<?x4x4x4xf32>)
// INFER:         %[[A:.*]] = graph.fused_conv2d %[[X]], %{{.*}} scale {{.*}} activation silu :
// INFER-NEXT:    %[[S:.*]] = graph.fused_conv2d %[[A]], %{{.*}} residual %[[X]] scale {{.*}} activation silu :
// INFER-NEXT:    %[[B:.*]] = graph.fused_conv2d %[[S]], %{{.*}} scale {{.*}} activation silu :
// INFER-NEXT:    %[[T:.*]] = graph.fused_conv2d %[[B]], %{{.*}} residual %[[S]] scale {{.*}} activation silu :
// INFER-NEXT:    func.return %[[T]]
// TRAIN-COUNT-4: graph.fused_conv2d
// TRAIN-NOT:     residual
func.func @two_bottlenecks(%x: tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32> {
  %w = graph.param "w" : tensor<4x4x1x1xf32>
  %c0 = graph.conv2d %x, %w : (tensor<?x4x4x4xf32>, tensor<4x4x1x1xf32>) -> tensor<?x4x4x4xf32>
  %y0 = graph.silu %c0 : tensor<?x4x4x4xf32>
  %c1 = graph.conv2d %y0, %w : (tensor<?x4x4x4xf32>, tensor<4x4x1x1xf32>) -> tensor<?x4x4x4xf32>
  %y1 = graph.silu %c1 : tensor<?x4x4x4xf32>
  %s = graph.add %x, %y1 : (tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32>
  %c2 = graph.conv2d %s, %w : (tensor<?x4x4x4xf32>, tensor<4x4x1x1xf32>) -> tensor<?x4x4x4xf32>
  %y2 = graph.silu %c2 : tensor<?x4x4x4xf32>
  %c3 = graph.conv2d %y2, %w : (tensor<?x4x4x4xf32>, tensor<4x4x1x1xf32>) -> tensor<?x4x4x4xf32>
  %y3 = graph.silu %c3 : tensor<?x4x4x4xf32>
  %t = graph.add %s, %y3 : (tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>) -> tensor<?x4x4x4xf32>
  func.return %t : tensor<?x4x4x4xf32>
}

// -----

// YOLOv8's detect head after split-bias: conv + bias + SiLU without batch norm,
// and a final conv with a bias and nothing else; both fuse in either mode.
// CHECK-LABEL: func.func @detect_head_convs
// CHECK-NOT:     graph.param "b
// CHECK:         %[[A:.*]] = graph.fused_conv2d %{{.*}}, %{{.*}} padding [1, 1, 1, 1] scale #derive.param<fill(1.0) : [4]> shift #derive.param<identity("b0") : [4]> activation silu : (tensor<?x4x4x4xf32>, tensor<4x4x3x3xf32>) -> tensor<?x4x4x4xf32>
// CHECK-NEXT:    %[[B:.*]] = graph.fused_conv2d %[[A]], %{{.*}} scale #derive.param<fill(1.0) : [6]> shift #derive.param<identity("b1") : [6]> : (tensor<?x4x4x4xf32>, tensor<6x4x1x1xf32>) -> tensor<?x6x4x4xf32>
// CHECK-NEXT:    func.return %[[B]]
func.func @detect_head_convs(%x: tensor<?x4x4x4xf32>) -> tensor<?x6x4x4xf32> {
  %w0 = graph.param "w0" : tensor<4x4x3x3xf32>
  %b0 = graph.param "b0" : tensor<4xf32>
  %w1 = graph.param "w1" : tensor<6x4x1x1xf32>
  %b1 = graph.param "b1" : tensor<6xf32>
  %c0 = graph.conv2d %x, %w0 padding [1, 1, 1, 1] : (tensor<?x4x4x4xf32>, tensor<4x4x3x3xf32>) -> tensor<?x4x4x4xf32>
  %a0 = graph.bias_add %c0, %b0 : (tensor<?x4x4x4xf32>, tensor<4xf32>) -> tensor<?x4x4x4xf32>
  %y0 = graph.silu %a0 : tensor<?x4x4x4xf32>
  %c1 = graph.conv2d %y0, %w1 : (tensor<?x4x4x4xf32>, tensor<6x4x1x1xf32>) -> tensor<?x6x4x4xf32>
  %y1 = graph.bias_add %c1, %b1 : (tensor<?x6x4x4xf32>, tensor<6xf32>) -> tensor<?x6x4x4xf32>
  func.return %y1 : tensor<?x6x4x4xf32>
}

// -----

// LeNet's fully connected layers: linear + relu fuses into one graph.linear
// carrying the activation (in either mode); the last linear, with nothing after
// it, stays as it is. The fused op's location names both sources.
// CHECK-LABEL: func.func @linear_relu
// CHECK:         %[[H:.*]] = graph.linear %{{.*}}, %{{.*}}, %{{.*}} activation relu : (tensor<?x400xf32>, tensor<120x400xf32>, tensor<120xf32>) -> tensor<?x120xf32>
// CHECK-NEXT:    %[[W3:.*]] = graph.param "fc3.weight"
// CHECK-NEXT:    %[[Y:.*]] = graph.linear %[[H]], %[[W3]] : (tensor<?x120xf32>, tensor<10x120xf32>) -> tensor<?x10xf32>
// CHECK-NEXT:    func.return %[[Y]]
func.func @linear_relu(%x: tensor<?x400xf32>) -> tensor<?x10xf32> {
  %w = graph.param "fc1.weight" : tensor<120x400xf32>
  %b = graph.param "fc1.bias" : tensor<120xf32>
  %l = graph.linear %x, %w, %b : (tensor<?x400xf32>, tensor<120x400xf32>, tensor<120xf32>) -> tensor<?x120xf32>
  %h = graph.relu %l : tensor<?x120xf32>
  %w3 = graph.param "fc3.weight" : tensor<10x120xf32>
  %y = graph.linear %h, %w3 : (tensor<?x120xf32>, tensor<10x120xf32>) -> tensor<?x10xf32>
  func.return %y : tensor<?x10xf32>
}

// -----

// A bias-less rank-2 linear absorbs a graph.bias_add of a graph.param as its
// bias operand, then the activation; the rank-3 one takes only the activation.
// CHECK-LABEL: func.func @linear_bias_add_sigmoid
// CHECK-SAME:    (%[[X:.*]]: tensor<?x16xf32>, %[[V:.*]]: tensor<?x3x16xf32>)
// CHECK:         %[[W:.*]] = graph.param "w"
// CHECK-NEXT:    %[[B:.*]] = graph.param "b"
// CHECK-NEXT:    %[[Y:.*]] = graph.linear %[[X]], %[[W]], %[[B]] activation sigmoid : (tensor<?x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT:    %[[Z:.*]] = graph.linear %[[V]], %[[W]] activation tanh : (tensor<?x3x16xf32>, tensor<8x16xf32>) -> tensor<?x3x8xf32>
// CHECK-NEXT:    func.return %[[Y]], %[[Z]]
func.func @linear_bias_add_sigmoid(%x: tensor<?x16xf32>, %v: tensor<?x3x16xf32>) -> (tensor<?x8xf32>, tensor<?x3x8xf32>) {
  %w = graph.param "w" : tensor<8x16xf32>
  %b = graph.param "b" : tensor<8xf32>
  %l = graph.linear %x, %w : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
  %a = graph.bias_add %l, %b : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %y = graph.sigmoid %a : tensor<?x8xf32>
  %m = graph.linear %v, %w : (tensor<?x3x16xf32>, tensor<8x16xf32>) -> tensor<?x3x8xf32>
  %z = graph.tanh %m : tensor<?x3x8xf32>
  func.return %y, %z : tensor<?x8xf32>, tensor<?x3x8xf32>
}
