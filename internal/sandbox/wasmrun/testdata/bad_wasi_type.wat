;; Imports a WASI function with the wrong type.
(module
  (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i64)))
  (func (export "run") (result i32)
    i32.const 0))
