// RUN: teeny-opt %s --split-input-file -p fuse-attention | filecheck %s
// RUN: teeny-opt %s --split-input-file -p 'func.func(fuse-attention)' | filecheck %s

// PyTorch's math form: softmax(q @ k^T * scale) @ v, SDPA's layout.
// CHECK-LABEL: func.func @sdpa_layout
// CHECK-SAME:    (%[[Q:.*]]: tensor<?x2x7x16xf32>, %[[K:.*]]: tensor<?x2x9x16xf32>, %[[V:.*]]: tensor<?x2x9x8xf32>)
// CHECK-NEXT:    %[[O:.*]], %{{.*}} = graph.attention %[[Q]], %[[K]], %[[V]] scale 2.500000e-01 : (tensor<?x2x7x16xf32>, tensor<?x2x9x16xf32>, tensor<?x2x9x8xf32>) -> (tensor<?x2x7x8xf32>, tensor<?x2x7xf32>)
// CHECK-NEXT:    func.return %[[O]]
func.func @sdpa_layout(%q: tensor<?x2x7x16xf32>, %k: tensor<?x2x9x16xf32>, %v: tensor<?x2x9x8xf32>) -> tensor<?x2x7x8xf32> {
  %kt = graph.transpose %k perm [0, 1, 3, 2] : (tensor<?x2x9x16xf32>) -> tensor<?x2x16x9xf32>
  %s = graph.matmul %q, %kt : (tensor<?x2x7x16xf32>, tensor<?x2x16x9xf32>) -> tensor<?x2x7x9xf32>
  %c = graph.constant dense<2.500000e-01> : tensor<1xf32>
  %t = graph.mul %s, %c : (tensor<?x2x7x9xf32>, tensor<1xf32>) -> tensor<?x2x7x9xf32>
  %p = graph.softmax %t axis 3 : (tensor<?x2x7x9xf32>) -> tensor<?x2x7x9xf32>
  %o = graph.matmul %p, %v : (tensor<?x2x7x9xf32>, tensor<?x2x9x8xf32>) -> tensor<?x2x7x8xf32>
  func.return %o : tensor<?x2x7x8xf32>
}

// -----

// YOLO11's C2PSA: features first, the scale on q, v @ p^T; every tensor is read
// and written in place (all four flags), no transpose survives.
// CHECK-LABEL: func.func @c2psa
// CHECK-SAME:    (%[[Q:.*]]: tensor<?x2x32x4xf32>, %[[K:.*]]: tensor<?x2x32x4xf32>, %[[V:.*]]: tensor<?x2x64x4xf32>)
// CHECK-NEXT:    %[[O:.*]], %{{.*}} = graph.attention %[[Q]], %[[K]], %[[V]] scale 0.1767766922712326 transposed [1, 1, 1, 1]
// CHECK-NEXT:    func.return %[[O]]
func.func @c2psa(%q: tensor<?x2x32x4xf32>, %k: tensor<?x2x32x4xf32>, %v: tensor<?x2x64x4xf32>) -> tensor<?x2x64x4xf32> {
  %c = graph.constant dense<0.176776692> : tensor<1xf32>
  %qs = graph.mul %q, %c : (tensor<?x2x32x4xf32>, tensor<1xf32>) -> tensor<?x2x32x4xf32>
  %qt = graph.transpose %qs perm [0, 1, 3, 2] : (tensor<?x2x32x4xf32>) -> tensor<?x2x4x32xf32>
  %s = graph.matmul %qt, %k : (tensor<?x2x4x32xf32>, tensor<?x2x32x4xf32>) -> tensor<?x2x4x4xf32>
  %p = graph.softmax %s axis 3 : (tensor<?x2x4x4xf32>) -> tensor<?x2x4x4xf32>
  %pt = graph.transpose %p perm [0, 1, 3, 2] : (tensor<?x2x4x4xf32>) -> tensor<?x2x4x4xf32>
  %o = graph.matmul %v, %pt : (tensor<?x2x64x4xf32>, tensor<?x2x4x4xf32>) -> tensor<?x2x64x4xf32>
  func.return %o : tensor<?x2x64x4xf32>
}

// -----

// A scale divided in, and an imported attention's transposes taken in.
// CHECK-LABEL: func.func @div_and_transposes
// CHECK-SAME:    (%[[Q:.*]]: tensor<3x5x8xf32>, %[[K:.*]]: tensor<3x8x6xf32>, %[[V:.*]]: tensor<3x6x4xf32>)
// CHECK-NEXT:    %[[O:.*]], %{{.*}} = graph.attention %[[Q]], %[[K]], %[[V]] scale 5.000000e-01 transposed [0, 1, 0, 0]
// CHECK-NEXT:    %[[A:.*]], %{{.*}} = graph.attention %[[Q]], %[[K]], %[[V]] scale 1.000000e+00 transposed [0, 1, 0, 1]
// CHECK-NEXT:    func.return %[[O]], %[[A]]
func.func @div_and_transposes(%q: tensor<3x5x8xf32>, %k: tensor<3x8x6xf32>, %v: tensor<3x6x4xf32>) -> (tensor<3x5x4xf32>, tensor<3x4x5xf32>) {
  %s = graph.matmul %q, %k : (tensor<3x5x8xf32>, tensor<3x8x6xf32>) -> tensor<3x5x6xf32>
  %c = graph.constant dense<2.000000e+00> : tensor<1xf32>
  %t = graph.div %s, %c : (tensor<3x5x6xf32>, tensor<1xf32>) -> tensor<3x5x6xf32>
  %p = graph.softmax %t axis 2 : (tensor<3x5x6xf32>) -> tensor<3x5x6xf32>
  %o = graph.matmul %p, %v : (tensor<3x5x6xf32>, tensor<3x6x4xf32>) -> tensor<3x5x4xf32>
  %kt = graph.transpose %k perm [0, 2, 1] : (tensor<3x8x6xf32>) -> tensor<3x6x8xf32>
  %a, %lse = graph.attention %q, %kt, %v scale 1.0 : (tensor<3x5x8xf32>, tensor<3x6x8xf32>, tensor<3x6x4xf32>) -> (tensor<3x5x4xf32>, tensor<3x5xf32>)
  %at = graph.transpose %a perm [0, 2, 1] : (tensor<3x5x4xf32>) -> tensor<3x4x5xf32>
  func.return %o, %at : tensor<3x5x4xf32>, tensor<3x4x5xf32>
}
