// RUN: teeny-opt %s --split-input-file --verify-diagnostics

func.func @concat_no_input() {
  // expected-error@+1 {{expected at least 1 input}}
  %y = "graph.concat"() <{axis = 0 : i64}> : () -> tensor<4xf32>
  func.return
}

// -----

func.func @concat_rank_zero(%a: tensor<f32>) {
  // expected-error@+1 {{expected input 0 of rank >= 1, got rank 0}}
  %y = graph.concat %a axis 0 : (tensor<f32>) -> tensor<f32>
  func.return
}

// -----

func.func @concat_dtype(%a: tensor<?x4xf32>, %b: tensor<?x4xi32>) {
  // expected-error@+1 {{unsupported dtype i32 for input 1: graph ops take f32 tensors}}
  %y = graph.concat %a, %b axis 1 : (tensor<?x4xf32>, tensor<?x4xi32>) -> tensor<?x8xf32>
  func.return
}

// -----

func.func @concat_rank_mismatch(%a: tensor<?x4xf32>, %b: tensor<?x4x1xf32>) {
  // expected-error@+1 {{expected every input to have rank 2 (input 0's), input 1 has rank 3}}
  %y = graph.concat %a, %b axis 1 : (tensor<?x4xf32>, tensor<?x4x1xf32>) -> tensor<?x8xf32>
  func.return
}

// -----

func.func @concat_axis_out_of_range(%a: tensor<?x16x8x8xf32>) {
  // expected-error@+1 {{expected axis in [0, 4), got 4}}
  %y = graph.concat %a axis 4 : (tensor<?x16x8x8xf32>) -> tensor<?x16x8x8xf32>
  func.return
}

// -----

func.func @concat_negative_axis(%a: tensor<?x16x8x8xf32>) {
  // expected-error@+1 {{expected axis in [0, 4), got -1}}
  %y = graph.concat %a axis -1 : (tensor<?x16x8x8xf32>) -> tensor<?x16x8x8xf32>
  func.return
}

// -----

func.func @concat_dynamic_batch_axis(%a: tensor<?x16x8x8xf32>) {
  // expected-error@+1 {{cannot concatenate along the dynamic batch dimension 0}}
  %y = graph.concat %a, %a axis 0 : (tensor<?x16x8x8xf32>, tensor<?x16x8x8xf32>) -> tensor<?x16x8x8xf32>
  func.return
}

// -----

func.func @concat_dims_disagree(%a: tensor<?x16x8x8xf32>, %b: tensor<?x16x8x4xf32>) {
  // expected-error@+1 {{input 1 has shape [?, 16, 8, 4], input 0 [?, 16, 8, 8]: dimensions other than the axis (1) must agree, and dimension 3 does not}}
  %y = graph.concat %a, %b axis 1 : (tensor<?x16x8x8xf32>, tensor<?x16x8x4xf32>) -> tensor<?x32x8x8xf32>
  func.return
}

// -----

func.func @concat_batch_disagrees(%a: tensor<?x16x8x8xf32>, %b: tensor<2x16x8x8xf32>) {
  // expected-error@+1 {{input 1 has shape [2, 16, 8, 8], input 0 [?, 16, 8, 8]: dimensions other than the axis (1) must agree, and dimension 0 does not}}
  %y = graph.concat %a, %b axis 1 : (tensor<?x16x8x8xf32>, tensor<2x16x8x8xf32>) -> tensor<?x32x8x8xf32>
  func.return
}

// -----

func.func @concat_result_type(%a: tensor<?x16x8x8xf32>) {
  // expected-error@+1 {{expected result type tensor<?x32x8x8xf32>, got tensor<?x16x8x8xf32>}}
  %y = graph.concat %a, %a axis 1 : (tensor<?x16x8x8xf32>, tensor<?x16x8x8xf32>) -> tensor<?x16x8x8xf32>
  func.return
}

// -----

