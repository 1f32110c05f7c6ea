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
    (f64.store (local.get 0) (local.get 1))))
