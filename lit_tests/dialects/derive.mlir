// RUN: teeny-opt %s | teeny-opt | filecheck %s
// RUN: teeny-opt %s --mlir-print-op-generic | teeny-opt | filecheck %s

// Every derivation kind round-trips; floats print as the shortest text that reads
// back as the same value (always with a '.'), and eps appears only on BN kinds.

// CHECK-LABEL: func.func @kinds
// CHECK-SAME:    id = #derive.param<identity("model.0.conv.bias") : [16]>
// CHECK-SAME:    reshaped = #derive.param<reshape("model.0.conv.weight") : [16, 8]>
// CHECK-SAME:    one = #derive.param<fill(1.0) : [16]>
// CHECK-SAME:    small = #derive.param<fill(-2.5e-07) : [2, 3]>
// CHECK-SAME:    scalar = #derive.param<identity("s") : []>
// CHECK-SAME:    scale = #derive.param<bn_scale("m.bn.weight", "m.bn.running_var") eps 0.001 : [16]>
// CHECK-SAME:    shift = #derive.param<bn_shift("m.bn.weight", "m.bn.bias", "m.bn.running_mean", "m.bn.running_var") eps 1.0e-05 : [16]>
// CHECK-SAME:    shift_bias = #derive.param<bn_shift("g", "b", "m", "v", "m.conv.bias") eps 0.5 : [4]>
func.func @kinds() attributes {
  id = #derive.param<identity("model.0.conv.bias") : [16]>,
  reshaped = #derive.param<reshape("model.0.conv.weight") : [16, 8]>,
  one = #derive.param<fill(1.0) : [16]>,
  small = #derive.param<fill(-2.5e-7) : [2, 3]>,
  scalar = #derive.param<identity("s") : []>,
  scale = #derive.param<bn_scale("m.bn.weight", "m.bn.running_var") eps 1.0e-3 : [16]>,
  shift = #derive.param<bn_shift("m.bn.weight", "m.bn.bias", "m.bn.running_mean", "m.bn.running_var") eps 0.00001 : [16]>,
  shift_bias = #derive.param<bn_shift("g", "b", "m", "v", "m.conv.bias") eps 0.5 : [4]>
} {
  func.return
}

// Source names are data: any characters survive.
// CHECK-LABEL: func.func @odd_names
// CHECK-SAME:    d = #derive.param<identity("odd \22name\22 \\ \09") : [4]>
func.func @odd_names() attributes {d = #derive.param<identity("odd \"name\" \\ \t") : [4]>} {
  func.return
}
