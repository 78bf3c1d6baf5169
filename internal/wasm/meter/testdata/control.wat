;; Control flow: nested blocks, br_table, if/else, multi-value blocks with
;; parameters, call_indirect, and post-MVP instructions in between.
(module
  (type $unary (func (param i32) (result i32)))
  (table 2 funcref)
  (elem (i32.const 0) $double $negate)
  (global $calls (mut i32) (i32.const 0))

  (func $double (type $unary)
    (global.set $calls (i32.add (global.get $calls) (i32.const 1)))
    (i32.mul (local.get 0) (i32.const 2)))
  (func $negate (type $unary)
    (i32.sub (i32.const 0) (local.get 0)))
  (func $swap (param i32 i32) (result i32 i32)
    (local.get 1) (local.get 0))

  ;; classify(x) dispatches through br_table over nested blocks.
  (func (export "classify") (param $x i32) (result i32)
    (block $d
      (block $c
        (block $b
          (block $a
            (br_table $a $b $c $d (local.get $x)))
          (return (i32.const 10)))
        (return (i32.const 20)))
      (return (i32.const 30)))
    (i32.const 40))

  ;; gcd(a, b) loops with two parameters on the loop label.
  (func (export "gcd") (param $a i32) (param $b i32) (result i32)
    (local.get $a) (local.get $b)
    (loop $l (param i32 i32) (result i32)
      (local.set $b) (local.set $a)
      (if (result i32) (i32.eqz (local.get $b))
        (then (local.get $a))
        (else
          (local.get $b) (i32.rem_u (local.get $a) (local.get $b))
          (br $l)))))

  ;; swapsub(a, b) = b - a through a block with parameters and two results.
  (func (export "swapsub") (param $a i32) (param $b i32) (result i32)
    (local.get $a) (local.get $b)
    (block (param i32 i32) (result i32 i32)
      (call $swap))
    (i32.sub))

  ;; pick(x) leaves a block with two values by br_if or by falling out.
  (func (export "pick") (param $x i32) (result i32)
    (block $out (result i32 i32)
      (i32.const 1) (i32.const 2)
      (br_if $out (local.get $x))
      (drop) (drop) (i32.const 3) (i32.const 4))
    (i32.add))

  ;; nest(x) runs if/else chains inside loops inside blocks.
  (func (export "nest") (param $x i32) (result i32)
    (local $i i32) (local $acc i32)
    (block $exit
      (loop $outer
        (br_if $exit (i32.ge_s (local.get $i) (local.get $x)))
        (block $skip
          (if (i32.rem_u (local.get $i) (i32.const 3))
            (then
              (if (i32.eq (local.get $i) (i32.const 7))
                (then (br $skip)))
              (local.set $acc (i32.add (local.get $acc) (local.get $i))))
            (else
              (local.set $acc (i32.xor (local.get $acc) (i32.const 0x55))))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $outer)))
    (select (result i32) (local.get $acc) (i32.const -1) (i32.ge_s (local.get $acc) (i32.const 0))))

  ;; dispatch(i, v) calls table entry i: 0 doubles, 1 negates.
  (func (export "dispatch") (param $i i32) (param $v i32) (result i32)
    (call_indirect (type $unary) (local.get $v) (local.get $i)))

  (func (export "calls") (result i32) (global.get $calls))

  ;; misc(x) uses sign extension and saturating conversions.
  (func (export "misc") (param $x i32) (result i64)
    (i64.add
      (i64.add
        (i64.extend_i32_s (i32.extend8_s (local.get $x)))
        (i64.extend16_s (i64.extend_i32_u (local.get $x))))
      (i64.trunc_sat_f64_s (f64.mul (f64.convert_i32_s (local.get $x)) (f64.const 1e300))))))
