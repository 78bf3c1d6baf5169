;; run calls the tests' counting host function.
(module
  (import "execledger_test" "count" (func $count))
  (func (export "run") (result i32)
    call $count
    i32.const 1))
