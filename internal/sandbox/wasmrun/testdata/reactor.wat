;; A WASI reactor: _initialize sets what run returns.
(module
  (global $v (mut i32) (i32.const 0))
  (func (export "_initialize")
    (global.set $v (i32.const 9)))
  (func (export "run") (result i32)
    global.get $v))
