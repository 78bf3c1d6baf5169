;; A loop instrumented by hand the way the fuel meter instruments code,
;; each instance starting with 5000 fuel: each iteration charges one unit
;; of __execledger_fuel and traps (unreachable) once it is negative. "iterations" bounds the loop: -1
;; means forever.
(module
  (global $fuel (export "__execledger_fuel") (mut i64) (i64.const 5000))
  (global $iterations (mut i64) (i64.const -1))
  (func (export "run") (result i32)
    (block $done
      (loop $again
        (global.set $fuel (i64.sub (global.get $fuel) (i64.const 1)))
        (if (i64.lt_s (global.get $fuel) (i64.const 0))
          (then unreachable))
        (br_if $done (i64.eqz (global.get $iterations)))
        (global.set $iterations (i64.sub (global.get $iterations) (i64.const 1)))
        (br $again)))
    i32.const 7)
  (func (export "finite") (result i32)
    (global.set $iterations (i64.const 999))
    (block $done
      (loop $again
        (global.set $fuel (i64.sub (global.get $fuel) (i64.const 1)))
        (if (i64.lt_s (global.get $fuel) (i64.const 0))
          (then unreachable))
        (br_if $done (i64.eqz (global.get $iterations)))
        (global.set $iterations (i64.sub (global.get $iterations) (i64.const 1)))
        (br $again)))
    i32.const 7))
