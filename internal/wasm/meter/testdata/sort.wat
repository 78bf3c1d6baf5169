;; Sorting n pseudo-random i32s in memory, and checks of the result.
(module
  (memory (export "memory") 1)

  ;; fill(seed, n) writes n values of a linear congruential generator.
  (func (export "fill") (param $seed i32) (param $n i32)
    (local $i i32)
    (block $done
      (loop $l
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $seed
          (i32.add (i32.mul (local.get $seed) (i32.const 1103515245)) (i32.const 12345)))
        (i32.store (i32.shl (local.get $i) (i32.const 2)) (i32.shr_u (local.get $seed) (i32.const 8)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $l))))

  ;; sort(n) sorts the first n values by insertion.
  (func (export "sort") (param $n i32)
    (local $i i32) (local $j i32) (local $v i32)
    (local.set $i (i32.const 1))
    (block $done
      (loop $outer
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $v (i32.load (i32.shl (local.get $i) (i32.const 2))))
        (local.set $j (local.get $i))
        (block $placed
          (loop $inner
            (br_if $placed (i32.eqz (local.get $j)))
            (br_if $placed
              (i32.le_s (i32.load (i32.shl (i32.sub (local.get $j) (i32.const 1)) (i32.const 2)))
                        (local.get $v)))
            (i32.store (i32.shl (local.get $j) (i32.const 2))
              (i32.load (i32.shl (i32.sub (local.get $j) (i32.const 1)) (i32.const 2))))
            (local.set $j (i32.sub (local.get $j) (i32.const 1)))
            (br $inner)))
        (i32.store (i32.shl (local.get $j) (i32.const 2)) (local.get $v))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $outer))))

  ;; checksum(n) is the sum of value*(index+1), so order matters.
  (func (export "checksum") (param $n i32) (result i64)
    (local $i i32) (local $s i64)
    (block $done
      (loop $l
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $s
          (i64.add (local.get $s)
            (i64.mul (i64.load32_u (i32.shl (local.get $i) (i32.const 2)))
                     (i64.extend_i32_u (i32.add (local.get $i) (i32.const 1))))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $l)))
    (local.get $s)))
