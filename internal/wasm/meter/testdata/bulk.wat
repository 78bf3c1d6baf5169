;; Bulk memory and table operations, charged per byte or element.
(module
  (memory (export "memory") 2 4)
  (data $d "0123456789abcdefghijklmnopqrstuvwxyz")
  (table $t 16 64 funcref)
  (elem $e func $f $f $f $f)
  (func $f)

  ;; Each of these is one segment of 5 instructions plus n units.
  (func (export "fill") (param $n i32)
    (memory.fill (i32.const 0) (i32.const 0x61) (local.get $n)))
  (func (export "copy") (param $n i32)
    (memory.copy (i32.const 65536) (i32.const 0) (local.get $n)))
  (func (export "init") (param $n i32)
    (memory.init $d (i32.const 100) (i32.const 0) (local.get $n)))
  (func (export "tfill") (param $n i32)
    (table.fill $t (i32.const 0) (ref.func $f) (local.get $n)))
  (func (export "tcopy") (param $n i32)
    (table.copy $t $t (i32.const 8) (i32.const 0) (local.get $n)))
  (func (export "tinit") (param $n i32)
    (table.init $t $e (i32.const 0) (i32.const 0) (local.get $n)))

  ;; tgrow and grow return what the instruction does: 4 and 3 instructions
  ;; plus n elements or pages.
  (func (export "tgrow") (param $n i32) (result i32)
    (table.grow $t (ref.null func) (local.get $n)))
  (func (export "grow") (param $n i32) (result i32)
    (memory.grow (local.get $n)))

  (func (export "drop") (data.drop $d) (elem.drop $e))

  ;; sum(p, n) adds n bytes from p, to compare memory contents.
  (func (export "sum") (param $p i32) (param $n i32) (result i32)
    (local $s i32)
    (block $done
      (loop $l
        (br_if $done (i32.eqz (local.get $n)))
        (local.set $s (i32.add (local.get $s) (i32.load8_u (local.get $p))))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (local.set $n (i32.sub (local.get $n) (i32.const 1)))
        (br $l)))
    (local.get $s))

  ;; nulls counts the null entries of the table.
  (func (export "nulls") (result i32)
    (local $i i32) (local $c i32)
    (block $done
      (loop $l
        (br_if $done (i32.ge_u (local.get $i) (table.size $t)))
        (if (ref.is_null (table.get $t (local.get $i)))
          (then (local.set $c (i32.add (local.get $c) (i32.const 1)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $l)))
    (local.get $c)))
