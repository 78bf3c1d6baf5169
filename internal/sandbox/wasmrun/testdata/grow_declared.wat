;; A memory declaring a maximum above the limit still compiles; growth
;; stops at the limit.
(module
  (memory 1 4000)
  (func (export "run") (result i32)
    (memory.grow (i32.const 1500))))
