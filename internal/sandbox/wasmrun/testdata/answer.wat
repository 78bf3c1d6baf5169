;; Palyra's ABI: run () -> i32.
(module
  (func (export "run") (result i32)
    i32.const 42))
