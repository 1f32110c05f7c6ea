;; exception-handling (the legacy proposal), for tests/proposals_test.cc.
;; Instruction counts in the comments: try, catch, catch_all, delegate and
;; end are structure, not counted.
(module
  (tag $e (param i32))
  (tag $other)
  ;; 2 instructions: local.get, throw.
  (func $h (param i32) (local.get 0) (throw $e))
  ;; 2 run (local.get, call); the i32.const after the call never runs.
  (func $g (param i32) (result i32) (call $h (local.get 0)) (i32.const 99))
  ;; 4 run: local.get, call, then the handler's i32.const, i32.add.
  (func $f (export "f") (param i32) (result i32)
    (try (result i32)
      (do (call $g (local.get 0)) (i32.const 1) (i32.add))
      (catch $e (i32.const 100) (i32.add))))
  (func (export "uncaught") (call $h (i32.const 5)))
  (func (export "catch_all") (result i32)
    (try (result i32) (do (throw $other)) (catch $e) (catch_all (i32.const 2))))
  ;; The inner try passes what it does not catch to the outer one.
  (func (export "delegated") (result i32)
    (try (result i32)
      (do (try (result i32) (do (call $h (i32.const 3)) (i32.const 0)) (delegate 0)))
      (catch $e (i32.const 1000) (i32.add))))
  ;; A caught exception thrown again from the handler reaches the caller.
  (func (export "rethrown") (result i32)
    (try (result i32)
      (do (try (do (call $h (i32.const 4))) (catch_all (rethrow 0))) (i32.const 0))
      (catch $e)))
  (func (export "throw_loop") (param $n i32) (result i32) (local $s i32)
    (block $done
      (loop $l
        (br_if $done (i32.eqz (local.get $n)))
        (local.set $s (i32.add (local.get $s) (call $f (local.get $n))))
        (local.set $n (i32.sub (local.get $n) (i32.const 1)))
        (br $l)))
    (local.get $s))
)
