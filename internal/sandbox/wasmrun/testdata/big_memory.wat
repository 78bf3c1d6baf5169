;; A memory that starts above the 64 MiB limit.
(module
  (memory 2000)
  (func (export "run") (result i32)
    i32.const 0))
