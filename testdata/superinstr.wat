;; Instruction pairs that lowering fuses into one operation (vm/code.h,
;; vm/chains.def): tests/superinstr_test.cc checks their results, the
;; offset a trap in them reports and the instruction counts around it.
(module
  (memory 1)
  ;; i32.add feeding a load: load_add.
  (func (export "load_add") (param i32 i32) (result i32)
    (i32.load (i32.add (local.get 0) (local.get 1))))
  (func (export "load_add_8s") (param i32) (result i32)
    (i32.load8_s offset=1 (i32.add (local.get 0) (i32.const 2))))
  ;; base + (i << 2) feeding a load: the i32.shl+add chain, then load_shl_add.
  (func (export "load_index") (param i32 i32) (result i32)
    (i32.load offset=4 (i32.add (local.get 0) (i32.shl (local.get 1) (i32.const 2)))))
  ;; f64.load feeding an f64 binary as its second operand: bin_load.
  (func (export "bin_load") (param i32 f64) (result f64)
    (f64.sub (local.get 1) (f64.load (local.get 0))))
  ;; an f64 binary feeding f64.store: store_bin.
  (func (export "store_bin") (param i32 f64 f64) (result f64)
    (f64.store offset=8 (local.get 0) (f64.div (local.get 1) (local.get 2)))
    (f64.load offset=8 (local.get 0)))
  ;; Both (x[i] += a * y[j]): store_bin_load, which can trap in its load or its store.
  (func (export "accumulate") (param i32 i32 f64) (result f64)
    (f64.store (local.get 0) (f64.add (local.get 2) (f64.load (local.get 1))))
    (f64.load (local.get 0)))
  ;; Chains: the temporary as the first and as the second operand.
  (func (export "chains") (param i32 i32 i32) (result i32)
    (i32.xor
      (i32.add (local.get 2) (i32.shl (local.get 0) (local.get 1)))     ;; shl+add, temp second
      (i32.xor (i32.rotl (local.get 0) (i32.const 7)) (local.get 2))))  ;; rotl+xor, temp first
  (func (export "product3") (param f64 f64 f64) (result f64)
    (f64.mul (f64.mul (local.get 0) (local.get 1)) (local.get 2)))
  ;; a * b + c: f64.mul+add, rounded twice; c + a * b stays two ops (the
  ;; temporary second: swapped float operands could change a NaN's payload).
  (func (export "mul_add") (param f64 f64 f64) (result f64)
    (f64.add (f64.mul (local.get 0) (local.get 1)) (local.get 2)))
  (func (export "add_mul") (param f64 f64 f64) (result f64)
    (f64.add (local.get 2) (f64.mul (local.get 0) (local.get 1))))
  (func (export "sum4") (param i32 i32 i32 i32) (result i32)
    (i32.add (i32.add (i32.add (local.get 0) (local.get 1)) (local.get 2)) (local.get 3)))
  ;; Two copies in a row, in order: rotate three locals (a, b, c) <- (b, c, a).
  (func (export "rotate") (param i32 i32 i32) (result i32)
    (local i32)
    (local.set 3 (local.get 0))
    (local.set 0 (local.get 1))
    (local.set 1 (local.get 2))
    (local.set 2 (local.get 3))
    (i32.add (i32.mul (local.get 0) (i32.const 100))
             (i32.add (i32.mul (local.get 1) (i32.const 10)) (local.get 2))))
  ;; Two i32.adds whose results go into locals: add2, in order (the second
  ;; reads the local the first wrote).
  (func (export "add_pair") (param i32 i32) (result i32)
    (local.set 0 (i32.add (local.get 0) (i32.const 8)))
    (local.set 1 (i32.add (local.get 1) (local.get 0)))
    (i32.sub (local.get 0) (local.get 1)))
  ;; add2, then a load that traps.
  (func (export "add_pair_trap") (param i32 i32) (result i32)
    (local.set 0 (i32.add (local.get 0) (i32.const 1)))
    (local.set 1 (i32.add (local.get 1) (i32.const 2)))
    (i32.load (local.get 1)))
  ;; A loop closed by a step and a test: i32.add+jump_if.back(I32Ne).
  (func (export "count_up") (param i32) (result i32)
    (local i32 i32)
    (loop
      (local.set 2 (i32.xor (local.get 2) (local.get 1)))
      (br_if 0 (i32.ne (local.tee 1 (i32.add (local.get 1) (i32.const 1))) (local.get 0))))
    (local.get 2))
  (func (export "store_f64") (param i32 f64)
    (f64.store (local.get 0) (local.get 1)))

  ;; Go's shapes. i32.wrap_i64 emits nothing: the i32 is the low half of
  ;; the i64's slot, so every use must read only that half.
  (global $g32 (mut i32) (i32.const 0))
  (func (export "wrap_load") (param i64 i64) (result i32)  ;; load_add of the low halves
    (i32.load (i32.wrap_i64 (i64.add (local.get 0) (local.get 1)))))
  (func (export "wrap_eqz") (param i64) (result i32)
    (i32.eqz (i32.wrap_i64 (local.get 0))))
  (func (export "wrap_extend_u") (param i64) (result i64)
    (i64.extend_i32_u (i32.wrap_i64 (local.get 0))))
  (func (export "wrap_extend_s") (param i64) (result i64)
    (i64.extend_i32_s (i32.wrap_i64 (i64.add (local.get 0) (i64.const 0)))))
  (func (export "wrap_div") (param i32 i64) (result i32)
    (i32.div_u (local.get 0) (i32.wrap_i64 (local.get 1))))
  (func (export "wrap_ret") (param i64) (result i32)
    (i32.wrap_i64 (i64.shl (local.get 0) (i64.const 1))))
  (func (export "wrap_br_if") (param i64) (result i32)
    (block (result i32)
      (drop (br_if 0 (i32.const 1) (i32.wrap_i64 (local.get 0))))
      (i32.const 2)))
  ;; the i64.add writes straight into the i32 local (local.set's redirect)
  (func (export "wrap_set") (param i64) (result i64)
    (local i32)
    (local.set 1 (i32.wrap_i64 (i64.add (local.get 0) (local.get 0))))
    (i64.extend_i32_u (local.get 1)))
  (func (export "wrap_global") (param i64) (result i64)
    (global.set $g32 (i32.wrap_i64 (i64.mul (local.get 0) (i64.const 3))))
    (i64.extend_i32_u (global.get $g32)))

;; Go keeps bools as i64: i64.extend_i32_u of a comparison emits nothing,
  ;; the comparison having written its 0 or 1 zero-extended into the whole
  ;; slot. Each first leaves a wide value in the slot the comparison reuses.
  (func (export "bool64") (param i64 i64) (result i64)
    (drop (i64.add (local.get 0) (local.get 1)))
    (i64.extend_i32_u (i64.lt_u (local.get 0) (local.get 1))))
  (func (export "bool64_imm") (param i64) (result i64)
    (drop (i64.add (local.get 0) (local.get 0)))
    (i64.extend_i32_u (i64.lt_u (local.get 0) (i64.const 5))))
  (func (export "bool64_f64") (param f64 f64) (result i64)
    (drop (i64.reinterpret_f64 (local.get 0)))
    (i64.extend_i32_u (f64.lt (local.get 0) (local.get 1))))
  ;; Go's `if b` on b = (x == 0) kept as an i64: eqz, extend, eqz, eqz, if
  (func (export "go_bool_if") (param i64) (result i32)
    (if (result i32) (i32.eqz (i64.eqz (i64.extend_i32_u (i64.eqz (local.get 0)))))
      (then (i32.const 1)) (else (i32.const 2))))
  (func (export "eqz3") (param i32) (result i32)
    (i32.eqz (i32.eqz (i32.eqz (local.get 0)))))
  ;; Go's int32 conversion: shifted up and back, a sign extension
  (func (export "sext32") (param i64) (result i64)
    (i64.shr_s (i64.shl (local.get 0) (i64.const 32)) (i64.const 32)))
  (func (export "sext16") (param i64) (result i64)
    (i64.shr_s (i64.shl (local.get 0) (i64.const 48)) (i64.const 48)))
  (func (export "sext8") (param i64) (result i64)
    (i64.shr_s (i64.shl (local.get 0) (i64.const 56)) (i64.const 56)))
  ;; an int32 read with i64.load32_s, then converted so: the shifts go
  (func (export "load32s_sext") (param i32) (result i64)
    (i64.add (i64.const 1)
      (i64.shr_s (i64.shl (i64.load32_s offset=4 (local.get 0)) (i64.const 32)) (i64.const 32))))
  (func (export "load32s_sext_store") (param i32 i32)
    (i64.store (local.get 1)
      (i64.shr_s (i64.shl (i64.load32_s (local.get 0)) (i64.const 32)) (i64.const 32))))
  ;; ... but stay after an i64.load32_u, and when they read the local the
  ;; load went into
  (func (export "load32u_sext") (param i32) (result i64)
    (i64.shr_s (i64.shl (i64.load32_u (local.get 0)) (i64.const 32)) (i64.const 32)))
  (func (export "load32s_teed_sext") (param i32) (result i64) (local i64)
    (i64.shr_s (i64.shl (local.tee 1 (i64.load32_s (local.get 0))) (i64.const 32)) (i64.const 32)))
  (func (export "shl_shr_unequal") (param i64) (result i64)
    (i64.shr_s (i64.shl (local.get 0) (i64.const 32)) (i64.const 31)))
  ;; the constant area full (4 outside loops): the shift's immediate and a const64
  (func (export "sext32_full") (param i64) (result i64)
    (local $s i64)
    (local.set $s (i64.add (local.get $s) (i64.const 1000)))
    (local.set $s (i64.add (local.get $s) (i64.const 1001)))
    (local.set $s (i64.add (local.get $s) (i64.const 1002)))
    (local.set $s (i64.add (local.get $s) (i64.const 1003)))
    (i64.add (local.get $s) (i64.shr_s (i64.shl (local.get 0) (i64.const 32)) (i64.const 32))))
  ;; Go after a call: the stack pointer reloaded into its local, then a
  ;; test of the call's result: one op, global.get+jump_if (or _unless)
  (func (export "gg_br_if") (param i32) (result i32)
    (local i32)
    (block
      (local.set 1 (global.get $g32))
      (br_if 0 (local.get 0))
      (local.set 1 (i32.const 5)))
    (local.get 1))
  (func (export "gg_br_unless") (param i32) (result i32)
    (local i32)
    (block
      (local.set 1 (global.get $g32))
      (br_if 0 (i32.eqz (local.get 0)))
      (local.set 1 (i32.const 5)))
    (local.get 1))
  ;; into a local that held a wide value (local.set's redirect)
  (func (export "bool64_set") (param i64 i64) (result i64)
    (local i64)
    (local.set 2 (local.get 0))
    (local.set 2 (i64.extend_i32_u (i64.gt_s (local.get 0) (local.get 1))))
    (local.get 2))

  ;; i32.eqz of an integer compare is the negated compare, which then fuses
  ;; with the branch; a float compare is never negated (NaN).
  (func (export "not_lt_u") (param i64 i64) (result i32)
    (if (result i32) (i32.eqz (i64.lt_u (local.get 0) (local.get 1)))
      (then (i32.const 1)) (else (i32.const 0))))
  (func (export "not_gt_s") (param i64 i64) (result i32)
    (i32.eqz (i64.gt_s (local.get 0) (local.get 1))))
  ;; Go's stack addressing, zext(SP) + c wrapped: i32.add, then load_add.
  (func (export "sp_load") (param i32) (result i64)
    (i64.load (i32.wrap_i64 (i64.add (i64.extend_i32_u (local.get 0)) (i64.const 0x100000048)))))
  ;; Two i64 stores in a row (Go's results and arguments): a paired op.
  (func (export "two_stores64") (param i32 i64 i64) (result i64)
    (i64.store (local.get 0) (local.get 1))
    (i64.store offset=8 (local.get 0) (local.get 2))
    (i64.sub (i64.load (local.get 0)) (i64.load offset=8 (local.get 0))))
  ;; An i32.add feeding a store's address: store_add, then read back at
  ;; the same sum; Go's zext(SP) + c wrapped feeding a store, narrowed first.
  (func (export "store_add") (param i32 i32 i64) (result i64)
    (i64.store offset=8 (i32.add (local.get 0) (local.get 1)) (local.get 2))
    (i64.load offset=8 (i32.add (local.get 0) (local.get 1))))
  (func (export "sp_store") (param i32 i64)
    (i64.store32 (i32.wrap_i64 (i64.add (i64.extend_i32_u (local.get 0)) (i64.const 0x100000048)))
      (local.get 1)))
  ;; Go's frame: two stores at SP + c, then two loads at SP + c (the second
  ;; load's address the first's value): paired, each op whole.
  (func (export "sp_pairs") (param i32 i64 i64) (result i64)
    (i64.store (i32.add (local.get 0) (i32.const 8)) (local.get 1))
    (i64.store (i32.add (local.get 0) (i32.const 16)) (local.get 2))
    (i64.load (i32.add (i32.wrap_i64 (i64.load (i32.add (local.get 0) (i32.const 8)))) (i32.const 8))))
  ;; The sum teed into a local before the store: not fused (the local is written).
  (func (export "store_add_teed") (param i32 i32) (result i32) (local i32)
    (i32.store8 (local.tee 2 (i32.add (local.get 0) (local.get 1))) (i32.const 0x1ff))
    (i32.add (local.get 2) (i32.load8_u (local.get 2))))
  ;; i64 chains: mul+add with the temporary second, shl+add, add+add.
  (func (export "i64_chains") (param i64 i64 i64) (result i64)
    (i64.xor
      (i64.add (local.get 2) (i64.mul (local.get 0) (local.get 1)))
      (i64.add (i64.add (i64.shl (local.get 0) (i64.const 3)) (local.get 2)) (local.get 1))))
  ;; &a[i] of 12-byte structs, teed into a local and read through it at once,
  ;; then again: i64.mul+add+i64.load32_u, then a plain load.
  (func (export "index_load") (param i64 i64) (result i64) (local i64)
    (i64.add
      (i64.load32_u (i32.wrap_i64 (local.tee 2 (i64.add (local.get 0) (i64.mul (local.get 1) (i64.const 12))))))
      (i64.load32_u offset=4 (i32.wrap_i64 (local.get 2)))))
  ;; A binary search's midpoint: the sum shifted, i64.add+shr_u; the sum as
  ;; the shift's count does not chain (a shift's operands do not commute).
  (func (export "midpoint") (param i64 i64) (result i64)
    (i64.shr_u (i64.add (local.get 0) (local.get 1)) (i64.const 1)))
  (func (export "shift_by_sum") (param i64 i64) (result i64)
    (i64.shr_u (local.get 0) (i64.add (local.get 1) (local.get 1))))
  ;; i64.eqz feeding a branch: a compare with zero from the constant area.
  (func (export "eqz64_if") (param i64) (result i32)
    (if (result i32) (i64.eqz (local.get 0)) (then (i32.const 1)) (else (i32.const 2))))
  (func (export "eqz64_br_if") (param i64) (result i32)
    (block (result i32)
      (drop (br_if 0 (i32.const 1) (i64.eqz (local.get 0))))
      (i32.const 2)))
  (func (export "not_flt") (param f64 f64) (result i32)
    (i32.eqz (f64.lt (local.get 0) (local.get 1))))

  ;; Go's jumps: `i32.const N; local.set 0; br $top` to a loop whose first
  ;; op switches on local 0 over the resume points. Jumps go straight to
  ;; the switch's target. Sums n + (n-1) + ... + 1 from resume point 0.
  (func (export "go_shape") (param $pc i32) (param $n i32) (result i32)
    (local $acc i32)
    (loop $top
      (block $b2
        (block $b1
          (block $b0
            (br_table $b0 $b1 $b2 (local.get $pc)))
          ;; resume point 0: start
          (local.set $acc (i32.const 0))
          (local.set $pc (i32.const 1))
          (br $top))
        ;; resume point 1: the loop body
        (local.set $acc (i32.add (local.get $acc) (local.get $n)))
        (local.set $n (i32.sub (local.get $n) (i32.const 1)))
        (if (local.get $n) (then (local.set $pc (i32.const 1)) (br $top)))
        (local.set $pc (i32.const 7))  ;; past the table: its default, $b2
        (br $top)))
    ;; resume point 2 and beyond: done
    (local.get $acc))
  ;; The same, reading $pc after the loop: the writes before the jumps stay.
  (func (export "go_shape_reads") (param $pc i32) (param $n i32) (result i32)
    (local $acc i32)
    (loop $top
      (block $b2
        (block $b1
          (block $b0
            (br_table $b0 $b1 $b2 (local.get $pc)))
          (local.set $acc (i32.const 0))
          (local.set $pc (i32.const 1))
          (br $top))
        (local.set $acc (i32.add (local.get $acc) (local.get $n)))
        (local.set $n (i32.sub (local.get $n) (i32.const 1)))
        (if (local.get $n) (then (local.set $pc (i32.const 1)) (br $top)))
        (local.set $pc (i32.const 7))
        (br $top)))
    (i32.add (local.get $acc) (local.get $pc)))
  ;; go_shape with a run of three writes before the start's jump (copy3):
  ;; the dead write of $pc, the run's last copy, goes; the run is a copy2.
  (func (export "go_run") (param $pc i32) (param $n i32) (result i32)
    (local $acc i32) (local $k i32)
    (loop $top
      (block $b2
        (block $b1
          (block $b0
            (br_table $b0 $b1 $b2 (local.get $pc)))
          (local.set $acc (i32.const 0))
          (local.set $k (local.get $n))
          (local.set $pc (i32.const 1))
          (br $top))
        (local.set $acc (i32.add (local.get $acc) (local.get $k)))
        (local.set $k (i32.sub (local.get $k) (i32.const 1)))
        (if (local.get $k) (then (local.set $pc (i32.const 1)) (br $top)))
        (local.set $pc (i32.const 7))
        (br $top)))
    (i32.add (local.get $acc) (local.get $n)))
  ;; The same loop run twice by an outer one: the second run starts from
  ;; the $pc the first left (2: done at once), so the writes stay.
  (func (export "go_twice") (param $n i32) (result i32)
    (local $pc i32) (local $acc i32) (local $round i32)
    (loop $outer
      (loop $top
        (block $b2
          (block $b1
            (block $b0
              (br_table $b0 $b1 $b2 (local.get $pc)))
            (local.set $pc (i32.const 1))
            (br $top))
          (local.set $acc (i32.add (local.get $acc) (local.get $n)))
          (local.set $n (i32.sub (local.get $n) (i32.const 1)))
          (if (local.get $n) (then (local.set $pc (i32.const 1)) (br $top)))
          (local.set $pc (i32.const 2))
          (br $top)))
      (local.set $n (i32.const 5))
      (br_if $outer (i32.lt_u (local.tee $round (i32.add (local.get $round) (i32.const 1))) (i32.const 2))))
    (local.get $acc))
  ;; Go's shape with a trap at a resume point that threaded jumps reach:
  ;; point 1 divides by $n - 1, zero on the pass where $n is 1.
  (func (export "go_trap") (param $pc i32) (param $n i32) (result i32)
    (local $acc i32)
    (loop $top
      (block $b2
        (block $b1
          (block $b0
            (br_table $b0 $b1 $b2 (local.get $pc)))
          (local.set $pc (i32.const 1))
          (br $top))
        (local.set $acc (i32.add (local.get $acc)
                                 (i32.div_u (i32.const 12) (i32.sub (local.get $n) (i32.const 1)))))
        (local.set $n (i32.sub (local.get $n) (i32.const 1)))
        (local.set $pc (i32.const 1))
        (br $top)))
    (local.get $acc))
;; More constants than a function's constant area holds (64 in loops, 4
  ;; outside): the others are const ops, which the binary after them takes
  ;; as immediates.
  (func (export "imm_ops") (param $a i32) (param $b i64) (param $d i32) (result i64)
    (local $s i32)
    (local.set $s (i32.add (local.get $s) (i32.const 1000)))
    (local.set $s (i32.add (local.get $s) (i32.const 1001)))
    (local.set $s (i32.add (local.get $s) (i32.const 1002)))
    (local.set $s (i32.add (local.get $s) (i32.const 1003)))
    (local.set $s (i32.add (local.get $s) (i32.const 1004)))
    (local.set $s (i32.add (local.get $s) (i32.const 1005)))
    (local.set $s (i32.add (local.get $s) (i32.const 1006)))
    (local.set $s (i32.add (local.get $s) (i32.const 1007)))
    (i64.add
      (i64.extend_i32_u
        (i32.xor
          (i32.add (local.get $s)                                    ;; 1000 + ... + 1007 = 8028
            (i32.shr_u (local.get $a) (i32.const 3)))                ;; imm(I32ShrU)
          (i32.div_u (local.get $a) (local.get $d))))                ;; no constant: a plain op
      (i64.add (i64.rotl (local.get $b) (i64.const 13))             ;; imm(I64Rotl)
               (i64.const 0x123456789abcdef))))                     ;; imm(I64Add), two words
  ;; a trapping op with an immediate divisor
  (func (export "imm_div") (param $a i32) (result i32)
    (local $s i32)
    (local.set $s (i32.add (local.get $s) (i32.const 1000)))
    (local.set $s (i32.add (local.get $s) (i32.const 1001)))
    (local.set $s (i32.add (local.get $s) (i32.const 1002)))
    (local.set $s (i32.add (local.get $s) (i32.const 1003)))
    (local.set $s (i32.add (local.get $s) (i32.const 1004)))
    (local.set $s (i32.add (local.get $s) (i32.const 1005)))
    (local.set $s (i32.add (local.get $s) (i32.const 1006)))
    (local.set $s (i32.add (local.get $s) (i32.const 1007)))
    (i32.add (local.get $s) (i32.div_s (local.get $a) (i32.const 0))))
;; Loads in a row run as one paired op (vm/mem_pairs.def), both in order.
  ;; At 1024: 1040, 1020, 1032, 65532; at 1040 a struct: 1, 2, 0x12345678, 0x9abcdef0.
  (data (i32.const 1024) "\10\04\00\00\fc\03\00\00\08\04\00\00\fc\ff\00\00"
                         "\01\00\00\00\02\00\00\00\78\56\34\12\f0\de\bc\9a")
  ;; p->a->b: the second address is the first load's result, a temporary.
  (func (export "chase") (param i32) (result i32)
    (i32.load offset=8 (i32.load offset=4 (local.get 0))))
  ;; the first result kept in a local too, then a byte behind it
  (func (export "chase_tee") (param i32) (result i32)
    (local i32)
    (i32.add (i32.load8_u offset=8 (local.tee 1 (i32.load (local.get 0)))) (local.get 1)))
  ;; two fields of one struct
  (func (export "two_fields") (param i32) (result i32)
    (i32.sub (i32.load offset=4 (local.get 0)) (i32.load offset=12 (local.get 0))))
  ;; three in a row: two pairs, the second inside the first
  (func (export "chase3") (param i32) (result i32)
    (i32.load offset=8 (i32.load offset=4 (i32.load (local.get 0)))))
  ;; a store, then a load of what it stored
  (func (export "store_load") (param i32 i32) (result i32)
    (i32.store offset=4 (local.get 0) (local.get 1))
    (i32.load offset=2 (local.get 0)))
  ;; Arguments copied from locals right before a call: copy+call_func and
  ;; copy2+call_func (vm/internal_ops.def), the call whole after the copy.
  (func $load_at (param i32) (result i32)
    (i32.load (local.get 0)))
  (func $sub3 (param i32 i32 i32) (result i32)
    (i32.sub (i32.sub (local.get 0) (local.get 1)) (local.get 2)))
  (func (export "call_one") (param i32) (result i32)
    (call $load_at (local.get 0)))
  (func $sub2 (param i32 i32) (result i32)
    (i32.sub (local.get 0) (local.get 1)))
  (func (export "call_two") (param i32 i32) (result i32)
    (call $sub2 (local.get 1) (local.get 0)))
  ;; copy2 copy call_func: the single copy is the one paired
  (func (export "call_three") (param i32 i32 i32) (result i32)
    (call $sub3 (local.get 1) (local.get 2) (local.get 0)))
  ;; copy3 and copy4 runs paired with their calls (merge_copy, pair_copy_call)
  (func $sub4 (param i32 i32 i32 i32) (result i32)
    (i32.sub (i32.sub (i32.sub (local.get 0) (local.get 1)) (local.get 2)) (local.get 3)))
  (func (export "call_three_run") (param i32 i32 i32) (result i32)
    (local i32)
    (local.set 3 (local.get 0))
    (call $sub3 (local.get 1) (local.get 2) (local.get 3)))
  (func (export "call_four") (param i32 i32 i32 i32) (result i32)
    (call $sub4 (local.get 3) (local.get 2) (local.get 1) (local.get 0)))
  ;; Five local-to-local moves in a row: copy4, then a copy (a run is at
  ;; most four); each reads what the ones before it wrote. The load after
  ;; them traps for an address past the memory.
  (func (export "copy_run") (param i32 i32) (result i32)
    (local i32 i32 i32 i32)
    (local.set 2 (local.get 0))
    (local.set 3 (local.get 2))
    (local.set 4 (local.get 1))
    (local.set 5 (local.get 3))
    (local.set 0 (local.get 4))
    (i32.load (i32.sub (local.get 5) (local.get 0))))
  ;; A copy right before a jump_unless (an `if` on a local), a jump_if back
  ;; to a loop and a jump out of a block: copy+jump_unless, copy+jump_if,
  ;; copy+jump (pair_copy_jumps). Sums the odd numbers up to n, doubled.
  (func (export "copy_jumps") (param $n i32) (result i32)
    (local $acc i32) (local $prev i32) (local $odd i32)
    (loop $l
      (local.set $odd (i32.and (local.get $n) (i32.const 1)))
      (local.set $prev (local.get $n))
      (if (local.get $odd)
        (then (local.set $acc (i32.add (local.get $acc) (local.get $prev)))))
      (local.set $n (i32.sub (local.get $n) (i32.const 1)))
      (local.set $prev (local.get $acc))
      (br_if $l (local.get $n)))
    (block $out
      (local.set $acc (i32.add (local.get $acc) (local.get $prev)))
      (local.set $prev (local.get $n))
      (br $out))
    (i32.add (local.get $acc) (local.get $prev)))
  ;; n levels deep, each call's argument a local: a stack overflow traps at
  ;; the paired call
  (func $deep (export "call_deep") (param i32) (result i32)
    (local i32)
    (if (result i32) (local.get 0)
      (then
        (local.set 1 (i32.sub (local.get 0) (i32.const 1)))
        (i32.add (call $deep (local.get 1)) (i32.const 2)))
      (else (i32.const 0))))
  ;; the block's result is copied into its slot, the call's argument, on the
  ;; way in: the branch lands between that copy and the call, which stay apart
  (func (export "call_after_label") (param i32 i32 i32) (result i32)
    (call $load_at
      (block (result i32)
        (drop (br_if 0 (local.get 0) (local.get 1)))
        (local.get 2))))
  ;; A br_table on x - k (clang's `switch` over cases numbered from k: Lua's
  ;; and CPython's bytecode loops) switches on x, its table k entries longer
  ;; in front, to the default; the add goes (vm/lower/fusion.cc,
  ;; rebase_switch_index). Here k = 2 from the constant area, then an
  ;; immediate k = 1 past it, a table carrying a value, and an add a branch
  ;; target separates from the switch.
  (func (export "switch_rebased") (param i32) (result i32)
    (block $d
      (block $c
        (block $b
          (block $a
            (br_table $a $b $c $d (i32.add (local.get 0) (i32.const -2))))
          (return (i32.const 10)))
        (return (i32.const 11)))
      (return (i32.const 12)))
    (unreachable))
  (func (export "switch_rebased_imm") (param i32) (result i32)
    (local i32)
    (local.set 1 (i32.add (local.get 0) (i32.const 1000)))
    (local.set 1 (i32.xor (local.get 1) (i32.const 2000)))
    (local.set 1 (i32.sub (local.get 1) (i32.const 3000)))
    (local.set 1 (i32.or (local.get 1) (i32.const 4000)))
    (block $c
      (block $b
        (block $a
          (br_table $a $b $c (i32.add (local.get 0) (i32.const -1))))
        (return (i32.const 20)))
      (return (i32.const 21)))
    (i32.const 29))
  (func (export "switch_rebased_value") (param i32) (result i32)
    (block $d (result i32)
      (block $a (result i32)
        (br_table $a $d (i32.mul (local.get 0) (i32.const 3)) (i32.add (local.get 0) (i32.const -1))))
      (i32.add (i32.const 100))))
  (func (export "switch_after_label") (param i32 i32) (result i32)
    (block $d
      (block $b
        (block $a
          (br_table $a $b $d
            (block (result i32)
              (drop (br_if 0 (local.get 0) (local.get 1)))
              (i32.add (local.get 0) (i32.const -2)))))
        (return (i32.const 10)))
      (return (i32.const 11)))
    (i32.const 99))
  ;; A load at a constant below a pointer, the constant past the constant
  ;; area (an immediate of the add): one op (vm/lower/fusion.cc, fuse_load),
  ;; the address wrapping to 32 bits before the offset is added.
  (func (export "load_add_imm") (param i32) (result i32)
    (local i32)
    (local.set 1 (i32.add (local.get 0) (i32.const 1000)))
    (local.set 1 (i32.xor (local.get 1) (i32.const 2000)))
    (local.set 1 (i32.sub (local.get 1) (i32.const 3000)))
    (local.set 1 (i32.or (local.get 1) (i32.const 4000)))
    (i32.load offset=4 (i32.add (local.get 0) (i32.const -8))))
  ;; A load of the index right before its br_table: one dispatch, the load's
  ;; op word the pair's, the switch whole after it (vm/switch_pairs.def).
  ;; At 1040: 1, 2, 0x12345678; at 1024: 1040; the first page's low words 0.
  (func (export "switch_load") (param i32) (result i32)
    (block $d
      (block $c
        (block $b
          (block $a
            (br_table $a $b $c $d (i32.load offset=4 (local.get 0))))
          (return (i32.const 10)))
        (return (i32.const 11)))
      (return (i32.const 12)))
    (i32.const 99))
  ;; the byte teed into a local first (SQLite's opcode), which the cases read
  (func (export "switch_load8_tee") (param i32) (result i32)
    (local i32)
    (block $c
      (block $b
        (block $a
          (br_table $a $b $c (local.tee 1 (i32.load8_u offset=1 (local.get 0)))))
        (return (i32.add (local.get 1) (i32.const 100))))
      (return (i32.add (local.get 1) (i32.const 200))))
    (i32.add (local.get 1) (i32.const 300)))
  ;; an indexed load (load_shl_add(I32Load), Lua's), the shift wrapping
  (func (export "switch_load_index") (param i32 i32) (result i32)
    (block $c
      (block $b
        (block $a
          (br_table $a $b $c (i32.load (i32.add (local.get 0) (i32.shl (local.get 1) (i32.const 2))))))
        (return (i32.const 20)))
      (return (i32.const 21)))
    (i32.const 29))
  ;; the switch on a loaded x - 3 (Lua's `(op = *pc) - k`): rebased to x,
  ;; then paired with the load. At 1025: 4; at 1029: 3; at 1032: 8.
  (func (export "switch_load_rebased") (param i32) (result i32)
    (block $c
      (block $b
        (block $a
          (br_table $a $b $c (i32.add (i32.load8_u offset=8 (local.get 0)) (i32.const -3))))
        (return (i32.const 30)))
      (return (i32.const 31)))
    (i32.const 39))
  ;; the load is the value the br_table carries, not its index: no pair
  (func (export "switch_carries_load") (param i32 i32) (result i32)
    (block $b (result i32)
      (i32.add
        (block $a (result i32)
          (br_table $a $b (i32.load (local.get 0)) (local.get 1)))
        (i32.const 1000))))
  ;; a branch target between the load and the br_table: no pair
  (func (export "switch_load_after_label") (param i32 i32) (result i32)
    (block $b
      (block $a
        (br_table $a $b
          (block (result i32)
            (drop (br_if 0 (local.get 1) (local.get 1)))
            (i32.load (local.get 0)))))
      (return (i32.const 10)))
    (i32.const 11))
  ;; Constants past the constant area (four outside loops): one the area
  ;; holds is named in place; a load's or store's constant address goes into
  ;; its offset, its address slot a zero of the area (no const32 left).
  (func (export "const_full") (param i32) (result i32)
    (local i32)
    (local.set 1 (i32.add (local.get 0) (i32.const 1000)))
    (local.set 1 (i32.xor (local.get 1) (i32.const 2000)))
    (local.set 1 (i32.sub (local.get 1) (i32.const 3000)))
    (local.set 1 (i32.or (local.get 1) (i32.const 0)))
    (local.set 1 (i32.add (local.get 1) (i32.const 2000)))
    (i32.store offset=8 (i32.const 4096) (local.get 1))
    (i32.add (i32.load offset=4 (i32.const 1036)) (i32.load (i32.const 4104))))
  (func (export "const_addr_trap") (param i32) (result i32)
    (i32.add (i32.add (i32.add (i32.add (local.get 0) (i32.const 1)) (i32.const 2)) (i32.const 3)) (i32.const 0))
    (i32.load offset=2 (i32.const 65532))
    (i32.add))
  (func (export "const_store_trap") (param i32)
    (drop (i32.add (i32.add (i32.add (i32.add (local.get 0) (i32.const 1)) (i32.const 2)) (i32.const 3)) (i32.const 0)))
    (i32.store offset=8 (i32.const 65528) (local.get 0)))
  ;; resume point 0 jumps to itself for ever: a back edge still, which an
  ;; interrupt stops
  (func (export "go_spin") (param $pc i32) (result i32)
    (loop $top
      (block $b1
        (block $b0
          (br_table $b0 $b1 (local.get $pc)))
        (local.set $pc (i32.const 0))
        (br $top)))
    (i32.const 7))
  ;; Go's loops test their exit at the head: the body's jump back (threaded
  ;; to resume point 1) lands on the fused `jump_unless(I64GeS)`, and is
  ;; lowered as that test, a backward `jump_if.back(I64LtS)` to the body,
  ;; then a jump where the exit's jump goes (rotate_back_edge). Sums the
  ;; i64s at p, p + 8, ... p + 8(n-1), plus 0 + 1 + ... + (n-1) << 32.
  (func (export "go_loop") (param $p i32) (param $n i64) (result i64)
    (local $pc i32) (local $i i64) (local $acc i64)
    (loop $top
      (block $b2
        (block $b1
          (block $b0
            (br_table $b0 $b1 $b2 (local.get $pc)))
          ;; resume point 0: start
          (local.set $i (i64.const 0))
          (local.set $acc (i64.const 0))
          (local.set $pc (i32.const 1))
          (br $top))
        ;; resume point 1: the loop's head, then its body
        (if (i32.eqz (i64.lt_s (local.get $i) (local.get $n)))
          (then (local.set $pc (i32.const 2)) (br $top)))
        (local.set $acc (i64.add (local.get $acc)
          (i64.add (i64.load (i32.add (local.get $p) (i32.wrap_i64 (i64.shl (local.get $i) (i64.const 3)))))
                   (i64.shl (local.get $i) (i64.const 32)))))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (local.set $pc (i32.const 1))
        (br $top)))
    ;; resume point 2: done
    (local.get $acc))
  ;; go_loop's shape without the load: counts i up to n.
  (func (export "go_upto") (param $n i64) (result i64)
    (local $pc i32) (local $i i64)
    (loop $top
      (block $b1
        (block $b0
          (br_table $b0 $b1 (local.get $pc)))
        (if (i32.eqz (i64.lt_s (local.get $i) (local.get $n)))
          (then (local.set $pc (i32.const 1)) (br $top)))
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (local.set $pc (i32.const 0))
        (br $top)))
    (local.get $i))
  ;; clang's unrotated `while (i < n)`: the head's test jumps to the exit,
  ;; not bound yet at the back edge, so the back edge is the inverted test,
  ;; `jump_if.back(I32LtS)` to the body, then a jump to the exit.
  (func (export "while_lt") (param $n i32) (result i32)
    (local $i i32) (local $acc i32)
    (block $exit
      (loop $l
        (br_if $exit (i32.ge_s (local.get $i) (local.get $n)))
        (local.set $acc (i32.xor (local.get $acc) (i32.mul (local.get $i) (local.get $i))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $l)))
    (local.get $acc))
  ;; The same on a float test: `f64.ge` has no negation (NaN), so no
  ;; inverted test; the back edge stays a jump to the head.
  (func (export "while_flt") (param $n f64) (result i32)
    (local $x f64) (local $k i32)
    (block $exit
      (loop $l
        (br_if $exit (f64.ge (local.get $x) (local.get $n)))
        (local.set $x (f64.add (local.get $x) (f64.const 1)))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $l)))
    (local.get $k))
  ;; A loop's step and its test, one dispatch (vm/step_jumps.def): `i++`
  ;; right before the test that closes the loop, here after a label (the
  ;; block's end, where `br $next` skips the step once: the test runs alone
  ;; there). Returns acc << 32 | i: acc counts the passes.
  (func (export "step_label") (param $n i64) (param $skip i64) (result i64)
    (local $i i64) (local $acc i64)
    (loop $l
      (block $next
        (local.set $acc (i64.add (local.get $acc) (i64.const 1)))
        (br_if $next (i64.eq (local.get $acc) (local.get $skip)))
        (local.set $i (i64.add (local.get $i) (i64.const 1))))
      (br_if $l (i64.lt_s (local.get $i) (local.get $n))))
    (i64.add (i64.shl (local.get $acc) (i64.const 32)) (local.get $i)))
  ;; The step, then the exit test forward (Go's `if !(i < n) { break }`:
  ;; jump_unless(I64GeS) past the exit), the body loading at p + 8i: a trap
  ;; in the body after a paired step. Sums the i64s at p + 8, ... p + 8n.
  (func (export "step_exit") (param $p i32) (param $n i64) (result i64)
    (local $i i64) (local $acc i64)
    (block $exit
      (loop $l
        (local.set $i (i64.add (local.get $i) (i64.const 1)))
        (if (i32.eqz (i64.lt_s (local.get $n) (local.get $i)))
          (then
            (local.set $acc (i64.add (local.get $acc)
              (i64.load (i32.add (local.get $p) (i32.wrap_i64 (i64.shl (local.get $i) (i64.const 3)))))))
            (br $l)))))
    (local.get $acc))
  ;; Go's pointer chase: an i64.load whose low half addresses the next
  ;; i64.load (the wrap emits nothing), one paired op (vm/mem_pairs.def).
  ;; At 1536 the pointer 1552, at 1544 the pointer 65532; at 1560 an i64.
  (data (i32.const 1536) "\10\06\00\00\ff\ff\ff\ff\fc\ff\00\00\00\00\00\00"
                         "\00\00\00\00\00\00\00\00\88\77\66\55\44\33\22\11")
  (func (export "chase64") (param i32) (result i64)
    (i64.load offset=8 (i32.wrap_i64 (i64.load (local.get 0)))))
  ;; Go's stack pointer moves: SP - x into a local, then global.set of it,
  ;; and back: i32.sub+global.set and i32.add+global.set
  ;; (vm/internal_ops.def), each global.set whole after its op. Returns the
  ;; SP the frame had, xor the SP after it, shifted.
  (global $sp (mut i32) (i32.const 8192))
  (func (export "sp_frame") (param i32) (result i32)
    (local i32 i32)
    (global.set $sp (local.tee 1 (i32.sub (global.get $sp) (local.get 0))))
    (i32.store (local.get 1) (i32.const 7))
    (local.set 2 (global.get $sp))
    (global.set $sp (local.tee 1 (i32.add (local.get 1) (local.get 0))))
    (i32.xor (local.get 2) (i32.shl (global.get $sp) (i32.const 16))))
  (func (export "sp_get") (result i32) (global.get $sp))
  ;; a block ends between the sub and the global.set: a branch lands on the
  ;; global.set, so no pair
  (func (export "sp_after_label") (param i32 i32) (result i32)
    (local i32)
    (local.set 2 (global.get $sp))
    (block
      (br_if 0 (local.get 1))
      (local.set 2 (i32.sub (local.get 2) (local.get 0))))
    (global.set $sp (local.get 2))
    (global.get $sp))
  ;; Go's function entry and return (vm/lower/fusion.cc, pair_go_frames):
  ;; the stack pointer into local 1 right before the switch over resume
  ;; points on local 0 (global.get+switch); the frame and the return
  ;; address's word popped before `return 0` (i32.add+global.set2+ret1), each
  ;; op whole after the op word. Resume point 0 moves the frame down and
  ;; stores into it; 1 jumps to the epilogue's first pair, 2 past it: returns
  ;; the SP it saw, plus 1, the SP unchanged.
  (func $go_frame (export "go_frame") (param $pc i32) (result i32)
    (local i32)
    (local.set 1 (global.get $sp))
    (block $b2
      (block $b1
        (block $b0
          (br_table $b0 $b1 $b2 (local.get $pc)))
        (global.set $sp (local.tee 1 (i32.sub (local.get 1) (i32.const 16))))
        (i32.store (local.get 1) (i32.const 7)))
      (global.set $sp (local.tee 1 (i32.add (local.get 1) (i32.const 16))))
      (global.set $sp (local.tee 1 (i32.add (local.get 1) (i32.const 8))))
      (return (i32.const 0)))
    (i32.add (local.get 1) (i32.const 1)))
  ;; called from wasm: the epilogue returns to its caller's frame (an
  ;; export called from the host returns through the entry's check)
  (func (export "go_frame_caller") (param $pc i32) (result i32)
    (i32.add (call $go_frame (local.get $pc)) (i32.const 1000)))
  ;; a label between the two pairs: resume point 1 lands on the second,
  ;; which runs with the ret1 alone
  (func (export "go_frame_mid") (param $pc i32) (result i32)
    (local i32)
    (local.set 1 (global.get $sp))
    (block $b1
      (block $b0
        (br_table $b0 $b1 (local.get $pc)))
      (global.set $sp (local.tee 1 (i32.add (local.get 1) (i32.const 16)))))
    (global.set $sp (local.tee 1 (i32.add (local.get 1) (i32.const 8))))
    (return (i32.const 0)))
  ;; Stack pointer moves that do not store their own result stay as they are
  ;; (vm/lower/fusion.cc, own_global_moves), each returning what the wasm
  ;; says. sp_set puts the SP back between them.
  (global $sp2 (mut i32) (i32.const 100))
  (func (export "sp_set") (param i32) (global.set $sp (local.get 0)))
  (func (export "sp2_get") (result i32) (global.get $sp2))
  ;; the subtrahend is the global.get's own slot (teed): SP - SP
  (func (export "sp_sub_self") (result i32)
    (local i32 i32)
    (global.set $sp (local.tee 0 (i32.sub (local.tee 1 (global.get $sp)) (local.get 1))))
    (i32.add (local.get 0) (local.get 1)))
  ;; the global.set stores another local than the sub's result: SP - x
  ;; into local 1, the global set to local 2 (x + 1)
  (func (export "sp_set_other") (param i32) (result i32)
    (local i32 i32)
    (local.set 2 (i32.add (local.get 0) (i32.const 1)))
    (local.set 1 (i32.sub (global.get $sp) (local.get 0)))
    (global.set $sp (local.get 2))
    (local.get 1))
  ;; SP - x set into another global: the sub's own result, but the global.get
  ;; read another global
  (func (export "sp_into_other") (param i32) (result i32)
    (local i32)
    (global.set $sp2 (local.tee 1 (i32.sub (global.get $sp) (local.get 0))))
    (i32.add (local.get 1) (global.get $sp)))
  ;; Go's epilogue whose second add adds its own first result (local 1 twice)
  (func (export "go_epilogue_double") (param $x i32) (result i32)
    (local i32)
    (local.set 1 (local.get $x))
    (global.set $sp (local.tee 1 (i32.add (local.get 1) (i32.const 16))))
    (global.set $sp (local.tee 1 (i32.add (local.get 1) (local.get 1))))
    (return (i32.const 0)))
  ;; Go's epilogue whose second add moves another local than the first's result
  (func (export "go_epilogue_other") (param $x i32) (result i32)
    (local i32)
    (global.set $sp (local.tee 1 (i32.add (local.get $x) (i32.const 16))))
    (global.set $sp (local.tee 1 (i32.add (local.get $x) (i32.const 8))))
    (return (i32.const 0)))
  ;; Frame images (vm/interp.cc, init_frame): a call zeroes the callee's
  ;; declared locals and copies its constant area in, one image of 4, 8, 12...
  ;; slots copied four at a time, indexed from its end by a negative offset.
  ;; $dirty first leaves -1 in the slots each callee's frame then takes (both
  ;; frames start at the same argument slot); each $lN returns its argument
  ;; plus its N locals, all zero, so frame_image(x) is x times the five
  ;; callees plus 3 x 1000003 from $consts' loop.
  (func $dirty (param i64)
    (local i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64)
    (local.set 1 (local.get 0)) (local.set 2 (local.get 0)) (local.set 3 (local.get 0))
    (local.set 4 (local.get 0)) (local.set 5 (local.get 0)) (local.set 6 (local.get 0))
    (local.set 7 (local.get 0)) (local.set 8 (local.get 0)) (local.set 9 (local.get 0))
    (local.set 10 (local.get 0)) (local.set 11 (local.get 0)) (local.set 12 (local.get 0)))
  (func $l1 (param i64) (result i64) (local i64)
    (i64.add (local.get 0) (local.get 1)))
  (func $l2 (param i64) (result i64) (local i64 i64)
    (i64.add (i64.add (local.get 0) (local.get 1)) (local.get 2)))
  (func $l3 (param i64) (result i64) (local i64 i64 i64)
    (i64.add (i64.add (i64.add (local.get 0) (local.get 1)) (local.get 2)) (local.get 3)))
  (func $l5 (param i64) (result i64) (local i64 i64 i64 i64 i64)
    (i64.add (i64.add (i64.add (i64.add (i64.add (local.get 0) (local.get 1)) (local.get 2))
      (local.get 3)) (local.get 4)) (local.get 5)))
  ;; locals, then constants in a loop (the constant area), then padding
  (func $consts (param i64) (result i64) (local i64 i64 i64)
    (loop $l
      (local.set 1 (i64.add (local.get 1) (i64.const 1000003)))
      (local.set 2 (i64.add (local.get 2) (i64.const 1)))
      (br_if $l (i64.lt_u (local.get 2) (i64.const 3))))
    (i64.add (i64.add (local.get 0) (local.get 1)) (local.get 3)))
  (func (export "frame_image") (param i64) (result i64)
    (local i64)
    (call $dirty (i64.const -1))
    (local.set 1 (call $l1 (local.get 0)))
    (call $dirty (i64.const -1))
    (local.set 1 (i64.add (local.get 1) (call $l2 (local.get 0))))
    (call $dirty (i64.const -1))
    (local.set 1 (i64.add (local.get 1) (call $l3 (local.get 0))))
    (call $dirty (i64.const -1))
    (local.set 1 (i64.add (local.get 1) (call $l5 (local.get 0))))
    (call $dirty (i64.const -1))
    (i64.add (local.get 1) (call $consts (local.get 0))))
  ;; Lua 5.4's decode and tag tests (vm/internal_ops.def, i32.shr_u+and+add;
  ;; vm/load_jumps.def; vm/mem_pairs.def): a register's address from a field
  ;; of the instruction word, `base + ((i >> 3) & 0xff0)`
  (func (export "lua_ra") (param i32 i32) (result i32)
    (i32.add (local.get 1) (i32.and (i32.shr_u (local.get 0) (i32.const 3)) (i32.const 4080))))
  ;; the field first: the add's other operand second
  (func (export "lua_rb") (param i32 i32) (result i32)
    (i32.add (i32.and (i32.shr_u (local.get 0) (local.get 1)) (i32.const 4080)) (local.get 1)))
  ;; `if (!(tt & 15)) return 0; return 1`: a tag byte loaded and tested
  (func (export "tag_and") (param i32) (result i32)
    (block
      (br_if 0 (i32.eqz (i32.and (i32.load8_u offset=8 (local.get 0)) (i32.const 15))))
      (return (i32.const 1)))
    (i32.const 0))
  ;; `if (tt != want) return 0; return 1`
  (func (export "tag_ne") (param i32 i32) (result i32)
    (block
      (br_if 0 (i32.ne (i32.load8_u offset=8 (local.get 0)) (local.get 1)))
      (return (i32.const 1)))
    (i32.const 0))
  ;; `(a & b) ? 1 : 2` through if: the eqz goes, the if tests the and
  (func (export "eqz_and_if") (param i32 i32) (result i32)
    (if (result i32) (i32.eqz (i32.and (local.get 0) (local.get 1)))
      (then (i32.const 2)) (else (i32.const 1))))
  ;; a br_if back to a loop on an eqz: no jump_unless(I32And) goes backward
  (func (export "eqz_and_loop") (param i32) (result i32)
    (loop $l
      (br_if $l (i32.eqz (i32.and (local.tee 0 (i32.sub (local.get 0) (i32.const 1))) (i32.const 1)))))
    (local.get 0))
  ;; setobj's tag byte: mem[b + 8] = mem[a + 8]
  (func (export "copy_tag") (param i32 i32)
    (i32.store8 offset=8 (local.get 1) (i32.load8_u offset=8 (local.get 0))))
  ;; Lua's dispatch: `switch (table[i & 0x7f] - 2)`, the table at `base`
  (func (export "lua_dispatch") (param i32 i32) (result i32)
    (block $d (block $c (block $b (block $a
      (br_table $a $b $c $d
        (i32.add
          (i32.load (i32.add (i32.shl (i32.and (local.get 0) (i32.const 127)) (i32.const 2)) (local.get 1)))
          (i32.const -2))))
      (return (i32.const 10))) (return (i32.const 11))) (return (i32.const 12)))
    (i32.const 13))
  ;; the masked, scaled index alone, and added to a base
  (func (export "and_shl") (param i32 i32) (result i32)
    (i32.shl (i32.and (local.get 0) (i32.const 127)) (local.get 1)))
  (func (export "and_shl_add") (param i32 i32) (result i32)
    (i32.add (local.get 1) (i32.shl (i32.and (local.get 0) (i32.const 127)) (i32.const 4))))
  (data (i32.const 3072) "\02\00\00\00\03\00\00\00\04\00\00\00\05\00\00\00\00\00\00\00")
  ;; Lua's shared tail (vm/lower/fusion.cc, pair_lua_tail): a handler ends
  ;; with `pc++` and a jump to the tail (i32.add+jump), which reads the next
  ;; instruction, decodes its A field and jumps back to the loop
  ;; (i32.load+shr_u+and+add+jump); two copies before `pc++` run with it
  ;; (copy2+i32.add+jump). Returns the sum of the n - 1 fields read at pc +
  ;; 4, pc + 8, ..., each added to base, plus the last pc stepped from.
  (func (export "lua_tail") (param $pc i32) (param $base i32) (param $n i32) (result i32)
    (local $i i32) (local $ra i32) (local $sum i32) (local $old i32) (local $last i32)
    loop $top
      block $tail
        local.get $sum
        local.get $ra
        i32.add
        local.set $sum
        local.get $n
        i32.const 1
        i32.sub
        local.tee $n
        i32.eqz
        if
          local.get $sum
          local.get $old
          i32.add
          return
        end
        local.get $pc
        local.set $old
        local.get $sum
        local.set $last
        local.get $pc
        i32.const 4
        i32.add
        local.set $pc
        br $tail
      end
      local.get $base
      local.get $pc
      i32.load
      local.tee $i
      i32.const 3
      i32.shr_u
      i32.const 4080
      i32.and
      i32.add
      local.set $ra
      br $top
    end
    unreachable)
  ;; The whole loop: the tail jumps back to the switch on table[i & 127] - 2
  ;; (load_and_shl_add(I32Load)+switch), each handler's `pc++` to the tail.
  ;; Instructions are op | a << 7 (op 0 xors ra = tab + a * 16 into the sum,
  ;; 1 subtracts it, 2 returns sum + ra), from pc on.
  (func (export "lua_loop") (param $pc i32) (param $tab i32) (result i32)
    (local $i i32) (local $ra i32) (local $sum i32)
    local.get $tab
    local.get $pc
    i32.load
    local.tee $i
    i32.const 3
    i32.shr_u
    i32.const 4080
    i32.and
    i32.add
    local.set $ra
    loop $top
      block $tail
        (block $ret (block $sub (block $add
          (br_table $add $sub $ret
            (i32.add (i32.load (i32.add (i32.shl (i32.and (local.get $i) (i32.const 127)) (i32.const 2))
                                        (local.get $tab)))
                     (i32.const -2))))
          (local.set $sum (i32.xor (local.get $sum) (local.get $ra)))
          (local.set $pc (i32.add (local.get $pc) (i32.const 4)))
          (br $tail))
          (local.set $sum (i32.sub (local.get $sum) (local.get $ra)))
          (local.set $pc (i32.add (local.get $pc) (i32.const 4)))
          (br $tail))
        (return (i32.add (local.get $sum) (local.get $ra)))
      end
      local.get $tab
      local.get $pc
      i32.load
      local.tee $i
      i32.const 3
      i32.shr_u
      i32.const 4080
      i32.and
      i32.add
      local.set $ra
      br $top
    end
    unreachable)
  (data (i32.const 6000) "\80\00\00\00\00\01\00\00\81\00\00\00\80\02\00\00\82\01\00\00")
  ;; lua_loop with the tail's decode written over the instruction it
  ;; decoded, so the switch reads the decode: the tail ops, which pass the
  ;; loaded instruction on in a register, must not be made of it.
  (func (export "lua_loop_decode_over_i") (param $pc i32) (param $tab i32) (result i32)
    (local $i i32) (local $ra i32) (local $sum i32)
    (local.set $i (i32.load (local.get $pc)))
    (local.set $ra (i32.add (local.get $tab) (i32.and (i32.shr_u (local.get $i) (i32.const 3)) (i32.const 4080))))
    loop $top
      block $tail
        (block $ret (block $sub (block $add
          (br_table $add $sub $ret
            (i32.add (i32.load (i32.add (i32.shl (i32.and (local.get $i) (i32.const 127)) (i32.const 2))
                                        (local.get $tab)))
                     (i32.const -2))))
          (local.set $sum (i32.xor (local.get $sum) (local.get $ra)))
          (local.set $pc (i32.add (local.get $pc) (i32.const 4)))
          (br $tail))
          (local.set $sum (i32.sub (local.get $sum) (local.get $ra)))
          (local.set $pc (i32.add (local.get $pc) (i32.const 4)))
          (br $tail))
        (return (i32.add (local.get $sum) (local.get $ra)))
      end
      local.get $tab
      local.get $pc
      i32.load
      local.tee $i
      i32.const 3
      i32.shr_u
      i32.const 4080
      i32.and
      i32.add
      local.set $i
      br $top
    end
    unreachable)
  ;; the load and the decode with no jump after them
  (func (export "load_decode") (param i32 i32) (result i32)
    (i32.add (local.get 1) (i32.and (i32.shr_u (i32.load (local.get 0)) (i32.const 3)) (i32.const 4080))))
;; Lua's setobj: a TValue's 8-byte value, then its tag byte at 8
  (func (export "lua_setobj") (param $dst i32) (param $src i32) (result i64)
    (i64.store (local.get $dst) (i64.load (local.get $src)))
    (i32.store8 offset=8 (local.get $dst) (i32.load8_u offset=8 (local.get $src)))
    (i64.add (i64.load (local.get $dst)) (i64.load8_u offset=8 (local.get $dst))))
  (data (i32.const 3584) "\78\56\34\12\ff\ff\ff\ff\08\00\00\00\00\00\00\80")
  ;; Read-modify-write of one address (vm/lower/fusion.cc, fuse_rmw_add): an
  ;; i32.load, an add of a constant and an i32.store to the same address and
  ;; offset are one op. Py_INCREF's shape, Py_DECREF's with the new value
  ;; teed for its zero test, the constant first, the constant an immediate
  ;; (past the constant area outside loops), after a store (a pair), and
  ;; shapes that must stay apart.
  (func (export "rmw_inc") (param i32)
    (i32.store offset=4 (local.get 0) (i32.add (i32.load offset=4 (local.get 0)) (i32.const 1))))
  (func (export "rmw_dec") (param i32) (result i32)
    (local i32)
    (i32.store offset=4 (local.get 0) (local.tee 1 (i32.add (i32.load offset=4 (local.get 0)) (i32.const -1))))
    (local.get 1))
  (func (export "rmw_const_first") (param i32) (result i32)
    (i32.store offset=8 (local.get 0) (i32.add (i32.const 16) (i32.load offset=8 (local.get 0))))
    (i32.load offset=8 (local.get 0)))
  (func (export "rmw_imm") (param i32) (result i32)
    (local i32)
    (local.set 1 (i32.add (local.get 0) (i32.const 1000)))
    (local.set 1 (i32.xor (local.get 1) (i32.const 2000)))
    (local.set 1 (i32.sub (local.get 1) (i32.const 3000)))
    (local.set 1 (i32.or (local.get 1) (i32.const 4000)))
    (i32.store offset=4 (local.get 0) (i32.add (i32.load offset=4 (local.get 0)) (i32.const 5000)))
    (local.get 1))
  (func (export "rmw_after_store") (param i32 i32)
    (i32.store (local.get 1) (i32.const 7))
    (i32.store offset=4 (local.get 0) (i32.add (i32.load offset=4 (local.get 0)) (i32.const 1))))
  ;; Py_DECREF: the teed count tested at once (rmw_add.tee+jump_if).
  (func (export "rmw_decref") (param i32) (result i32)
    (local i32)
    (block
      (i32.store offset=4 (local.get 0) (local.tee 1 (i32.add (i32.load offset=4 (local.get 0)) (i32.const -1))))
      (br_if 0 (local.get 1))
      (return (i32.const 99)))
    (local.get 1))
  (func (export "rmw_then_load") (param i32 i32) (result i32)
    (i32.store offset=4 (local.get 0) (i32.add (i32.load offset=4 (local.get 0)) (i32.const 1)))
    (i32.load (local.get 1)))
  ;; Not one op: another offset; the sum teed into the address's local (the
  ;; store's address is the old one, read before the tee).
  (func (export "rmw_other_offset") (param i32)
    (i32.store offset=8 (local.get 0) (i32.add (i32.load offset=4 (local.get 0)) (i32.const 1))))
  (func (export "rmw_tee_addr") (param i32) (result i32)
    (i32.store offset=4 (local.get 0) (local.tee 0 (i32.add (i32.load offset=4 (local.get 0)) (i32.const 8))))
    (local.get 0))

  ;; CPython 3.11's dispatch (vm/lower/fusion.cc, pair_switch_chain and
  ;; pair_decode): the switch on `(opcode & 255) - 1`, and the decode of a
  ;; 16-bit code unit, `opcode = word | use_tracing` and `oparg = word >> 8`,
  ;; returned as opcode << 16 + oparg.
  (func (export "py_dispatch") (param i32) (result i32)
    (block $d (block $c (block $b (block $a
      (br_table $a $b $c $d (i32.add (i32.and (local.get 0) (i32.const 255)) (i32.const -1))))
      (return (i32.const 10))) (return (i32.const 11))) (return (i32.const 12)))
    (i32.const 13))
  (func (export "store8") (param i32 i32) (i32.store8 (local.get 0) (local.get 1)))
  (func (export "store32") (param i32 i32) (i32.store (local.get 0) (local.get 1)))
  ;; C's `if (p->a)` and `if (!p->b)`: a load right before a conditional jump
  ;; on what it loaded (pair_copy_jumps): i32.load+jump_if (the br_if),
  ;; i32.load+jump_unless and i32.load8_u+jump_unless (the ifs). 1 unless
  ;; p[0], + 10 if p[4], + 100 if the byte p[8].
  (func (export "load_jumps") (param $p i32) (result i32)
    (local $r i32)
    (block $skip
      (br_if $skip (i32.load (local.get $p)))
      (local.set $r (i32.const 1)))
    (if (i32.load offset=4 (local.get $p))
      (then (local.set $r (i32.add (local.get $r) (i32.const 10)))))
    (if (i32.load8_u offset=8 (local.get $p))
      (then (local.set $r (i32.add (local.get $r) (i32.const 100)))))
    (local.get $r))
  (func (export "store16") (param i32 i32) (i32.store16 (local.get 0) (local.get 1)))
  (func (export "py_decode") (param i32 i32) (result i32)
    (local i32 i32 i32)
    local.get 1
    i32.load8_u
    local.get 0
    i32.load16_u offset=2
    local.tee 2
    i32.or
    local.set 3
    local.get 2
    i32.const 8
    i32.shr_u
    local.set 4
    local.get 3
    i32.const 16
    i32.shl
    local.get 4
    i32.add)
  ;; the same with a label between the or and the shift: still three whole ops
  (func (export "py_decode_label") (param i32 i32) (result i32)
    (local i32 i32 i32)
    local.get 1
    i32.load8_u
    local.get 0
    i32.load16_u offset=2
    local.tee 2
    i32.or
    local.set 3
    (block
      local.get 2
      i32.const 8
      i32.shr_u
      local.set 4)
    local.get 3
    i32.const 16
    i32.shl
    local.get 4
    i32.add)
  ;; a bytecode loop: decode, add oparg to a sum, stop at opcode 0, else the
  ;; next code unit and the jump back (i32.load16_u+or+shr_u+jump); the
  ;; shift-first order alike. Code units at 5000: (op 1, arg 3), (2, 5), (0, 7);
  ;; the flag byte at 5008 is 255 (tracing: no opcode is 0, the loop runs
  ;; off the memory's end).
  (func (export "py_decode_loop") (param i32 i32) (result i32)
    (local i32 i32 i32 i32)
    local.get 1
    i32.load8_u
    local.get 0
    i32.load16_u
    local.tee 2
    i32.or
    local.set 3
    local.get 2
    i32.const 8
    i32.shr_u
    local.set 4
    (loop $top
      (local.set 5 (i32.add (local.get 5) (local.get 4)))
      (if (i32.eqz (i32.and (local.get 3) (i32.const 255))) (then (return (local.get 5))))
      (local.set 0 (i32.add (local.get 0) (i32.const 2)))
      local.get 1
      i32.load8_u
      local.get 0
      i32.load16_u
      local.tee 2
      i32.or
      local.set 3
      local.get 2
      i32.const 8
      i32.shr_u
      local.set 4
      br $top)
    unreachable)
  (func (export "py_decode_shift_first") (param i32 i32) (result i32)
    (local i32 i32 i32 i32)
    local.get 0
    i32.load16_u
    local.tee 2
    i32.const 8
    i32.shr_u
    local.set 4
    local.get 1
    i32.load8_u
    local.get 2
    i32.or
    local.set 3
    (loop $top
      (local.set 5 (i32.add (local.get 5) (local.get 4)))
      (if (i32.eqz (i32.and (local.get 3) (i32.const 255))) (then (return (local.get 5))))
      (local.set 0 (i32.add (local.get 0) (i32.const 2)))
      local.get 0
      i32.load16_u
      local.tee 2
      i32.const 8
      i32.shr_u
      local.set 4
      local.get 1
      i32.load8_u
      local.get 2
      i32.or
      local.set 3
      br $top)
    unreachable)
  (data (i32.const 5000) "\01\03\02\05\00\07\00\00\ff")
  ;; a loop head setting three locals, then switching on (opcode & 255) - 1:
  ;; copy3+i32.and+add+switch. Case 1 returns 10 + the constant copied,
  ;; case 2 sets x to 3 and goes round, case 3 returns the copy of x's copy.
  (func (export "py_head") (param i32) (result i32)
    (local i32 i32 i32)
    (loop $head
      (local.set 1 (local.get 0))
      (local.set 2 (i32.const 1))
      (local.set 3 (local.get 1))
      (block $d (block $c (block $b (block $a
        (br_table $a $b $c $d (i32.add (i32.and (local.get 3) (i32.const 255)) (i32.const -1))))
        (return (i32.add (local.get 2) (i32.const 10))))
        (local.set 0 (i32.const 3))
        (br $head))
        (return (i32.add (local.get 3) (i32.const 100)))))
    (i32.const 13))
  ;; CPython's own head sets seven locals: copy4+copy3+i32.and+add+switch.
  ;; Case 1 returns 10 + the two constants copied (18), case 2 sets x to 3
  ;; and goes round, case 3 returns two copies of x's copies + 100.
  (func (export "py_head7") (param i32) (result i32)
    (local i32 i32 i32 i32 i32 i32 i32)
    (loop $head
      (local.set 1 (local.get 0))
      (local.set 2 (i32.const 1))
      (local.set 3 (local.get 1))
      (local.set 4 (local.get 0))
      (local.set 5 (i32.const 7))
      (local.set 6 (local.get 4))
      (local.set 7 (local.get 3))
      (block $d (block $c (block $b (block $a
        (br_table $a $b $c $d (i32.add (i32.and (local.get 7) (i32.const 255)) (i32.const -1))))
        (return (i32.add (i32.add (local.get 2) (local.get 5)) (i32.const 10))))
        (local.set 0 (i32.const 3))
        (br $head))
        (return (i32.add (i32.add (local.get 6) (local.get 7)) (i32.const 100)))))
    (i32.const 13))

  ;; bench/suite's numeric loops (vm/lower/fusion.cc). An f64 binary whose
  ;; load takes its address from an i32.add: bin_load_add(F64Mul).
  (func (export "load_add_mul") (param i32 f64) (result f64)
    (f64.mul (local.get 1) (f64.load (i32.add (local.get 0) (i32.const 8)))))
  ;; A loop stepping a value and its counter (i32.add2), closed by a test of
  ;; the counter: i32.add2+jump_if.back(I32Ne). Returns the value.
  (func (export "add2_loop") (param i32) (result i32)
    (local i32 i32)
    (loop
      (local.set 1 (i32.add (local.get 1) (i32.const 3)))
      (br_if 0 (i32.ne (local.get 0) (local.tee 2 (i32.add (local.get 2) (i32.const 1))))))
    (local.get 1))
  ;; The same counting down to zero: i32.add2+jump_if.back.
  (func (export "add2_countdown") (param i32) (result i32)
    (local i32)
    (loop
      (local.set 1 (i32.add (local.get 1) (i32.const 3)))
      (br_if 0 (local.tee 0 (i32.add (local.get 0) (i32.const -1)))))
    (local.get 1))
  ;; SHA-256's sigma functions: i32.rotl3+xor and i32.rotl2+shr_u+xor, and
  ;; two rotations of different words, i32.rotl2+xor.
  (func (export "big_sigma") (param i32) (result i32)
    (i32.xor (i32.xor (i32.rotl (local.get 0) (i32.const 26)) (i32.rotl (local.get 0) (i32.const 21)))
             (i32.rotl (local.get 0) (i32.const 7))))
  (func (export "small_sigma") (param i32) (result i32)
    (i32.xor (i32.xor (i32.rotl (local.get 0) (i32.const 25)) (i32.rotl (local.get 0) (i32.const 14)))
             (i32.shr_u (local.get 0) (i32.const 3))))
  ;; Counts from parameters: taken mod 32, as i32.rotl and i32.shr_u do.
  (func (export "rot3") (param i32 i32 i32 i32) (result i32)
    (i32.xor (i32.xor (i32.rotl (local.get 0) (local.get 1)) (i32.rotl (local.get 0) (local.get 2)))
             (i32.rotl (local.get 0) (local.get 3))))
  (func (export "rot2_shr") (param i32 i32 i32 i32) (result i32)
    (i32.xor (i32.xor (i32.rotl (local.get 0) (local.get 1)) (i32.rotl (local.get 0) (local.get 2)))
             (i32.shr_u (local.get 0) (local.get 3))))
  (func (export "rot2") (param i32 i32 i32 i32) (result i32)
    (i32.xor (i32.rotl (local.get 0) (local.get 1)) (i32.rotl (local.get 2) (local.get 3))))
  ;; A bytecode loop's fetch: the instruction's address kept in a local,
  ;; then a switch on its opcode byte: i32.shl+add+i32.load8_u+switch.
  ;; Its bytecode at 8192: [op pad pad pad arg:i32], ops 0, 1 and 7 (the default).
  (data (i32.const 8192) "\00\00\00\00\2a\00\00\00\01\00\00\00\00\00\00\00\07\00\00\00\00\00\00\00")
  (func (export "fetch_switch") (param i32 i32) (result i32)
    (local i32)
    (block
      (block
        (block
          (br_table 0 1 2
            (i32.load8_u (local.tee 2 (i32.add (local.get 0) (i32.shl (local.get 1) (i32.const 3)))))))
        (return (i32.load offset=4 (local.get 2))))
      (return (i32.const 100)))
    (i32.const 200))
  ;; An i32.add, then an i32.load at another sum: i32.add+load_add(I32Load).
  (func (export "add_then_load") (param i32 i32) (result i32)
    (i32.add (i32.add (local.get 0) (i32.const 64)) (i32.load (i32.add (local.get 1) (i32.const 4)))))
  ;; An i32.add into a local, then an f64.mul of a load at another sum:
  ;; i32.add+bin_load_add(F64Mul). Returns the product plus the local.
  (func (export "add_then_mul") (param i32 i32 f64) (result f64)
    (local.set 0 (i32.add (local.get 0) (i32.const 8)))
    (f64.add (f64.mul (local.get 2) (f64.load (i32.add (local.get 1) (i32.const 8))))
             (f64.convert_i32_u (local.get 0)))))
