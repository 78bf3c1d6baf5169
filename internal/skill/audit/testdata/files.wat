;; Imports WASI's path_open and fd_readdir: a module that wants files.
(module
  (import "wasi_snapshot_preview1" "path_open" (func (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_readdir" (func (param i32 i32 i32 i64 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "run") (result i32) (i32.const 0)))
