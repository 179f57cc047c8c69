// RUN: teeny-opt %s --split-input-file --verify-diagnostics

// One case per verifier message of kernel.slice, kernel.concat and #kernel.batch_stride.

func.func @slice_outside(%x: tensor<?x32x8x8xf32>) {
  // expected-error@+1 {{channels [24, 40) are not inside the source's 32}}
  %b = kernel.slice %x start 24 : tensor<?x32x8x8xf32> -> tensor<?x16x8x8xf32, #kernel.batch_stride<2048>>
  func.return
}

// -----

func.func @slice_moves_images(%x: tensor<?x32x8x8xf32>) {
  // expected-error@+1 {{the result's batch stride 1024 must be the source's 2048 (a slice does not move images)}}
  %b = kernel.slice %x start 0 : tensor<?x32x8x8xf32> -> tensor<?x16x8x8xf32>
  func.return
}

// -----

func.func @slice_other_dim(%x: tensor<?x32x8x8xf32>) {
  // expected-error@+1 {{a slice keeps every dimension but 1}}
  %b = kernel.slice %x start 0 : tensor<?x32x8x8xf32> -> tensor<?x32x4x8xf32, #kernel.batch_stride<2048>>
  func.return
}

// -----

func.func @stride_below_image(%x: tensor<?x32x8x8xf32>) {
  // expected-error@+1 {{the result must be an f32 tensor of rank >= 2}}
  %b = kernel.slice %x start 0 : tensor<?x32x8x8xf32> -> tensor<?x16x8x8xf32, #kernel.batch_stride<100>>
  func.return
}

// -----

// expected-error@+1 {{a batch stride must be in 1..2**31-1}}
func.func @stride_zero(%x: tensor<?x32x8x8xf32, #kernel.batch_stride<0>>) {
  func.return
}

// -----

func.func @concat_of_argument(%x: tensor<?x16x8x8xf32, #kernel.batch_stride<2048>>) {
  // expected-error@+1 {{operand #0 must be the result of a kernel.launch (the launch writes it in place)}}
  %c = kernel.concat %x, %x : (tensor<?x16x8x8xf32, #kernel.batch_stride<2048>>, tensor<?x16x8x8xf32, #kernel.batch_stride<2048>>) -> tensor<?x32x8x8xf32>
  func.return
}

// -----

func.func @concat_stride(%x: tensor<?x16x8x8xf32>) {
  // expected-error@+1 {{operand #0 has batch stride 1024, but it lives in the result's buffer, whose batch stride is 2048}}
  %c = kernel.concat %x, %x : (tensor<?x16x8x8xf32>, tensor<?x16x8x8xf32>) -> tensor<?x32x8x8xf32>
  func.return
}

// -----

func.func @concat_channels(%x: tensor<?x16x8x8xf32, #kernel.batch_stride<3072>>) {
  // expected-error@+1 {{does not match the result tensor<?x48x4x16xf32> on every dimension but 1}}
  %c = kernel.concat %x : (tensor<?x16x8x8xf32, #kernel.batch_stride<3072>>) -> tensor<?x48x4x16xf32>
  func.return
}

// -----

func.func @reshape_batch(%x: tensor<2x16x5x5xf32>) {
  // expected-error@+1 {{a reshape view keeps dimension 0 (the batch)}}
  %f = kernel.reshape %x : tensor<2x16x5x5xf32> -> tensor<32x5x5xf32>
  func.return
}

// -----

func.func @reshape_count(%x: tensor<?x16x5x5xf32>) {
  // expected-error@+1 {{an image of tensor<?x16x5x5xf32> holds 400 elements, one of tensor<?x399xf32> 399}}
  %f = kernel.reshape %x : tensor<?x16x5x5xf32> -> tensor<?x399xf32>
  func.return
}

// -----

func.func @reshape_stride(%x: tensor<?x4x5x5xf32, #kernel.batch_stride<400>>) {
  // expected-error@+1 {{the result's batch stride 100 must be the source's 400 (a reshape does not move images)}}
  %f = kernel.reshape %x : tensor<?x4x5x5xf32, #kernel.batch_stride<400>> -> tensor<?x100xf32>
  func.return
}
