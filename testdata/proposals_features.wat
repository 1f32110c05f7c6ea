;; Proposals beyond wasm 2.0 that wzvm implements (tests/proposals_test.cc).
;; Built with wat2wasm --enable-tail-call --enable-extended-const
;; --enable-multi-memory (testdata/CMakeLists.txt: proposals_*.wat).
(module
  (import "env" "host_inc" (func $host_inc (param i32) (result i32)))
  (memory $m0 1)
  (memory $m1 1 4)
  ;; extended-const: 6 * 7 + 100
  (global $g i64 (i64.add (i64.mul (i64.const 6) (i64.const 7)) (i64.const 100)))
  (type $pred (func (param i32) (result i32)))
  (table funcref (elem $even $odd))

  ;; tail-call. Per round: local.get, i32.eqz, if, local.get, i32.const,
  ;; i32.sub, return_call (7 instructions); the last round has 5.
  (func $count_down (export "count_down") (param $n i32) (result i32)
    (if (result i32) (i32.eqz (local.get $n))
      (then (return_call $leaf (i32.const 7)))
      (else (return_call $count_down (i32.sub (local.get $n) (i32.const 1))))))
  (func $leaf (param i32) (result i32) (i32.add (local.get 0) (i32.const 1)))
  ;; 2 instructions; count_down and leaf replace each other under it.
  (func $entry (export "entry") (param $n i32) (result i32) (call $count_down (local.get $n)))
  ;; Mutual recursion through the table.
  (func $even (export "even") (param $n i32) (result i32)
    (if (result i32) (i32.eqz (local.get $n))
      (then (i32.const 1))
      (else (return_call_indirect (type $pred) (i32.sub (local.get $n) (i32.const 1)) (i32.const 1)))))
  (func $odd (param $n i32) (result i32)
    (if (result i32) (i32.eqz (local.get $n))
      (then (i32.const 0))
      (else (return_call_indirect (type $pred) (i32.sub (local.get $n) (i32.const 1)) (i32.const 0)))))
  ;; A host function cannot take over a frame: called, then returned from.
  (func (export "to_host") (param i32) (result i32) (return_call $host_inc (local.get 0)))
  ;; Out of stack in the tail-called function's frame: a trap, not a crash.
  (func $spin (export "spin") (param i32) (result i32) (return_call $spin (local.get 0)))

  (func (export "ext_const") (result i64) (global.get $g))

  ;; multi-memory
  (func (export "two_memories") (param i32) (result i32)
    (i32.store $m1 (i32.const 8) (local.get 0))
    (i32.store $m0 (i32.const 8) (i32.const 7))
    (i32.add (i32.load $m1 (i32.const 8)) (i32.load $m0 (i32.const 8))))
  (func (export "sizes") (result i32)
    (drop (memory.grow $m1 (i32.const 2)))
    (i32.add (i32.mul (memory.size $m1) (i32.const 10)) (memory.size $m0)))
  (func (export "copy_between") (result i32)
    (i32.store $m0 (i32.const 0) (i32.const 0x11223344))
    (memory.copy $m1 $m0 (i32.const 100) (i32.const 0) (i32.const 4))
    (i32.store $m0 (i32.const 0) (i32.const 0))
    (i32.load $m1 (i32.const 100)))
  (func (export "load_m1") (param i32) (result i32) (i32.load $m1 (local.get 0)))
)
