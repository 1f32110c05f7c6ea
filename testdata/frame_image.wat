;; The frame image a call copies (vm/code.h, CompiledFunc::frame_init), for
;; tests/frame_image_test.cc: constants that fusions fold into immediates
;; leave the constant area; locals every path writes before reading them
;; are not zeroed, and those some path reads first still read zero.
(module
  (memory 1)
  (tag $e)
  ;; Fills its frame with 0x5a bytes: the frame of the function its caller
  ;; calls next starts at the same slot, and sees them where it does not zero.
  (func $dirty
    (local i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64)
    (local $v1 v128) (local $v2 v128)
    (local.set 0 (i64.const 0x5a5a5a5a5a5a5a5a))
    (local.set 1 (local.get 0)) (local.set 2 (local.get 0)) (local.set 3 (local.get 0))
    (local.set 4 (local.get 0)) (local.set 5 (local.get 0)) (local.set 6 (local.get 0))
    (local.set 7 (local.get 0)) (local.set 8 (local.get 0)) (local.set 9 (local.get 0))
    (local.set 10 (local.get 0)) (local.set 11 (local.get 0)) (local.set 12 (local.get 0))
    (local.set 13 (local.get 0)) (local.set 14 (local.get 0)) (local.set 15 (local.get 0))
    (local.set $v1 (i64x2.splat (local.get 0))) (local.set $v2 (local.get $v1))
    (call $use (local.get 15) (local.get $v1) (local.get $v2)))
  (func $use (param i64 v128 v128))
  (func $maythrow (param i32) (if (local.get 0) (then (throw $e))))

  ;; $x is read in the loop's first iteration, before the write below it.
  (func $loop_second (export "loop_second_inner") (param $n i32) (result i32)
    (local i64 i64 i64 i64) (local $x i32) (local $acc i32)
    (local.set $acc (i32.const 0))
    (loop $l
      (local.set $acc (i32.add (local.get $acc) (local.get $x)))
      (local.set $x (i32.const 5))
      (br_if $l (local.tee $n (i32.sub (local.get $n) (i32.const 1)))))
    (local.get $acc))
  (func (export "loop_second") (param i32) (result i32) (call $dirty) (call $loop_second (local.get 0)))
  ;; br_if skips the write when $c is not zero.
  (func $br_skip (export "br_skip_inner") (param $c i32) (result i32)
    (local i64 i64 i64 i64) (local $x i32)
    (block (br_if 0 (local.get $c)) (local.set $x (i32.const 9)))
    (local.get $x))
  (func (export "br_skip") (param i32) (result i32) (call $dirty) (call $br_skip (local.get 0)))
  ;; br_table's second target skips it.
  (func $table_skip (export "table_skip_inner") (param $c i32) (result i32)
    (local i64 i64 i64 i64) (local $x i32)
    (block $a (block $b (br_table $b $a (local.get $c))) (local.set $x (i32.const 9)))
    (local.get $x))
  (func (export "table_skip") (param i32) (result i32) (call $dirty) (call $table_skip (local.get 0)))
  ;; an if without else writes it only when $c is not zero; an if with
  ;; else in one arm only
  (func $if_no_else (export "if_no_else_inner") (param $c i32) (result i64)
    (local i64 i64 i64 i64) (local $x i32) (local $y i32)
    (if (local.get $c) (then (local.set $x (i32.const 9))))
    (if (local.get $c) (then (local.set $y (i32.const 7))) (else (nop)))
    (i64.or (i64.extend_i32_u (local.get $x)) (i64.shl (i64.extend_i32_u (local.get $y)) (i64.const 32))))
  (func (export "if_no_else") (param i32) (result i64) (call $dirty) (call $if_no_else (local.get 0)))
  ;; the handler runs when $maythrow threw before the write
  (func $caught (export "caught_inner") (param $c i32) (result i32)
    (local i64 i64 i64 i64) (local $x i32)
    (try (do (call $maythrow (local.get $c)) (local.set $x (i32.const 9))) (catch_all))
    (local.get $x))
  (func (export "caught") (param i32) (result i32) (call $dirty) (call $caught (local.get 0)))
  ;; A v128 read before its write among locals written first: its two
  ;; slots move (zeroed), the others' too (not).
  (func $v128_unwritten (export "v128_unwritten_inner") (param $c i32) (result i64)
    (local i64 i64 i64 i64) (local $a i32) (local $v v128) (local $b i64)
    (local.set $a (local.get $c))
    (local.set $b (i64.extend_i32_u (local.get $a)))
    (if (local.get $c) (then (local.set $v (i64x2.splat (local.get $b)))))
    (i64.add (local.get $b)
             (i64.add (i64x2.extract_lane 0 (local.get $v)) (i64x2.extract_lane 1 (local.get $v)))))
  (func (export "v128_unwritten") (param i32) (result i64) (call $dirty) (call $v128_unwritten (local.get 0)))
  ;; Every local written before any read, and the constants folded: the
  ;; image is the four words of zeros a call copies at least.
  (func $written_first (export "written_first_inner") (param $p i32) (param $q i64) (result i64)
    (local $a i32) (local $b i64) (local $c i64) (local $d i64) (local $e i64)
    (local.set $a (local.get $p))
    (local.set $b (local.get $q))
    (local.set $c (i64.shr_s (i64.shl (local.get $b) (i64.const 32)) (i64.const 32)))
    (local.set $d (i64.shr_s (i64.shl (local.get $b) (i64.const 48)) (i64.const 48)))
    (local.set $e (i64.xor (local.get $c) (local.get $d)))
    (block $two
      (block $one
        (block $zero
          (br_table $zero $one $two (i32.add (local.get $a) (i32.const -1))))
        (return (local.get $c)))
      (return (local.get $d)))
    (local.get $e))
  (func (export "written_first") (param i32 i64) (result i64)
    (call $dirty) (call $written_first (local.get 0) (local.get 1)))
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
