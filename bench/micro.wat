;; Modules for bench/micro_bench.cc.
(module
  (memory (export "mem") 1)
  (global $g (mut i32) (i32.const 0))
  (table 4 funcref)
  ;; A tiny function: the cost of one call from the API.
  (func (export "add") (param i32 i32) (result i32) (i32.add (local.get 0) (local.get 1)))
  ;; A tight loop: n iterations of a counter and an accumulator.
  (func (export "loop") (param $n i32) (result i32)
    (local $acc i32)
    (block $done
      (loop $l
        (br_if $done (i32.eqz (local.get $n)))
        (local.set $acc (i32.add (local.get $acc) (local.get $n)))
        (local.set $n (i32.sub (local.get $n) (i32.const 1)))
        (br $l)))
    (local.get $acc))
  ;; n wasm-to-wasm calls.
  (func $leaf (param i32) (result i32) (i32.add (local.get 0) (i32.const 1)))
  (func (export "calls") (param $n i32) (result i32)
    (local $acc i32)
    (block $done
      (loop $l
        (br_if $done (i32.eqz (local.get $n)))
        (local.set $acc (call $leaf (local.get $acc)))
        (local.set $n (i32.sub (local.get $n) (i32.const 1)))
        (br $l)))
    (local.get $acc))
  (data (i32.const 16) "wzvm micro benchmark")
  (elem (i32.const 0) $leaf)
)
