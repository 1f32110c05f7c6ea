;; Module for tests/cli_test.cc: one function per kind of result the CLI prints,
;; and a trap two calls deep for the backtrace.
(module
  (func (export "add") (param i32 i32) (result i32) (i32.add (local.get 0) (local.get 1)))
  (func (export "neg_i64") (param i64) (result i64) (i64.sub (i64.const 0) (local.get 0)))
  (func (export "id_f32") (param f32) (result f32) (local.get 0))
  (func (export "id_f64") (param f64) (result f64) (local.get 0))
  (func (export "pair") (result i32 f64) (i32.const -1) (f64.const 0.1))
  (func (export "nulls") (result funcref externref) (ref.null func) (ref.null extern))
  (func (export "none"))
  (func $inner (i32.div_s (i32.const 1) (i32.const 0)) (drop))
  (func $outer (call $inner))
  (func (export "trap") (call $outer))
  (func (export "unreachable") unreachable)
  (func $recurse (call $recurse))
  (func (export "recurse") (call $recurse))
  (memory (export "mem") 1)
)
