// RUN: teeny-opt %s -p 'apply-optimizer{kind=sgd lr=0.05 momentum=0.9 weight-decay=5e-4}' | filecheck %s --check-prefix=SGD
// RUN: teeny-opt %s -p 'apply-optimizer{lr=0.1}' | filecheck %s --check-prefix=PLAIN
// RUN: teeny-opt %s -p 'apply-optimizer{kind=adamw lr=0.001 betas=0.8,0.99 eps=1e-6}' | filecheck %s --check-prefix=ADAMW
// RUN: teeny-opt %s -p 'apply-optimizer{lr=0.1 weight-decay=0.01 decay-all=true}' | filecheck %s --check-prefix=ALL

// The pipeline prints the options that differ from their defaults.
// RUN: teeny-opt %s -p 'apply-optimizer{kind=sgd lr=0.05 momentum=0.9 weight-decay=5e-4}' --dump-pass-pipeline -o /dev/null 2>&1 | filecheck %s --check-prefix=DUMP
// DUMP: {{^}}builtin.module(apply-optimizer{lr=0.05 momentum=0.9 weight-decay=0.0005}){{$}}

// A training @forward after insert-backward: the loss, a model result, a BN
// running statistic and the gradients, found by their teeny.grad attributes.
// Weight decay reaches the conv and linear weights, not the bias or BN gamma.

// SGD-LABEL: func.func @forward
// SGD-SAME:    -> (tensor<f32>, tensor<2x5xf32>, tensor<4xf32> {teeny.running = "bn.running_mean"}, tensor<4x3x3x3xf32> {teeny.grad = "conv.weight"}, tensor<4xf32> {teeny.grad = "bn.weight"}, tensor<5x16xf32> {teeny.grad = "fc.weight"}, tensor<5xf32> {teeny.grad = "fc.bias"},
// SGD-SAME:    tensor<4x3x3x3xf32> {teeny.updated = "conv.weight"}, tensor<4x3x3x3xf32> {teeny.updated = "conv.weight.momentum_buffer"}, tensor<4xf32> {teeny.updated = "bn.weight"}, tensor<4xf32> {teeny.updated = "bn.weight.momentum_buffer"}, tensor<5x16xf32> {teeny.updated = "fc.weight"}, tensor<5x16xf32> {teeny.updated = "fc.weight.momentum_buffer"}, tensor<5xf32> {teeny.updated = "fc.bias"}, tensor<5xf32> {teeny.updated = "fc.bias.momentum_buffer"})
// SGD:         %[[W:.*]] = graph.param "conv.weight" : tensor<4x3x3x3xf32>
// SGD:         %[[G:.*]] = graph.param "bn.weight" : tensor<4xf32>
// SGD:         %[[FW:.*]] = graph.param "fc.weight" : tensor<5x16xf32>
// SGD:         %[[FB:.*]] = graph.param "fc.bias" : tensor<5xf32>
// SGD:         %[[GW:.*]] = graph.sub %[[W]]
// SGD:         %[[BW:.*]] = graph.param "conv.weight.momentum_buffer" zero_default : tensor<4x3x3x3xf32>
// Every op the pass adds is marked {teeny.update}: a training plan's update phase.
// SGD-NEXT:    %[[W2:.*]], %[[BW2:.*]] = graph.sgd_update %[[W]], %[[GW]], %[[BW]] lr 5.000000e-02 momentum 9.000000e-01 weight_decay 5.000000e-04 {teeny.update} : (tensor<4x3x3x3xf32>, tensor<4x3x3x3xf32>, tensor<4x3x3x3xf32>) -> (tensor<4x3x3x3xf32>, tensor<4x3x3x3xf32>)
// SGD-NEXT:    %[[BG:.*]] = graph.param "bn.weight.momentum_buffer" zero_default : tensor<4xf32>
// SGD-NEXT:    %[[G2:.*]], %[[BG2:.*]] = graph.sgd_update %[[G]], %{{.*}}, %[[BG]] lr 5.000000e-02 momentum 9.000000e-01 {teeny.update} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
// SGD-NEXT:    %[[BFW:.*]] = graph.param "fc.weight.momentum_buffer" zero_default
// SGD-NEXT:    %[[FW2:.*]], %[[BFW2:.*]] = graph.sgd_update %[[FW]], %{{.*}}, %[[BFW]] lr 5.000000e-02 momentum 9.000000e-01 weight_decay 5.000000e-04 {teeny.update} :
// SGD-NEXT:    %[[BFB:.*]] = graph.param "fc.bias.momentum_buffer" zero_default
// SGD-NEXT:    %[[FB2:.*]], %[[BFB2:.*]] = graph.sgd_update %[[FB]], %{{.*}}, %[[BFB]] lr 5.000000e-02 momentum 9.000000e-01 {teeny.update} :
// SGD-NEXT:    func.return %{{.*}}, %{{.*}}, %{{.*}}, %[[GW]], %{{.*}}, %{{.*}}, %{{.*}}, %[[W2]], %[[BW2]], %[[G2]], %[[BG2]], %[[FW2]], %[[BFW2]], %[[FB2]], %[[BFB2]] :

