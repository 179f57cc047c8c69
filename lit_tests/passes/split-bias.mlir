// RUN: teeny-opt %s --split-input-file -p split-bias | filecheck %s
// RUN: teeny-opt %s --split-input-file -p 'func.func(split-bias)' | filecheck %s

// CHECK-LABEL: func.func @conv_with_bias
// CHECK-SAME:    (%[[X:.*]]: tensor<?x3x8x8xf32>)
// CHECK:         %[[W:.*]] = graph.param "conv.weight"
// CHECK:         %[[B:.*]] = graph.param "conv.bias"
// CHECK:         %[[C:.*]] = graph.conv2d %[[X]], %[[W]] strides [2, 2] padding [1, 1, 1, 1] : (tensor<?x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<?x16x4x4xf32>
// CHECK-NEXT:    %[[Y:.*]] = graph.bias_add %[[C]], %[[B]] : (tensor<?x16x4x4xf32>, tensor<16xf32>) -> tensor<?x16x4x4xf32>
// CHECK-NEXT:    func.return %[[Y]]
func.func @conv_with_bias(%x: tensor<?x3x8x8xf32>) -> tensor<?x16x4x4xf32> {
  %w = graph.param "conv.weight" : tensor<16x3x3x3xf32>
  %b = graph.param "conv.bias" : tensor<16xf32>
  %y = graph.conv2d %x, %w, %b strides [2, 2] padding [1, 1, 1, 1] : (tensor<?x3x8x8xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<?x16x4x4xf32>
  func.return %y : tensor<?x16x4x4xf32>
}

// -----

// Every option and discardable attribute stays on the convolution; any producer of
// the bias will do (split-bias needs no weight name).
// CHECK-LABEL: func.func @options_and_attributes_kept
// CHECK-SAME:    (%[[X:.*]]: tensor<1x4x5x5xf32>, %[[B:.*]]: tensor<6xf32>)
// CHECK:         %[[C:.*]] = graph.conv2d %[[X]], %{{.*}} padding [0, 1, 0, 1] dilation [1, 2] groups 2 {note = "kept"} : (tensor<1x4x5x5xf32>, tensor<6x2x1x3xf32>) -> tensor<1x6x5x3xf32>
// CHECK-NEXT:    %[[Y:.*]] = graph.bias_add %[[C]], %[[B]]
// CHECK-NEXT:    func.return %[[Y]]
func.func @options_and_attributes_kept(%x: tensor<1x4x5x5xf32>, %b: tensor<6xf32>) -> tensor<1x6x5x3xf32> {
  %w = graph.param "w" : tensor<6x2x1x3xf32>
  %y = graph.conv2d %x, %w, %b padding [0, 1, 0, 1] dilation [1, 2] groups 2 {note = "kept"} : (tensor<1x4x5x5xf32>, tensor<6x2x1x3xf32>, tensor<6xf32>) -> tensor<1x6x5x3xf32>
  func.return %y : tensor<1x6x5x3xf32>
}

// -----

// Every user of the old result reads the bias_add.
// CHECK-LABEL: func.func @two_users
// CHECK:         %[[C:.*]] = graph.conv2d
// CHECK-NEXT:    %[[Y:.*]] = graph.bias_add %[[C]], %{{.*}}
// CHECK-NEXT:    %[[S:.*]] = graph.silu %[[Y]]
// CHECK-NEXT:    func.return %[[Y]], %[[S]]
func.func @two_users(%x: tensor<?x2x4x4xf32>) -> (tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>) {
  %w = graph.param "w" : tensor<4x2x1x1xf32>
  %b = graph.param "b" : tensor<4xf32>
  %y = graph.conv2d %x, %w, %b : (tensor<?x2x4x4xf32>, tensor<4x2x1x1xf32>, tensor<4xf32>) -> tensor<?x4x4x4xf32>
  %s = graph.silu %y : tensor<?x4x4x4xf32>
  func.return %y, %s : tensor<?x4x4x4xf32>, tensor<?x4x4x4xf32>
}

// -----

// Does not apply: a convolution without a bias.
// CHECK-LABEL: func.func @conv_without_bias
// CHECK:         graph.conv2d
// CHECK-NOT:     graph.bias_add
func.func @conv_without_bias(%x: tensor<?x2x4x4xf32>) -> tensor<?x4x4x4xf32> {
  %w = graph.param "w" : tensor<4x2x1x1xf32>
  %y = graph.conv2d %x, %w : (tensor<?x2x4x4xf32>, tensor<4x2x1x1xf32>) -> tensor<?x4x4x4xf32>
  func.return %y : tensor<?x4x4x4xf32>
}

// -----

// Does not apply: a bias_add written by hand stays as it is.
// CHECK-LABEL: func.func @explicit_bias_add
// CHECK:         %[[C:.*]] = graph.conv2d
// CHECK-NEXT:    graph.bias_add %[[C]]
// CHECK-NOT:     graph.bias_add
func.func @explicit_bias_add(%x: tensor<?x2x4x4xf32>) -> tensor<?x4x4x4xf32> {
  %w = graph.param "w" : tensor<4x2x1x1xf32>
  %b = graph.param "b" : tensor<4xf32>
  %c = graph.conv2d %x, %w : (tensor<?x2x4x4xf32>, tensor<4x2x1x1xf32>) -> tensor<?x4x4x4xf32>
  %y = graph.bias_add %c, %b : (tensor<?x4x4x4xf32>, tensor<4xf32>) -> tensor<?x4x4x4xf32>
  func.return %y : tensor<?x4x4x4xf32>
}
