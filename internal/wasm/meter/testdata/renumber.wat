;; wat2wasm: --enable-tail-call --debug-names
;; Every place a function index appears, for Options.Yield, which inserts
;; its import after these and so renumbers every defined function: calls,
;; tail calls, ref.func in code and in a global, element segments in all
;; eight encodings, call_indirect, exports, the start function and the name
;; section (compile with wat2wasm --debug-names). The imports come from a
;; host module "env": add1(x) = x+1 and twice(x) = 2x.
(module
  (type $unary (func (param i32) (result i32)))
  (import "env" "add1" (func $add1 (type $unary)))
  (import "env" "twice" (func $twice (type $unary)))
  (table $t 8 funcref)
  (table $t2 10 funcref)
  (global $ref funcref (ref.func $triple))
  (global $started (mut i32) (i32.const 0))

  (func $double (type $unary) (i32.mul (local.get 0) (i32.const 2)))
  (func $triple (type $unary) (i32.mul (local.get 0) (i32.const 3)))
  (func $square (type $unary) (i32.mul (local.get 0) (local.get 0)))
  (func $negate (type $unary) (i32.sub (i32.const 0) (local.get 0)))
  (func $hundred (type $unary) (i32.add (local.get 0) (i32.const 100)))
  (func $thousand (type $unary) (i32.add (local.get 0) (i32.const 1000)))
  (func $crash (param $why i32) (result i32) unreachable)

  ;; flags 0: active on table 0, function indices.
  (elem (i32.const 0) $double $add1)
  ;; flags 1: passive, function indices.
  (elem $pass func $square $twice)
  ;; flags 2: active on an explicit table, function indices.
  (elem (table $t2) (i32.const 4) func $triple $negate)
  ;; flags 3: declarative, function indices.
  (elem declare func $hundred)
  ;; flags 4: active on table 0, expressions.
  (elem (i32.const 2) funcref (ref.func $negate) (ref.null func) (ref.func $twice))
  ;; A null keeps wat2wasm from encoding these with function indices.
  ;; flags 5: passive, expressions.
  (elem $passx funcref (ref.func $triple) (ref.func $add1) (ref.null func))
  ;; flags 6: active on an explicit table, expressions.
  (elem (table $t2) (i32.const 6) funcref (ref.func $crash) (ref.func $double) (ref.null func))
  ;; flags 7: declarative, expressions.
  (elem declare funcref (ref.func $thousand) (ref.null func))

  (func $init (global.set $started (call $add1 (i32.const 41))))
  (start $init)

  (func $started (export "started") (result i32) (global.get $started))
  ;; chain(x) = 2(x+1) + 3x + twice(x)
  (func $chain (export "chain") (param $x i32) (result i32)
    (i32.add
      (i32.add (call $double (call $add1 (local.get $x))) (call $triple (local.get $x)))
      (call $twice (local.get $x))))
  (func $tail (export "tail") (param $x i32) (result i32)
    (return_call $square (local.get $x)))
  (func $tail_import (export "tail_import") (param $x i32) (result i32)
    (return_call $add1 (local.get $x)))
  ;; table(i, x) calls entry i of table 0, as the active segments set it.
  (func $table (export "table") (param $i i32) (param $x i32) (result i32)
    (call_indirect $t (type $unary) (local.get $x) (local.get $i)))
  ;; table2(i, x) calls entry i of the second table.
  (func $table2 (export "table2") (param $i i32) (param $x i32) (result i32)
    (call_indirect $t2 (type $unary) (local.get $x) (local.get $i)))
  ;; passive(x) copies both passive segments into table 0 at 5 and 7...
  (func $passive (export "passive") (param $x i32) (result i32)
    (table.init $t $pass (i32.const 5) (i32.const 0) (i32.const 2))
    (table.init $t $passx (i32.const 6) (i32.const 0) (i32.const 2))
    ;; ...so that 5 squares, 6 triples and 7 adds one.
    (i32.add
      (i32.add
        (call_indirect $t (type $unary) (local.get $x) (i32.const 5))
        (call_indirect $t (type $unary) (local.get $x) (i32.const 6)))
      (call_indirect $t (type $unary) (local.get $x) (i32.const 7))))
  ;; refs(x) calls through ref.func in code and in the global.
  (func $refs (export "refs") (param $x i32) (result i32)
    (table.set $t (i32.const 3) (ref.func $hundred))
    (table.set $t2 (i32.const 0) (ref.func $thousand))
    (table.set $t2 (i32.const 1) (global.get $ref))
    (table.set $t2 (i32.const 2) (ref.func $add1))
    (i32.add
      (i32.add
        (call_indirect $t (type $unary) (local.get $x) (i32.const 3))
        (call_indirect $t2 (type $unary) (local.get $x) (i32.const 0)))
      (i32.add
        (call_indirect $t2 (type $unary) (local.get $x) (i32.const 1))
        (call_indirect $t2 (type $unary) (local.get $x) (i32.const 2)))))
  ;; boom traps in $crash, named in the engine's backtrace.
  (func $boom (export "boom") (param $arg i32) (result i32)
    (call $crash (local.get $arg))))
