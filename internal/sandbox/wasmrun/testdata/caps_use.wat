;; Uses granted capabilities: reads the first granted secret and echoes
;; it, publishes on the first granted channel.
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (import "palyra:plugins/host-capabilities@0.1.0" "secret-handle" (func $secret_handle (param i32) (result i32)))
  (import "palyra:plugins/host-capabilities@0.1.0" "channel-handle" (func $channel_handle (param i32) (result i32)))
  (import "execledger:capabilities@0.1.0" "secret_get" (func $secret_get (param i32 i32 i32) (result i32)))
  (import "execledger:capabilities@0.1.0" "channel_publish" (func $channel_publish (param i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 1013) "{\"secret\":\"")
  (data (i32.const 320) "{\"hello\":\"world\"}")
  (data (i32.const 400) "\00\01bin")

  ;; $message reads secret 0 into 1024 and returns the length of
  ;; {"secret":"<value>"} at 1013; it traps when the secret is refused.
  (func $message (result i32) (local $n i32)
    (local.set $n (call $secret_get (call $secret_handle (i32.const 0)) (i32.const 1024) (i32.const 256)))
    (if (i32.lt_s (local.get $n) (i32.const 0)) (then unreachable))
    (i32.store16 (i32.add (i32.const 1024) (local.get $n)) (i32.const 0x7d22))
    (i32.add (local.get $n) (i32.const 13)))

  ;; $write writes the message to fd.
  (func $write (param $fd i32) (param $len i32)
    (i32.store (i32.const 0) (i32.const 1013))
    (i32.store (i32.const 4) (local.get $len))
    (drop (call $fd_write (local.get $fd) (i32.const 0) (i32.const 1) (i32.const 8))))

  ;; print echoes the secret on stdout and on channel 0.
  (func (export "print") (local $len i32)
    (local.set $len (call $message))
    (call $write (i32.const 1) (local.get $len))
    (drop (call $channel_publish (call $channel_handle (i32.const 0)) (i32.const 1013) (local.get $len))))

  ;; fail echoes the secret on stderr and exits with 3.
  (func (export "fail")
    (call $write (i32.const 2) (call $message))
    (call $proc_exit (i32.const 3)))

  (func (export "get") (result i32)
    (call $secret_get (call $secret_handle (i32.const 0)) (i32.const 1024) (i32.const 256)))
  (func (export "get_small") (result i32)
    (call $secret_get (call $secret_handle (i32.const 0)) (i32.const 1024) (i32.const 2)))
  (func (export "get_ungranted") (result i32)
    (call $secret_get (i32.const 20005) (i32.const 1024) (i32.const 256)))
  (func (export "get_other_class") (result i32)
    (call $secret_get (i32.const 40000) (i32.const 1024) (i32.const 256)))
  (func (export "get_bad_memory") (result i32)
    (call $secret_get (call $secret_handle (i32.const 0)) (i32.const 65530) (i32.const 256)))
  (func (export "publish") (result i32)
    (call $channel_publish (call $channel_handle (i32.const 0)) (i32.const 320) (i32.const 17)))
  (func (export "publish_raw") (result i32)
    (call $channel_publish (call $channel_handle (i32.const 0)) (i32.const 400) (i32.const 5)))
  ;; spin tries 300 ungranted publications and returns the last result.
  (func (export "spin") (result i32) (local $i i32) (local $r i32)
    (loop $more
      (local.set $r (call $channel_publish (i32.const 40001) (i32.const 320) (i32.const 17)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $more (i32.lt_u (local.get $i) (i32.const 300))))
    (local.get $r))
  (func (export "publish_ungranted") (result i32)
    (call $channel_publish (i32.const 40001) (i32.const 320) (i32.const 17))))
