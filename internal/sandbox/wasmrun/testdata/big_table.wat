;; A table that starts above the limit.
(module
  (table 200000 funcref)
  (func (export "run") (result i32)
    i32.const 0))
