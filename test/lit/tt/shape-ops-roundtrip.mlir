// RUN: sparsecc-opt %s | filecheck %s
// RUN: sparsecc-opt %s | sparsecc-opt | filecheck %s
// The shape ops of tl.join/split/cat/permute/reshape print as they parse: tt.trans carries an
// `order` unless it is the 2-D transpose, tt.cat a `dim` unless it is 0, tt.reshape
// `allow_reorder` for can_reorder=True.

// CHECK:      %j = tt.join %a, %b : tensor<4x8xf32> -> tensor<4x8x2xf32>
// CHECK-NEXT: %l, %r = tt.split %j : tensor<4x8x2xf32> -> tensor<4x8xf32>
// CHECK-NEXT: %c0 = tt.cat %l, %r : tensor<4x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %c1 = tt.cat %l, %r {dim = 1 : i32} : tensor<4x8xf32> -> tensor<4x16xf32>
// CHECK-NEXT: %t = tt.trans %j {order = array<i32: 2, 0, 1>} : tensor<4x8x2xf32> -> tensor<2x4x8xf32>
// CHECK-NEXT: %t2 = tt.trans %a : tensor<4x8xf32> -> tensor<8x4xf32>
// CHECK-NEXT: %q = tt.reshape %a {allow_reorder} : tensor<4x8xf32> -> tensor<32xf32>
builtin.module {
  tt.func @f(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) {
    %j = tt.join %a, %b : tensor<4x8xf32> -> tensor<4x8x2xf32>
    %l, %r = tt.split %j : tensor<4x8x2xf32> -> tensor<4x8xf32>
    %c0 = tt.cat %l, %r : tensor<4x8xf32> -> tensor<8x8xf32>
    %c1 = tt.cat %l, %r {dim = 1 : i32} : tensor<4x8xf32> -> tensor<4x16xf32>
    %t = tt.trans %j {order = array<i32: 2, 0, 1>} : tensor<4x8x2xf32> -> tensor<2x4x8xf32>
    %t2 = tt.trans %a : tensor<4x8xf32> -> tensor<8x4xf32>
    %q = tt.reshape %a {allow_reorder} : tensor<4x8xf32> -> tensor<32xf32>
    tt.return
  }
}
