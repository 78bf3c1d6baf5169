;; Fixed-width SIMD instructions with each kind of immediate.
(module
  (memory 1)
  (func (export "simd") (param $x i32) (result i32)
    (local $v v128)
    (local.set $v (i32x4.splat (local.get $x)))
    (local.set $v (i32x4.add (local.get $v) (v128.const i32x4 1 2 3 4)))
    (v128.store (i32.const 16) (local.get $v))
    (local.set $v (v128.load32_lane 2 (i32.const 16) (local.get $v)))
    (local.set $v (i8x16.shuffle 4 5 6 7 0 1 2 3 12 13 14 15 8 9 10 11 (local.get $v) (local.get $v)))
    (local.set $v (i32x4.replace_lane 3 (local.get $v) (i32.const 100)))
    (v128.store64_lane 1 (i32.const 32) (local.get $v))
    (i32.add
      (i32.add (i32x4.extract_lane 0 (local.get $v)) (i32x4.extract_lane 3 (local.get $v)))
      (i32.add (i32.load (i32.const 32)) (i32x4.extract_lane 0 (v128.load32_zero (i32.const 36)))))))
