;; A start function that sets what run returns: it must have run, once,
;; before the entrypoint.
(module
  (global $g (mut i32) (i32.const 0))
  (func $init
    (global.set $g (i32.add (global.get $g) (i32.const 42))))
  (start $init)
  (func (export "run") (result i32) (global.get $g)))
