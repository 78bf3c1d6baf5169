;; A CPU-heavy skill: run returns fib(27), computed recursively (about
;; 300,000 calls and 8 million instructions).
(module
  (func $fib (param $n i32) (result i32)
    (if (result i32) (i32.lt_u (local.get $n) (i32.const 2))
      (then (local.get $n))
      (else
        (i32.add
          (call $fib (i32.sub (local.get $n) (i32.const 1)))
          (call $fib (i32.sub (local.get $n) (i32.const 2)))))))
  (func (export "run") (result i32)
    (call $fib (i32.const 27))))
