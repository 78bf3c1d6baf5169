;; run divides by zero; unreachable traps.
(module
  (func (export "run") (result i32)
    (i32.div_s (i32.const 1) (i32.const 0)))
  (func (export "unreachable") (result i32)
    unreachable))
