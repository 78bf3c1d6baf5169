;; run takes a parameter: not an entrypoint.
(module
  (func (export "run") (param i32) (result i32)
    local.get 0))
