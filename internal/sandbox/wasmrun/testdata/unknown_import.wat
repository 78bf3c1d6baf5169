;; Imports a function nothing provides, and has a start function that
;; would count a run through a host function the tests provide.
(module
  (import "execledger_test" "count" (func $count))
  (import "env" "launch_missiles" (func $boom (param i32)))
  (func $start
    call $count)
  (start $start)
  (func (export "run") (result i32)
    (call $boom (i32.const 1))
    i32.const 0))
