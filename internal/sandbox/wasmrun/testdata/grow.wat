;; run grows memory one page at a time until memory.grow refuses, then
;; traps, as a language runtime out of memory does. "once" asks for 2000
;; pages at once and traps if refused.
(module
  (memory (export "memory") 1)
  (func (export "run") (result i32)
    (loop $more
      (br_if $more (i32.ne (memory.grow (i32.const 1)) (i32.const -1))))
    unreachable)
  (func (export "once") (result i32)
    (if (i32.eq (memory.grow (i32.const 2000)) (i32.const -1))
      (then unreachable))
    memory.size)
  (func (export "handled") (result i32)
    ;; refused, and the module carries on
    (memory.grow (i32.const 2000))))
