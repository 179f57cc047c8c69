// RUN: teeny-opt %s | teeny-opt | filecheck %s
// RUN: teeny-opt %s --mlir-print-op-generic | teeny-opt | filecheck %s

// Views of the kernel dialect: a channel slice keeps its source's batch stride;
// a concat names the buffer its operands' launches write into.

// CHECK-LABEL: func.func @slice
// CHECK: kernel.slice %{{.*}} start 16 : tensor<?x32x8x8xf32> -> tensor<?x16x8x8xf32, #kernel.batch_stride<2048>>
// CHECK: kernel.slice %{{.*}} start 0 : tensor<?x16x8x8xf32, #kernel.batch_stride<2048>> -> tensor<?x4x8x8xf32, #kernel.batch_stride<2048>>
func.func @slice(%x: tensor<?x32x8x8xf32>) -> tensor<?x32x8x8xf32> {
  %b = kernel.slice %x start 16 : tensor<?x32x8x8xf32> -> tensor<?x16x8x8xf32, #kernel.batch_stride<2048>>
  %c = kernel.slice %b start 0 : tensor<?x16x8x8xf32, #kernel.batch_stride<2048>> -> tensor<?x4x8x8xf32, #kernel.batch_stride<2048>>
  func.return %x : tensor<?x32x8x8xf32>
}

// CHECK-LABEL: func.func @reshape
// CHECK: kernel.reshape %{{.*}} : tensor<?x16x5x5xf32> -> tensor<?x400xf32>
// CHECK: kernel.reshape %{{.*}} : tensor<?x4x5x5xf32, #kernel.batch_stride<400>> -> tensor<?x100xf32, #kernel.batch_stride<400>>
func.func @reshape(%x: tensor<?x16x5x5xf32>) -> tensor<?x400xf32> {
  %f = kernel.reshape %x : tensor<?x16x5x5xf32> -> tensor<?x400xf32>
  %s = kernel.slice %x start 4 : tensor<?x16x5x5xf32> -> tensor<?x4x5x5xf32, #kernel.batch_stride<400>>
  %g = kernel.reshape %s : tensor<?x4x5x5xf32, #kernel.batch_stride<400>> -> tensor<?x100xf32, #kernel.batch_stride<400>>
  func.return %f : tensor<?x400xf32>
}