func.func @concat_missing_axis(%a: tensor<?x16x8x8xf32>) {
  // expected-error@+1 {{expected the 'axis' option of graph.concat}}
  %y = graph.concat %a : (tensor<?x16x8x8xf32>) -> tensor<?x16x8x8xf32>
  func.return
}

// -----

func.func @concat_axis_twice(%a: tensor<?x16x8x8xf32>) {
  // expected-error@+1 {{'axis' is given more than once}}
  %y = graph.concat %a axis 1 axis 1 : (tensor<?x16x8x8xf32>) -> tensor<?x16x8x8xf32>
  func.return
}

// -----

func.func @split_sizes_sum(%x: tensor<?x32x8x8xf32>) {
  // expected-error@+1 {{expected sizes to sum to 32 (dimension 1 of the input [?, 32, 8, 8]), got [16, 15] summing to 31}}
  %a, %b = graph.split %x axis 1 sizes [16, 15] : (tensor<?x32x8x8xf32>) -> (tensor<?x16x8x8xf32>, tensor<?x15x8x8xf32>)
  func.return
}

// -----

func.func @split_size_zero(%x: tensor<?x32x8x8xf32>) {
  // expected-error@+1 {{expected sizes >= 1, got [32, 0]}}
  %a, %b = graph.split %x axis 1 sizes [32, 0] : (tensor<?x32x8x8xf32>) -> (tensor<?x32x8x8xf32>, tensor<?x0x8x8xf32>)
  func.return
}

// -----

func.func @split_no_sizes(%x: tensor<?x32x8x8xf32>) {
  // expected-error@+1 {{expected at least 1 size}}
  "graph.split"(%x) <{axis = 1 : i64, sizes = array<i64>}> : (tensor<?x32x8x8xf32>) -> ()
  func.return
}

// -----

func.func @split_result_count(%x: tensor<?x32x8x8xf32>) {
  // expected-error@+1 {{expected 2 results (one per size), got 1}}
  %a = graph.split %x axis 1 sizes [16, 16] : (tensor<?x32x8x8xf32>) -> tensor<?x16x8x8xf32>
  func.return
}

// -----

func.func @split_result_type(%x: tensor<?x32x8x8xf32>) {
  // expected-error@+1 {{expected result type tensor<?x16x8x8xf32>, got tensor<?x16x8x4xf32>}}
  %a, %b = graph.split %x axis 1 sizes [16, 16] : (tensor<?x32x8x8xf32>) -> (tensor<?x16x8x8xf32>, tensor<?x16x8x4xf32>)
  func.return
}

// -----

func.func @split_axis_out_of_range(%x: tensor<?x32x8x8xf32>) {
  // expected-error@+1 {{expected axis in [0, 4), got 7}}
  %a = graph.split %x axis 7 sizes [32] : (tensor<?x32x8x8xf32>) -> tensor<?x32x8x8xf32>
  func.return
}

// -----

func.func @split_dynamic_batch_axis(%x: tensor<?x32x8x8xf32>) {
  // expected-error@+1 {{cannot split along the dynamic batch dimension 0}}
  %a = graph.split %x axis 0 sizes [1] : (tensor<?x32x8x8xf32>) -> tensor<?x32x8x8xf32>
  func.return
}

// -----

func.func @split_missing_sizes(%x: tensor<?x32x8x8xf32>) {
  // expected-error@+1 {{expected the 'sizes' option of graph.split}}
  %a = graph.split %x axis 1 : (tensor<?x32x8x8xf32>) -> tensor<?x32x8x8xf32>
  func.return
}

// -----

func.func @split_input_rank_zero(%x: tensor<f32>) {
  // expected-error@+1 {{expected input of rank >= 1, got rank 0}}
  %a = graph.split %x axis 0 sizes [1] : (tensor<f32>) -> tensor<f32>
  func.return
}

// -----

