// RUN: sparsecc-opt %s --split-input-file -p "convert-tt-to-ttg{num-warps=1 target=sm_80}" --emit ptx | filecheck %s
// f32 / f16 -> fp8 casts print torch's rounding on the f32 bits (sparsecc/codegen/fp8_casts.py),
// on any target (sm_80 has no fp8 cvt): sign split off, the denormal range through an f32 add of
// 2^14 (e4m3fn) / 2^7 (e5m2), the normal range rebiased and rounded to nearest even, the
// overflow code from 448 / 65536 on (e4m3fn saturates to 0x7E, e5m2 is inf, 0x7C), NaN 0x7F,
// the sign or-ed back into the byte.

// CHECK-LABEL: .visible .entry to_e4m3
// CHECK:       and.b32 [[SGN:%r[0-9]+]], [[BITS:%r[0-9]+]], -2147483648;
// CHECK-NEXT:  and.b32 [[MAG:%r[0-9]+]], [[BITS]], 2147483647;
// CHECK-NEXT:  mov.b32 [[ABS:%f[0-9]+]], [[MAG]];
// CHECK-NEXT:  add.rn.f32 [[T:%f[0-9]+]], [[ABS]], 0f46800000;
// CHECK-NEXT:  mov.b32 [[DEN:%r[0-9]+]], [[T]];
// CHECK-NEXT:  sub.s32 [[DEN]], [[DEN]], 1182793728;
// CHECK-NEXT:  shr.u32 [[ODD:%r[0-9]+]], [[MAG]], 20;
// CHECK-NEXT:  and.b32 [[ODD]], [[ODD]], 1;
// CHECK-NEXT:  add.s32 [[NRM:%r[0-9]+]], [[MAG]], 3288858623;
// CHECK-NEXT:  add.s32 [[NRM]], [[NRM]], [[ODD]];
// CHECK-NEXT:  shr.u32 [[NRM]], [[NRM]], 20;
// CHECK-NEXT:  setp.lt.u32 [[PD:%p[0-9]+]], [[MAG]], 1015021568;
// CHECK-NEXT:  selp.b32 [[RES:%r[0-9]+]], [[DEN]], [[NRM]], [[PD]];
// CHECK-NEXT:  setp.ge.u32 [[PO:%p[0-9]+]], [[MAG]], 1138753536;
// CHECK-NEXT:  selp.b32 [[RES]], 126, [[RES]], [[PO]];
// CHECK-NEXT:  setp.gt.u32 [[PN:%p[0-9]+]], [[MAG]], 2139095040;
// CHECK-NEXT:  selp.b32 [[RES]], 127, [[RES]], [[PN]];
// CHECK-NEXT:  shr.u32 [[SGN]], [[SGN]], 24;
// CHECK-NEXT:  or.b32 [[RES]], [[RES]], [[SGN]];
// CHECK-NEXT:  cvt.u16.u32 %rs{{[0-9]+}}, [[RES]];
// CHECK:       st.global.b8
builtin.module {
  tt.func public @to_e4m3(%out: !tt.ptr<f8E4M3FN>, %x: f32) {
    %q = arith.truncf %x : f32 to f8E4M3FN
    tt.store %out, %q : !tt.ptr<f8E4M3FN>
    tt.return
  }
}

// -----

// CHECK-LABEL: .visible .entry to_e5m2
// CHECK:       cvt.f32.f16 [[X:%f[0-9]+]], %rs{{[0-9]+}};
// CHECK-NEXT:  mov.b32 {{%r[0-9]+}}, [[X]];
// CHECK:       add.rn.f32 {{%f[0-9]+}}, {{%f[0-9]+}}, 0f43000000;
// CHECK:       shr.u32 {{%r[0-9]+}}, {{%r[0-9]+}}, 21;
// CHECK:       selp.b32 [[RES:%r[0-9]+]], 124, [[RES]], {{%p[0-9]+}};
// CHECK-NEXT:  setp.gt.u32 [[PN:%p[0-9]+]], {{%r[0-9]+}}, 2139095040;
// CHECK-NEXT:  selp.b32 [[RES]], 127, [[RES]], [[PN]];
builtin.module {
  tt.func public @to_e5m2(%out: !tt.ptr<f8E5M2>, %in: !tt.ptr<f16>) {
    %x = tt.load %in : !tt.ptr<f16>
    %q = arith.truncf %x : f16 to f8E5M2
    tt.store %out, %q : !tt.ptr<f8E5M2>
    tt.return
  }
}

// -----

// fp8 -> f32 is exact: e4m3fn's exponent and mantissa shifted into an f16 (sign apart) are its
// value / 256, denormals included; 0x7F is NaN.
// CHECK-LABEL: .visible .entry from_e4m3
// CHECK:       ld.global.b8 [[B:%rs[0-9]+]]
// CHECK-NEXT:  and.b16 [[BYTE:%rs[0-9]+]], [[B]], 255;
// CHECK-NEXT:  and.b16 [[MAG:%rs[0-9]+]], [[BYTE]], 127;
// CHECK-NEXT:  and.b16 [[SGN:%rs[0-9]+]], [[BYTE]], 128;
// CHECK-NEXT:  shl.b16 [[SGN]], [[SGN]], 8;
// CHECK-NEXT:  shl.b16 [[H:%rs[0-9]+]], [[MAG]], 7;
// CHECK-NEXT:  or.b16 [[H]], [[H]], [[SGN]];
// CHECK-NEXT:  cvt.f32.f16 [[W:%f[0-9]+]], [[H]];
// CHECK-NEXT:  mul.rn.f32 [[W]], [[W]], 0f43800000;
// CHECK-NEXT:  setp.eq.u16 [[NAN:%p[0-9]+]], [[MAG]], 127;
// CHECK-NEXT:  selp.f32 [[W]], 0f7FC00000, [[W]], [[NAN]];
builtin.module {
  tt.func public @from_e4m3(%out: !tt.ptr<f32>, %in: !tt.ptr<f8E4M3FN>) {
    %q = tt.load %in : !tt.ptr<f8E4M3FN>
    %x = arith.extf %q : f8E4M3FN to f32
    tt.store %out, %x : !tt.ptr<f32>
    tt.return
  }
}
