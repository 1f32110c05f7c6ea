;; threads: wait/notify exported for tests/threads_test.cc, which blocks a
;; guest in memory.atomic.wait32 and wakes it from a host thread or from
;; other guest threads.
(module
  (memory (export "memory") 1 1 shared)
  (func (export "wait32") (param $addr i32) (param $expected i32) (param $timeout i64) (result i32)
    (memory.atomic.wait32 (local.get $addr) (local.get $expected) (local.get $timeout)))
  (func (export "wait64") (param $addr i32) (param $expected i64) (param $timeout i64) (result i32)
    (memory.atomic.wait64 (local.get $addr) (local.get $expected) (local.get $timeout)))
  (func (export "notify") (param $addr i32) (param $count i32) (result i32)
    (memory.atomic.notify (local.get $addr) (local.get $count)))
  (func (export "store") (param $addr i32) (param $v i32)
    (i32.atomic.store (local.get $addr) (local.get $v)))
  (func (export "add") (param $addr i32) (param $v i32) (result i32)
    (i32.atomic.rmw.add (local.get $addr) (local.get $v)))
)
