;; WASI program for the profiler's CLI tests (tests/profile_cli_test.cc): it
;; blocks in poll_oneoff (a host call that must show as host time, not guest
;; CPU), works in two functions 3:1, and can leave through proc_exit(3).
;; Called with --invoke, so the work size comes from the test's calibration.
(module
  (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll_oneoff (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (memory (export "memory") 1)

  ;; One clock subscription at 0 (48 bytes: userdata u64 @0, tag u8 @8 = 0
  ;; clock, clock id u32 @16 = 1 monotonic, timeout u64 @24 in ns, precision
  ;; u64 @32, flags u16 @40 = 0 relative); the event goes to 64, the event
  ;; count to 112.
  (func $sleep_ms (param $ms i32)
    (i64.store (i32.const 0) (i64.const 0))
    (i32.store8 (i32.const 8) (i32.const 0))
    (i32.store (i32.const 16) (i32.const 1))
    (i64.store (i32.const 24) (i64.mul (i64.extend_i32_u (local.get $ms)) (i64.const 1000000)))
    (i64.store (i32.const 32) (i64.const 0))
    (i32.store16 (i32.const 40) (i32.const 0))
    (drop (call $poll_oneoff (i32.const 0) (i32.const 64) (i32.const 1) (i32.const 112))))

  (func $heavy (param $n i32) (result i32)
    (local $i i32) (local $x i32)
    (local.set $i (i32.mul (local.get $n) (i32.const 3)))
    (block $done
      (loop $top
        (br_if $done (i32.eqz (local.get $i)))
        (local.set $x (i32.add (i32.mul (local.get $x) (i32.const 1664525)) (i32.const 1013904223)))
        (local.set $i (i32.sub (local.get $i) (i32.const 1)))
        (br $top)))
    (local.get $x))
  (func $light (param $n i32) (result i32)
    (local $i i32) (local $x i32)
    (local.set $i (local.get $n))
    (block $done
      (loop $top
        (br_if $done (i32.eqz (local.get $i)))
        (local.set $x (i32.add (i32.mul (local.get $x) (i32.const 1664525)) (i32.const 1013904223)))
        (local.set $i (i32.sub (local.get $i) (i32.const 1)))
        (br $top)))
    (local.get $x))
  ;; heavy(n/16) and light(n/16) alternate 16 times, so a change of CPU speed
  ;; during the run (other processes, frequency) hits both alike.
  (func $work (export "work") (param $n i32) (result i32)
    (local $round i32) (local $acc i32)
    (local.set $round (i32.const 16))
    (local.set $n (i32.shr_u (local.get $n) (i32.const 4)))
    (loop $again
      (local.set $acc (i32.add (local.get $acc) (call $heavy (local.get $n))))
      (local.set $acc (i32.add (local.get $acc) (call $light (local.get $n))))
      (local.set $round (i32.sub (local.get $round) (i32.const 1)))
      (br_if $again (local.get $round)))
    (local.get $acc))

  (func (export "sleep_then_work") (param $ms i32) (param $n i32) (result i32)
    (call $sleep_ms (local.get $ms))
    (call $work (local.get $n)))
  (func (export "work_then_exit") (param $n i32)
    (drop (call $work (local.get $n)))
    (call $proc_exit (i32.const 3)))
)
