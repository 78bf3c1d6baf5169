;; Imports WASI's sock_accept and sock_send: a module that wants raw
;; sockets, which no capability grants.
(module
  (import "wasi_snapshot_preview1" "sock_accept" (func (param i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "sock_send" (func (param i32 i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "run") (result i32) (i32.const 0)))
