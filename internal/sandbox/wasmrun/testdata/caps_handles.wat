;; Palyra's capability handles: each export returns a count or a handle.
(module
  (import "palyra:plugins/host-capabilities@0.1.0" "http-count" (func $http_count (result i32)))
  (import "palyra:plugins/host-capabilities@0.1.0" "http-handle" (func $http_handle (param i32) (result i32)))
  (import "palyra:plugins/host-capabilities@0.1.0" "secret-count" (func $secret_count (result i32)))
  (import "palyra:plugins/host-capabilities@0.1.0" "secret-handle" (func $secret_handle (param i32) (result i32)))
  (import "palyra:plugins/host-capabilities@0.1.0" "storage-count" (func $storage_count (result i32)))
  (import "palyra:plugins/host-capabilities@0.1.0" "storage-handle" (func $storage_handle (param i32) (result i32)))
  (import "palyra:plugins/host-capabilities@0.1.0" "channel-count" (func $channel_count (result i32)))
  (import "palyra:plugins/host-capabilities@0.1.0" "channel-handle" (func $channel_handle (param i32) (result i32)))
  ;; counts: http*1000 + secret*100 + storage*10 + channel
  (func (export "counts") (result i32)
    (i32.add
      (i32.add (i32.mul (call $http_count) (i32.const 1000)) (i32.mul (call $secret_count) (i32.const 100)))
      (i32.add (i32.mul (call $storage_count) (i32.const 10)) (call $channel_count))))
  (func (export "http1") (result i32) (call $http_handle (i32.const 1)))
  (func (export "secret0") (result i32) (call $secret_handle (i32.const 0)))
  (func (export "secret1") (result i32) (call $secret_handle (i32.const 1)))
  (func (export "secret2") (result i32) (call $secret_handle (i32.const 2)))
  (func (export "secret_neg") (result i32) (call $secret_handle (i32.const -1)))
  (func (export "storage0") (result i32) (call $storage_handle (i32.const 0)))
  (func (export "channel0") (result i32) (call $channel_handle (i32.const 0))))
