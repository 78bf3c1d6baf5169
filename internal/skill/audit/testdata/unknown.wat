;; Imports a host module tier A does not provide.
(module
  (import "env" "system" (func (param i32) (result i32)))
  (func (export "run") (result i32) (i32.const 0)))
