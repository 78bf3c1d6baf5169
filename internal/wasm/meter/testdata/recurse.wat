;; Recursion: a bomb that never returns and one of known depth.
(module
  ;; bomb calls itself for ever: [call end] costs 2 per level.
  (func $bomb (export "bomb")
    (call $bomb))

  ;; depth(n) recurses n levels and returns n. Segments: entry
  ;; [local.get i32.eqz if] 3; then arm [i32.const else] 2; else arm
  ;; [i32.const local.get i32.const i32.sub call i32.add end] 7; after the
  ;; if [end] 1. Total 11n+6.
  (func $depth (export "depth") (param $n i32) (result i32)
    (if (result i32) (i32.eqz (local.get $n))
      (then (i32.const 0))
      (else (i32.add (i32.const 1)
        (call $depth (i32.sub (local.get $n) (i32.const 1))))))))
