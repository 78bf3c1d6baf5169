;; run calls the tests' blocking host function.
(module
  (import "execledger_test" "block" (func $block))
  (func (export "run") (result i32)
    call $block
    i32.const 1))
