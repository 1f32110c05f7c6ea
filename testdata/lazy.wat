;; Lazy lowering (LoadOptions::lazy, tests/lazy_test.cc): bodies entered for
;; the first time by every way in (an export, a direct call, call_indirect,
;; a tail call, from another instance, a recursion), one whose frame only its lowering
;; sizes, and one never called.
(module
  (type $i2i (func (param i32) (result i32)))
  (table 2 funcref)
  (elem (i32.const 0) $double $plus_one)
  (func $double (type $i2i) (i32.mul (local.get 0) (i32.const 2)))
  (func $plus_one (type $i2i) (i32.add (local.get 0) (i32.const 1)))
  ;; 76 locals: its stub's frame is its parameter and four words, its
  ;; lowered frame 77 slots and more.
  (func $big (param i32) (result i32)
    (local $l i64) (local i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64)
    (local i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64)
    (local i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64)
    (local i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64)
    (local.set $l (i64.extend_i32_u (local.get 0)))
    (i32.wrap_i64 (i64.add (local.get $l) (local.get 40))))
  (func (export "direct") (param i32) (result i32) (call $double (local.get 0)))
  (func (export "indirect") (param i32 i32) (result i32)
    (call_indirect (type $i2i) (local.get 0) (local.get 1)))
  (func (export "call_big") (param i32) (result i32) (call $big (local.get 0)))
  ;; n frames deep, then $big's first call
  (func $down (export "down") (param i32) (result i32)
    (if (result i32) (i32.eqz (local.get 0))
      (then (call $big (i32.const 5)))
      (else (call $down (i32.sub (local.get 0) (i32.const 1))))))
  (func (export "unused") (result i32) (i32.const 42))
  (func (export "double") (type $i2i) (call $double (local.get 0)))
  ;; entered for the first time by a tail call
  (func $minus_one (type $i2i) (i32.sub (local.get 0) (i32.const 1)))
  (func (export "tail") (param i32) (result i32) (return_call $minus_one (local.get 0)))
)
