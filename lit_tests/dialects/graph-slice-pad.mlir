// RUN: teeny-opt %s | teeny-opt | filecheck %s
// RUN: teeny-opt %s --mlir-print-op-generic | teeny-opt | filecheck %s

// graph.slice: a normalised start and step per dimension, the sizes in the
// result type; steps of all 1 are left absent.
// CHECK-LABEL: func.func @slice(
// CHECK:         graph.slice %{{.*}} starts [0, 1, 7] steps [1, 2, -3] : (tensor<?x6x8xf32>) -> tensor<?x3x3xf32>
// CHECK:         graph.slice %{{.*}} starts [2, 0] : (tensor<5x8xf32>) -> tensor<3x8xf32>
func.func @slice(%x: tensor<?x6x8xf32>, %w: tensor<5x8xf32>) -> (tensor<?x3x3xf32>, tensor<3x8xf32>) {
  %y = graph.slice %x starts [0, 1, 7] steps [1, 2, -3] : (tensor<?x6x8xf32>) -> tensor<?x3x3xf32>
  %z = graph.slice %w starts [2, 0] : (tensor<5x8xf32>) -> tensor<3x8xf32>
  func.return %y, %z : tensor<?x3x3xf32>, tensor<3x8xf32>
}

// graph.pad: constant (the default, value 0.0 absent), reflect and edge; negative
// pads crop; interior padding in constant mode.
// CHECK-LABEL: func.func @pad(
// CHECK:         graph.pad %{{.*}} pads [0, 0, 1, 2, 0, 0, 1, -1] value 1.500000e+00 : (tensor<?x3x4x5xf32>) -> tensor<?x3x6x6xf32>
// CHECK:         graph.pad %{{.*}} pads [0, 0, 2, 2, 0, 0, 2, 2] mode reflect : (tensor<?x3x4x5xf32>) -> tensor<?x3x8x9xf32>
// CHECK:         graph.pad %{{.*}} pads [0, 0, 0, 9, 0, 0, 0, 0] mode edge : (tensor<?x3x4x5xf32>) -> tensor<?x3x4x14xf32>
// CHECK:         graph.pad %{{.*}} pads [1, 0] interior [2] : (tensor<3xf32>) -> tensor<8xf32>
func.func @pad(%x: tensor<?x3x4x5xf32>, %v: tensor<3xf32>) -> (tensor<?x3x6x6xf32>, tensor<?x3x8x9xf32>, tensor<?x3x4x14xf32>, tensor<8xf32>) {
  %a = graph.pad %x pads [0, 0, 1, 2, 0, 0, 1, -1] value 1.500000e+00 : (tensor<?x3x4x5xf32>) -> tensor<?x3x6x6xf32>
  %b = graph.pad %x pads [0, 0, 2, 2, 0, 0, 2, 2] mode reflect : (tensor<?x3x4x5xf32>) -> tensor<?x3x8x9xf32>
  %c = graph.pad %x pads [0, 0, 0, 9, 0, 0, 0, 0] mode edge : (tensor<?x3x4x5xf32>) -> tensor<?x3x4x14xf32>
  %d = graph.pad %v pads [1, 0] interior [2] : (tensor<3xf32>) -> tensor<8xf32>
  func.return %a, %b, %c, %d : tensor<?x3x6x6xf32>, tensor<?x3x8x9xf32>, tensor<?x3x4x14xf32>, tensor<8xf32>
}