func.func @reshape_two_inferred(%x: tensor<?x16x5x5xf32>) {
  // expected-error@+1 {{expected at most one -1 (inferred) in shape [0, -1, -1]}}
  %y = graph.reshape %x shape [0, -1, -1] : (tensor<?x16x5x5xf32>) -> tensor<?x20x20xf32>
  func.return
}

// -----

func.func @reshape_bad_entry(%x: tensor<?x16x5x5xf32>) {
  // expected-error@+1 {{invalid shape entry -2 at index 1: expected a size >= 1, 0 (copy the input's size) or -1 (inferred)}}
  %y = graph.reshape %x shape [0, -2] : (tensor<?x16x5x5xf32>) -> tensor<?x400xf32>
  func.return
}

// -----

func.func @reshape_copy_beyond_rank(%x: tensor<?x400xf32>) {
  // expected-error@+1 {{shape entry 0 at index 2 copies input dimension 2, but the input has rank 2}}
  %y = graph.reshape %x shape [0, 20, 0] : (tensor<?x400xf32>) -> tensor<?x20x20xf32>
  func.return
}

// -----

func.func @reshape_folds_batch(%x: tensor<?x16x5x5xf32>) {
  // expected-error@+1 {{expected shape entry 0 to be 0 (keep the dynamic batch), got -1: folding the batch into another dimension is not supported yet}}
  %y = graph.reshape %x shape [-1, 25] : (tensor<?x16x5x5xf32>) -> tensor<?x25xf32>
  func.return
}

// -----

func.func @reshape_element_count(%x: tensor<?x16x5x5xf32>) {
  // expected-error@+1 {{element count mismatch: the input [?, 16, 5, 5] has 400 elements per sample, shape [0, 300] has 300}}
  %y = graph.reshape %x shape [0, 300] : (tensor<?x16x5x5xf32>) -> tensor<?x300xf32>
  func.return
}

// -----

func.func @reshape_element_count_static(%x: tensor<2x3x4xf32>) {
  // expected-error@+1 {{element count mismatch: the input [2, 3, 4] has 24 elements, shape [5, 5] has 25}}
  %y = graph.reshape %x shape [5, 5] : (tensor<2x3x4xf32>) -> tensor<5x5xf32>
  func.return
}

// -----

func.func @reshape_cannot_infer(%x: tensor<?x16x5x5xf32>) {
  // expected-error@+1 {{cannot infer the -1 in shape [0, -1, 3]: the input [?, 16, 5, 5] has 400 elements per sample, not a multiple of 3}}
  %y = graph.reshape %x shape [0, -1, 3] : (tensor<?x16x5x5xf32>) -> tensor<?x133x3xf32>
  func.return
}

// -----

func.func @reshape_empty_shape(%x: tensor<?x16x5x5xf32>) {
  // expected-error@+1 {{expected a non-empty shape}}
  %y = graph.reshape %x shape [] : (tensor<?x16x5x5xf32>) -> tensor<f32>
  func.return
}

// -----

func.func @reshape_result_type(%x: tensor<?x16x5x5xf32>) {
  // expected-error@+1 {{expected result type tensor<?x400xf32>, got tensor<?x399xf32>}}
  %y = graph.reshape %x shape [0, -1] : (tensor<?x16x5x5xf32>) -> tensor<?x399xf32>
  func.return
}

// -----

func.func @reshape_missing_shape(%x: tensor<?x16x5x5xf32>) {
  // expected-error@+1 {{expected the 'shape' option of graph.reshape}}
  %y = graph.reshape %x : (tensor<?x16x5x5xf32>) -> tensor<?x400xf32>
  func.return
}

// -----

func.func @flatten_start_after_end(%x: tensor<?x16x5x5xf32>) {
  // expected-error@+1 {{expected start_dim <= end_dim, got 3 > 2}}
  %y = graph.flatten %x start_dim 3 end_dim 2 : (tensor<?x16x5x5xf32>) -> tensor<?x16x5x5xf32>
  func.return
}

