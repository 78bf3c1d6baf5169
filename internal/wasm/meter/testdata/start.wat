;; A start function, which runs on the fuel the module is instrumented with.
(module
  (global $g (mut i32) (i32.const 0))
  ;; [i32.const global.set end] costs 3.
  (func $init (global.set $g (i32.const 42)))
  (start $init)
  (func (export "get") (result i32) (global.get $g)))
