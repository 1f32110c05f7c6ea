;; threads: atomics on an unshared memory are valid, and notify finds no
;; waiter there, but a wait on it traps ("expected shared memory").
(module
  (memory 1 1)
  (func (export "wait32") (result i32)
    (memory.atomic.wait32 (i32.const 0) (i32.const 0) (i64.const 0)))
  (func (export "notify") (result i32)
    (memory.atomic.notify (i32.const 0) (i32.const 1)))
  (func (export "misaligned") (result i32)
    (i32.atomic.rmw.add (i32.const 2) (i32.const 1)))
)
