// RUN: teeny-opt %s --split-input-file --verify-diagnostics

func.func @slice_starts_count(%x: tensor<4x5xf32>) {
  // expected-error@+1 {{expected 2 starts (one per input dimension), got 1}}
  %y = graph.slice %x starts [0] : (tensor<4x5xf32>) -> tensor<4x5xf32>
  func.return
}

// -----

func.func @slice_steps_count(%x: tensor<4x5xf32>) {
  // expected-error@+1 {{expected 2 steps (one per input dimension), got 3}}
  %y = graph.slice %x starts [0, 0] steps [1, 1, 1] : (tensor<4x5xf32>) -> tensor<4x5xf32>
  func.return
}

// -----

func.func @slice_scalar(%x: tensor<f32>) {
  // expected-error@+1 {{expected an input of rank >= 1: a scalar cannot be sliced}}
  %y = graph.slice %x starts [] : (tensor<f32>) -> tensor<f32>
  func.return
}

// -----

func.func @slice_rank(%x: tensor<4x5xf32>) {
  // expected-error@+1 {{expected a result of rank 2, got [4]}}
  %y = graph.slice %x starts [0, 0] : (tensor<4x5xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @slice_step_zero(%x: tensor<4x5xf32>) {
  // expected-error@+1 {{step 0 at dimension 1}}
  %y = graph.slice %x starts [0, 0] steps [1, 0] : (tensor<4x5xf32>) -> tensor<4x1xf32>
  func.return
}

// -----

func.func @slice_batch(%x: tensor<?x5xf32>) {
  // expected-error@+1 {{the dynamic batch (dimension 0) cannot be sliced: expected start 0, step 1 and size ? for it, got start 1, step 1 and size ? (input [?, 5])}}
  %y = graph.slice %x starts [1, 0] : (tensor<?x5xf32>) -> tensor<?x5xf32>
  func.return
}

// -----

func.func @slice_start(%x: tensor<4x5xf32>) {
  // expected-error@+1 {{start 5 at dimension 1 is outside [0, 5) (starts are normalised: the importer clamps them)}}
  %y = graph.slice %x starts [0, 5] : (tensor<4x5xf32>) -> tensor<4x1xf32>
  func.return
}

// -----

func.func @slice_reach(%x: tensor<4x5xf32>) {
  // expected-error@+1 {{dimension 1: 3 elements from 1 in steps of -1 reach index -1, outside [0, 5)}}
  %y = graph.slice %x starts [0, 1] steps [1, -1] : (tensor<4x5xf32>) -> tensor<4x3xf32>
  func.return
}

// -----

func.func @pad_count(%x: tensor<4x5xf32>) {
  // expected-error@+1 {{expected 4 values for pads [begin_0, ..., begin_{r-1}, end_0, ..., end_{r-1}], got 2}}
  %y = graph.pad %x pads [1, 1] : (tensor<4x5xf32>) -> tensor<6x5xf32>
  func.return
}

// -----

func.func @pad_scalar(%x: tensor<f32>) {
  // expected-error@+1 {{expected an input of rank >= 1: a scalar cannot be padded}}
  %y = graph.pad %x pads [] : (tensor<f32>) -> tensor<f32>
  func.return
}

// -----

func.func @pad_mode(%x: tensor<4xf32>) {
  // expected-error@+1 {{expected mode to be one of constant, reflect, edge}}
  %y = graph.pad %x pads [1, 1] mode wrap : (tensor<4xf32>) -> tensor<6xf32>
  func.return
}

// -----

func.func @pad_interior_count(%x: tensor<4xf32>) {
  // expected-error@+1 {{expected 1 values for interior, got 2}}
  %y = graph.pad %x pads [1, 1] interior [1, 1] : (tensor<4xf32>) -> tensor<6xf32>
  func.return
}

// -----

func.func @pad_interior_negative(%x: tensor<4xf32>) {
  // expected-error@+1 {{interior -1 at dimension 0 is negative}}
  %y = graph.pad %x pads [1, 1] interior [-1] : (tensor<4xf32>) -> tensor<6xf32>
  func.return
}

// -----

func.func @pad_interior_mode(%x: tensor<4xf32>) {
  // expected-error@+1 {{interior padding needs constant mode, not edge}}
  %y = graph.pad %x pads [1, 1] mode edge interior [1] : (tensor<4xf32>) -> tensor<9xf32>
  func.return
}

// -----

func.func @pad_value_mode(%x: tensor<4xf32>) {
  // expected-error@+1 {{a pad value is only used in constant mode, not reflect}}
  %y = graph.pad %x pads [1, 1] mode reflect value 1.0 : (tensor<4xf32>) -> tensor<6xf32>
  func.return
}

// -----

func.func @pad_batch(%x: tensor<?x4xf32>) {
  // expected-error@+1 {{the dynamic batch (dimension 0) cannot be padded: got begin 1, end 0 and interior 0 for it}}
  %y = graph.pad %x pads [1, 0, 0, 0] : (tensor<?x4xf32>) -> tensor<?x4xf32>
  func.return
}

// -----

func.func @pad_empty(%x: tensor<4xf32>) {
  // expected-error@+1 {{dimension 0 of [4]: pads -2 and -2 leave 0 elements (at least 1 is needed)}}
  %y = graph.pad %x pads [-2, -2] : (tensor<4xf32>) -> tensor<1xf32>
  func.return
}

// -----

func.func @pad_result(%x: tensor<4xf32>) {
  // expected-error@+1 {{expected result type tensor<6xf32>, got tensor<5xf32>}}
  %y = graph.pad %x pads [1, 1] : (tensor<4xf32>) -> tensor<5xf32>
  func.return
}
