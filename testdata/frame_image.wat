;; The frame image a call copies (vm/code.h, CompiledFunc::frame_init), for
;; tests/frame_image_test.cc: constants that fusions fold into immediates
;; leave the constant area.
(module
  (memory 1)
  ;; Its three constants all end up as immediates or as nothing: the
  ;; shifts become i64.extend32_s (shifts_to_extend), the -1 rebases the
  ;; br_table's index (rebase_switch_index).
  (func (export "folded") (param $p i32) (param $q i64) (result i64)
    (block $two
      (block $one
        (block $zero
          (br_table $zero $one $two (i32.add (local.get $p) (i32.const -1))))
        (return (i64.shr_s (i64.shl (local.get $q) (i64.const 32)) (i64.const 32))))
      (return (i64.shr_s (i64.shl (local.get $q) (i64.const 48)) (i64.const 48))))
    (local.get $q))
  ;; A dead scalar constant before a live v128 one: the v128's two words
  ;; stay together when the scalar goes.
  (func (export "v128_after_dead") (param $p i32) (param $x i64) (result i64)
    (block $one
      (block $zero
        (br_table $zero $one (i32.add (local.get $p) (i32.const -1))))
      (return (i64x2.extract_lane 1 (i64x2.add (i64x2.splat (local.get $x))
                                               (v128.const i64x2 5 0x123456789)))))
    (i64x2.extract_lane 0 (i64x2.add (i64x2.splat (local.get $x)) (v128.const i64x2 5 0x123456789)))))
