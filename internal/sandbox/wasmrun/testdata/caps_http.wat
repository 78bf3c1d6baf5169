;; Uses http_request: fetch sends the request the test wrote at 0 and
;; writes the response at 65536; run asks for http://127.0.0.1/ with
;; granted host 0.
(module
  (import "palyra:plugins/host-capabilities@0.1.0" "http-handle" (func $http_handle (param i32) (result i32)))
  (import "execledger:capabilities@0.1.0" "http_request" (func $http_request (param i32 i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 48)
  (data (i32.const 8192) "{\"method\":\"GET\",\"url\":\"http://127.0.0.1/\"}")

  (func (export "fetch") (param $handle i32) (param $len i32) (param $cap i32) (result i32)
    (call $http_request (local.get $handle) (i32.const 0) (local.get $len) (i32.const 65536) (local.get $cap)))

  (func (export "run") (result i32)
    (call $http_request (call $http_handle (i32.const 0)) (i32.const 8192) (i32.const 42) (i32.const 65536) (i32.const 1024))))