// -----

func.func @flatten_start_out_of_range(%x: tensor<?x4xf32>) {
  // expected-error@+1 {{expected start_dim in [0, 2), got 2}}
  %y = graph.flatten %x start_dim 2 : (tensor<?x4xf32>) -> tensor<?x4xf32>
  func.return
}

// -----

func.func @flatten_end_out_of_range(%x: tensor<?x16x5x5xf32>) {
  // expected-error@+1 {{expected end_dim in [0, 4), got -1}}
  %y = graph.flatten %x end_dim -1 : (tensor<?x16x5x5xf32>) -> tensor<?x400xf32>
  func.return
}

// -----

func.func @flatten_dynamic_batch(%x: tensor<?x16x5x5xf32>) {
  // expected-error@+1 {{cannot flatten the dynamic batch dimension 0 (start_dim 0): folding the batch into another dimension is not supported yet}}
  %y = graph.flatten %x start_dim 0 : (tensor<?x16x5x5xf32>) -> tensor<?xf32>
  func.return
}

// -----

func.func @flatten_rank_one(%x: tensor<?xf32>) {
  // expected-error@+1 {{expected start_dim in [0, 1), got 1}}
  %y = graph.flatten %x : (tensor<?xf32>) -> tensor<?xf32>
  func.return
}

// -----

func.func @flatten_result_type(%x: tensor<?x16x5x5xf32>) {
  // expected-error@+1 {{expected result type tensor<?x400xf32>, got tensor<?x16x25xf32>}}
  %y = graph.flatten %x : (tensor<?x16x5x5xf32>) -> tensor<?x16x25xf32>
  func.return
}

// -----

func.func @transpose_repeated(%x: tensor<?x16x8x4xf32>) {
  // expected-error@+1 {{expected perm to be a permutation of [0, 4) (the input's rank), got [0, 1, 1, 3]}}
  %y = graph.transpose %x perm [0, 1, 1, 3] : (tensor<?x16x8x4xf32>) -> tensor<?x16x8x4xf32>
  func.return
}

// -----

func.func @transpose_short(%x: tensor<?x16x8x4xf32>) {
  // expected-error@+1 {{expected perm to be a permutation of [0, 4) (the input's rank), got [0, 2, 1]}}
  %y = graph.transpose %x perm [0, 2, 1] : (tensor<?x16x8x4xf32>) -> tensor<?x16x8x4xf32>
  func.return
}

// -----

func.func @transpose_moves_batch(%x: tensor<?x16x8x4xf32>) {
  // expected-error@+1 {{cannot move the dynamic batch dimension: expected perm[0] = 0, got 1}}
  %y = graph.transpose %x perm [1, 0, 2, 3] : (tensor<?x16x8x4xf32>) -> tensor<16x?x8x4xf32>
  func.return
}

// -----

func.func @transpose_result_type(%x: tensor<?x16x8x4xf32>) {
  // expected-error@+1 {{expected result type tensor<?x8x4x16xf32>, got tensor<?x16x8x4xf32>}}
  %y = graph.transpose %x perm [0, 2, 3, 1] : (tensor<?x16x8x4xf32>) -> tensor<?x16x8x4xf32>
  func.return
}

// -----

func.func @transpose_dynamic_elsewhere(%x: tensor<4x?xf32>) {
  // expected-error@+1 {{input has a dynamic dimension 1: only the batch dimension (0) may be dynamic}}
  %y = graph.transpose %x perm [1, 0] : (tensor<4x?xf32>) -> tensor<?x4xf32>
  func.return
}

// -----

func.func @transpose_missing_perm(%x: tensor<?x16x8x4xf32>) {
  // expected-error@+1 {{expected the 'perm' option of graph.transpose}}
  %y = graph.transpose %x : (tensor<?x16x8x4xf32>) -> tensor<?x16x8x4xf32>
  func.return
}
