;; A table with no maximum; run tries to grow it by 2^31 elements (16 GiB
;; of references) and returns what table.grow answered.
(module
  (table $t 1 funcref)
  (func (export "run") (result i32)
    (table.grow $t (ref.null func) (i32.const 0x7fffffff)))
  (func (export "small") (result i32)
    (table.grow $t (ref.null func) (i32.const 10))))
