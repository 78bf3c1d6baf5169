;; A CPU-heavy skill of one tight loop: run returns the sum of i*i for i
;; below 3,000,000, mod 2^32 (about 27 million instructions).
(module
  (func (export "run") (result i32)
    (local $i i32) (local $acc i32)
    (block $done
      (loop $l
        (br_if $done (i32.ge_u (local.get $i) (i32.const 3000000)))
        (local.set $acc (i32.add (local.get $acc) (i32.mul (local.get $i) (local.get $i))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $l)))
    (local.get $acc)))
