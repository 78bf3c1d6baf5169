;; Imports WASI's sock_accept, as a module serving a socket it was handed
;; would. Tier A provides no WASI socket function: no capability grants
;; raw sockets, so the module is refused before it runs.
(module
  (import "wasi_snapshot_preview1" "sock_accept" (func $accept (param i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "run") (result i32)
    (call $accept (i32.const 3) (i32.const 0) (i32.const 0))))
