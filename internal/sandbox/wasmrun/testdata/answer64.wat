;; run () -> i64, a negative result.
(module
  (func (export "run") (result i64)
    i64.const -5000000000))
