;; Program for the CPU profiler's tests (tests/cpu_profile_test.cc): two
;; functions doing 3:1 work in one loop they both call, and a host call that
;; blocks (env.sleep_ms) before the work.
(module
  (import "env" "sleep_ms" (func $sleep_ms (param i32)))
  ;; n rounds of a linear congruential step. heavy and light both run this
  ;; one copy of the loop: two copies of it, at other addresses, once ran at
  ;; speeds 1.6:1 for the whole life of a process (tests/cpu_profile_test.cc,
  ;; ThreeToOneWorkShowsThreeToOne), which no profiler can correct.
  (func $spin (param $i i32) (result i32)
    (local $x i32)
    (block $done
      (loop $top
        (br_if $done (i32.eqz (local.get $i)))
        (local.set $x (i32.add (i32.mul (local.get $x) (i32.const 1664525)) (i32.const 1013904223)))
        (local.set $i (i32.sub (local.get $i) (i32.const 1)))
        (br $top)))
    (local.get $x))
  ;; 3:1 work: 3n and n rounds.
  (func $heavy (param $n i32) (result i32)
    (call $spin (i32.mul (local.get $n) (i32.const 3))))
  (func $light (param $n i32) (result i32)
    (call $spin (local.get $n)))
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
  ;; k naps of 3 ms each in the host, and almost nothing in the guest.
  (func (export "naps") (param $k i32)
    (loop $again
      (call $sleep_ms (i32.const 3))
      (local.set $k (i32.sub (local.get $k) (i32.const 1)))
      (br_if $again (local.get $k))))
  (func (export "sleep_then_work") (param $ms i32) (param $n i32) (result i32)
    (call $sleep_ms (local.get $ms))
    (call $work (local.get $n)))
)
