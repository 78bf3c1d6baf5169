;; Uses storage prefix 0: put writes "v1" at key "k", get reads it back
;; and returns its length (the value is left at 1024), with_secret stores
;; secret 0's value at key "s". put_get puts then reads in one call;
;; put_trap and put_loop put, then trap or spin until fuel or time runs
;; out. put_twice puts "v1" then "v" at "k". put_bytes fills the call's
;; pending bytes with 64 KiB values: at keys "bA".."bO", at "bA" again (a
;; rewrite, which takes no more room), at "bP" (1 MiB in all); it returns
;; the result of a 1-byte put at "bQ", or -100 less the index of the key
;; whose put failed before that.
(module
  (import "palyra:plugins/host-capabilities@0.1.0" "storage-handle" (func $storage_handle (param i32) (result i32)))
  (import "palyra:plugins/host-capabilities@0.1.0" "secret-handle" (func $secret_handle (param i32) (result i32)))
  (import "execledger:capabilities@0.1.0" "storage_get" (func $storage_get (param i32 i32 i32 i32 i32) (result i32)))
  (import "execledger:capabilities@0.1.0" "storage_put" (func $storage_put (param i32 i32 i32 i32 i32) (result i32)))
  (import "execledger:capabilities@0.1.0" "secret_get" (func $secret_get (param i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 100) "k")
  (data (i32.const 104) "v1")
  (data (i32.const 108) "s")
  (data (i32.const 112) "\00")
  (func (export "put") (result i32)
    (call $storage_put (call $storage_handle (i32.const 0)) (i32.const 100) (i32.const 1) (i32.const 104) (i32.const 2)))
  (func (export "get") (result i32)
    (call $storage_get (call $storage_handle (i32.const 0)) (i32.const 100) (i32.const 1) (i32.const 1024) (i32.const 64)))
  (func (export "put_get") (result i32)
    (drop (call $storage_put (call $storage_handle (i32.const 0)) (i32.const 100) (i32.const 1) (i32.const 104) (i32.const 2)))
    (call $storage_get (call $storage_handle (i32.const 0)) (i32.const 100) (i32.const 1) (i32.const 1024) (i32.const 64)))
  (func (export "put_trap") (result i32)
    (drop (call $storage_put (call $storage_handle (i32.const 0)) (i32.const 100) (i32.const 1) (i32.const 104) (i32.const 2)))
    unreachable)
  (func (export "put_loop") (result i32)
    (drop (call $storage_put (call $storage_handle (i32.const 0)) (i32.const 100) (i32.const 1) (i32.const 104) (i32.const 2)))
    (loop $spin (br $spin))
    (i32.const 0))
  (func (export "put_twice") (result i32)
    (drop (call $storage_put (call $storage_handle (i32.const 0)) (i32.const 100) (i32.const 1) (i32.const 104) (i32.const 2)))
    (call $storage_put (call $storage_handle (i32.const 0)) (i32.const 100) (i32.const 1) (i32.const 104) (i32.const 1)))
  (data (i32.const 200) "b")
  ;; put_b puts len bytes from address 0 at key "b" followed by 'A'+i.
  (func $put_b (param $i i32) (param $len i32) (result i32)
    (i32.store8 (i32.const 201) (i32.add (i32.const 65) (local.get $i)))
    (call $storage_put (call $storage_handle (i32.const 0)) (i32.const 200) (i32.const 2) (i32.const 0) (local.get $len)))
  (func (export "put_bytes") (result i32) (local $i i32)
    (loop $fill
      (if (call $put_b (local.get $i) (i32.const 65536))
        (then (return (i32.sub (i32.const -100) (local.get $i)))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $fill (i32.lt_u (local.get $i) (i32.const 15))))
    (if (call $put_b (i32.const 0) (i32.const 65536))
      (then (return (i32.const -100))))
    (if (call $put_b (i32.const 15) (i32.const 65536))
      (then (return (i32.const -115))))
    (call $put_b (i32.const 16) (i32.const 1)))
  (func (export "get_missing") (result i32)
    (call $storage_get (call $storage_handle (i32.const 0)) (i32.const 108) (i32.const 1) (i32.const 1024) (i32.const 64)))
  (func (export "put_nul") (result i32)
    (call $storage_put (call $storage_handle (i32.const 0)) (i32.const 112) (i32.const 1) (i32.const 104) (i32.const 2)))
  (func (export "put_ungranted") (result i32)
    (call $storage_put (i32.const 30001) (i32.const 100) (i32.const 1) (i32.const 104) (i32.const 2)))
  (func (export "with_secret") (result i32) (local $n i32)
    (local.set $n (call $secret_get (call $secret_handle (i32.const 0)) (i32.const 2048) (i32.const 256)))
    (if (i32.lt_s (local.get $n) (i32.const 0)) (then unreachable))
    (call $storage_put (call $storage_handle (i32.const 0)) (i32.const 108) (i32.const 1) (i32.const 2048) (local.get $n))))
