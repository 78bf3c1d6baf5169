;; A start function that never returns: only the call's timeout (or fuel)
;; ends it.
(module
  (func $forever
    (loop $l (br $l)))
  (start $forever)
  (func (export "run") (result i32) (i32.const 1)))
