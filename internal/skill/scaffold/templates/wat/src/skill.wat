;; {{.ID}}: a tier A skill in WebAssembly text.
;;
;; It is a WASI command: the call's input, one JSON object, arrives on
;; stdin, and what the module writes to stdout, one JSON object, is the
;; call's output. This one answers {"echo": INPUT}. It imports only
;; fd_read and fd_write: no file system, no network, so its audit passes.
;;
;; Memory: iovecs at 0, the byte count at 48, the text {"echo": at 64 and
;; the closing brace at 80, the input from 1024 up to the end of the two
;; pages (130048 bytes at most; a longer input fails the call).
(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 2 2)
  (data (i32.const 64) "{\22echo\22:")
  (data (i32.const 80) "}")
  (func (export "_start")
    (local $len i32)
    (local $n i32)
    (block $done
      (loop $more
        (i32.store (i32.const 0) (i32.add (i32.const 1024) (local.get $len)))
        (i32.store (i32.const 4) (i32.sub (i32.const 130048) (local.get $len)))
        (br_if $done (i32.ne (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 48)) (i32.const 0)))
        (local.set $n (i32.load (i32.const 48)))
        (br_if $done (i32.eqz (local.get $n)))
        (local.set $len (i32.add (local.get $len) (local.get $n)))
        (br_if $more (i32.lt_u (local.get $len) (i32.const 130048)))))
    ;; Three iovecs: the prefix, the input, the brace.
    (i32.store (i32.const 0) (i32.const 64))
    (i32.store (i32.const 4) (i32.const 8))
    (i32.store (i32.const 8) (i32.const 1024))
    (i32.store (i32.const 12) (local.get $len))
    (i32.store (i32.const 16) (i32.const 80))
    (i32.store (i32.const 20) (i32.const 1))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 3) (i32.const 48)))))
