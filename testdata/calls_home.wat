;; For tests/calls_test.cc: calls to functions of this module (call_func),
;; to an import (call_import), through a table and as tail calls, and
;; returns from another instance's function, which grows the memory both
;; share (calls_other.wat): each export then stores and loads the last word
;; of the new page, which traps if the return kept the old size.
(module
  (import "other" "mem" (memory 1))
  (import "other" "grow" (func $grow (result i32)))
  (import "other" "grow_void" (func $grow_void))
  (import "other" "grow_pair" (func $grow_pair (result i32 i32)))
  (type $t (func (result i32)))
  (table 2 funcref)
  (elem (i32.const 0) $grow $seven)
  (func $seven (result i32) (i32.const 7))
  ;; mem[size - 4] = 5, then mem[size - 4] + 7 (a call to this module)
  (func $touch (result i32)
    (i32.store (i32.sub (i32.mul (memory.size) (i32.const 65536)) (i32.const 4)) (i32.const 5))
    (i32.add (i32.load (i32.sub (i32.mul (memory.size) (i32.const 65536)) (i32.const 4))) (call $seven)))
  (func (export "by_call") (result i32)
    (drop (call $grow))
    (call $touch))
  ;; returns of no result (ret0) and of two (ret) from the other instance
  (func (export "by_call_void") (result i32)
    (call $grow_void)
    (call $touch))
  (func (export "by_call_pair") (result i32)
    (call $grow_pair)
    (drop)
    (drop)
    (call $touch))
  (func (export "by_table") (result i32)
    (drop (call_indirect (type $t) (i32.const 0)))
    (call $touch))
  ;; $seven through a type equal to its own at another index (calls of this
  ;; instance compare the first index of equal types), and through a type
  ;; that differs, which traps
  (type $t_again (func (result i32)))
  (type $t_param (func (param i32) (result i32)))
  (func (export "by_equal_type") (result i32)
    (call_indirect (type $t_again) (i32.const 1)))
  (func (export "by_other_type") (result i32)
    (call_indirect (type $t_param) (i32.const 5) (i32.const 1)))
  ;; this module's function, whose frame the other instance's takes over
  (func $tail (result i32) (return_call $grow))
  (func $tail_indirect (result i32) (return_call_indirect (type $t) (i32.const 0)))
  (func (export "by_tail") (result i32)
    (drop (call $tail))
    (call $touch))
  (func (export "by_tail_indirect") (result i32)
    (drop (call $tail_indirect))
    (call $touch))
  ;; calls into the other instance at depth n, then touches the new page
  (func $deep (export "deep") (param $n i32) (result i32)
    (if (result i32) (local.get $n)
      (then (call $deep (i32.sub (local.get $n) (i32.const 1))))
      (else (drop (call $grow)) (call $touch))))
  ;; returns of this module's functions with no result, one and two; the
  ;; entry's own return is a ret1
  (func $nothing)
  (func $pair (result i32 i32) (i32.const 3) (i32.const 4))
  (func (export "returns") (result i32)
    (call $nothing)
    (i32.add (call $pair))
    (call $seven)
    (i32.add))
  ;; the entry's return is a ret0, and a ret with two results
  (func (export "entry_void") (call $nothing))
  (func (export "entry_pair") (result i32 i32) (call $pair))
  ;; n + 1 frames: n calls of this module's function
  (func $dive (export "dive") (param $n i32) (result i32)
    (if (result i32) (local.get $n)
      (then (i32.add (call $dive (i32.sub (local.get $n) (i32.const 1))) (i32.const 1)))
      (else (i32.const 0))))
)
