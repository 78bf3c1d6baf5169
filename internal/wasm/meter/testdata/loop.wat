;; Loops: one that never ends and one whose cost the tests pin down.
(module
  ;; spin never returns: only running out of fuel ends it.
  (func (export "spin")
    (loop $l (br $l)))

  ;; count(n) counts to n. Segments: entry [block loop] 2; loop head
  ;; [local.get local.get i32.ge_u br_if] 4, n+1 times; after br_if
  ;; [local.get i32.const i32.add local.set br] 5, n times; after the
  ;; block's end [local.get end] 2. Total 9n+8.
  (func (export "count") (param $n i32) (result i32)
    (local $i i32)
    (block $done
      (loop $top
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $top)))
    (local.get $i)))