// Without momentum SGD keeps no buffer.
// PLAIN-LABEL: func.func @forward
// PLAIN-NOT:     momentum_buffer
// PLAIN:         graph.sgd_update %{{.*}}, %{{.*}} lr 1.000000e-01 {teeny.update} : (tensor<4x3x3x3xf32>, tensor<4x3x3x3xf32>) -> tensor<4x3x3x3xf32>
// PLAIN:         graph.sgd_update %{{.*}}, %{{.*}} lr 1.000000e-01 {teeny.update} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// PLAIN-NOT:     momentum_buffer

// AdamW reads its moments and scalar step count (zeros when the weights lack
// them) and decays the weights by PyTorch's default 1e-2, decoupled.
// ADAMW-LABEL: func.func @forward
// ADAMW-SAME:    tensor<4x3x3x3xf32> {teeny.updated = "conv.weight"}, tensor<4x3x3x3xf32> {teeny.updated = "conv.weight.exp_avg"}, tensor<4x3x3x3xf32> {teeny.updated = "conv.weight.exp_avg_sq"}, tensor<f32> {teeny.updated = "conv.weight.step"}, tensor<4xf32> {teeny.updated = "bn.weight"},
// ADAMW:         %[[M:.*]] = graph.param "conv.weight.exp_avg" zero_default : tensor<4x3x3x3xf32>
// ADAMW-NEXT:    %[[V:.*]] = graph.param "conv.weight.exp_avg_sq" zero_default : tensor<4x3x3x3xf32>
// ADAMW-NEXT:    %[[S:.*]] = graph.param "conv.weight.step" zero_default : tensor<f32>
// ADAMW-NEXT:    %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = graph.adamw_update %{{.*}}, %{{.*}}, %[[M]], %[[V]], %[[S]] lr 1.000000e-03 beta1 8.000000e-01 beta2 9.900000e-01 eps 1.000000e-06 weight_decay 1.000000e-02 {teeny.update} : (tensor<4x3x3x3xf32>, tensor<4x3x3x3xf32>, tensor<4x3x3x3xf32>, tensor<4x3x3x3xf32>, tensor<f32>) -> (tensor<4x3x3x3xf32>, tensor<4x3x3x3xf32>, tensor<4x3x3x3xf32>, tensor<f32>)
// ADAMW:         graph.adamw_update {{.*}} lr 1.000000e-03 beta1 8.000000e-01 beta2 9.900000e-01 eps 1.000000e-06 {teeny.update} : (tensor<4xf32>,

// decay-all: every parameter with a gradient is decayed.
// ALL-LABEL: func.func @forward
// ALL-COUNT-4: graph.sgd_update {{.*}} lr 1.000000e-01 weight_decay 1.000000e-02 {teeny.update} :
// ALL-NOT:     graph.sgd_update
func.func @forward(%x: tensor<2x3x4x4xf32>, %t0: tensor<4x3x3x3xf32>, %t1: tensor<4xf32>, %t2: tensor<5x16xf32>, %t3: tensor<5xf32>) -> (tensor<f32>, tensor<2x5xf32>, tensor<4xf32> {teeny.running = "bn.running_mean"}, tensor<4x3x3x3xf32> {teeny.grad = "conv.weight"}, tensor<4xf32> {teeny.grad = "bn.weight"}, tensor<5x16xf32> {teeny.grad = "fc.weight"}, tensor<5xf32> {teeny.grad = "fc.bias"}) {
  %w = graph.param "conv.weight" : tensor<4x3x3x3xf32>
  %gamma = graph.param "bn.weight" : tensor<4xf32>
  %beta = graph.param "bn.bias" : tensor<4xf32>
  %rm = graph.param "bn.running_mean" : tensor<4xf32>
  %rv = graph.param "bn.running_var" : tensor<4xf32>
  %fw = graph.param "fc.weight" : tensor<5x16xf32>
  %fb = graph.param "fc.bias" : tensor<5xf32>
  %c = graph.conv2d %x, %w : (tensor<2x3x4x4xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x2x2xf32>
  %n = graph.batch_norm %c, %gamma, %beta, %rm, %rv : (tensor<2x4x2x2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x2x2xf32>
  %f = graph.flatten %n : (tensor<2x4x2x2xf32>) -> tensor<2x16xf32>
  %y = graph.linear %f, %fw, %fb : (tensor<2x16xf32>, tensor<5x16xf32>, tensor<5xf32>) -> tensor<2x5xf32>
  %l = graph.reduce_sum %y axes [0, 1] : (tensor<2x5xf32>) -> tensor<f32>
  %g0 = graph.sub %w, %t0 : (tensor<4x3x3x3xf32>, tensor<4x3x3x3xf32>) -> tensor<4x3x3x3xf32>
  %g1 = graph.sub %gamma, %t1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %g2 = graph.sub %fw, %t2 : (tensor<5x16xf32>, tensor<5x16xf32>) -> tensor<5x16xf32>
  %g3 = graph.sub %fb, %t3 : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
  func.return %l, %y, %rm, %g0, %g1, %g2, %g3 : tensor<f32>, tensor<2x5xf32>, tensor<4xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<5x16xf32>, tensor<5xf32>
}
