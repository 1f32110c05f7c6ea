;; An interpreter's dispatch loop in miniature, for ProbeCounted's promise
;; (vm::Profiling::ProbeStay, tests/profiler_test.cc): `frame` points at a
;; record whose i32 at +4 is its "code", `next` is the instruction about to
;; be dispatched; the br_table is the dispatch the probe goes before. At
;; next = 15 the body changes the record's code, at 25 it moves to another
;; frame: the probe after each must be asked again.
(module
  (memory 1)
  (func $interp (export "interp") (param $n i32) (result i32)
    (local $frame i32) (local $next i32) (local $acc i32)
    (local.set $frame (i32.const 64))
    (i32.store offset=4 (local.get $frame) (i32.const 7))
    (block $exit
      (loop $top
        (br_if $exit (i32.ge_u (local.get $next) (local.get $n)))
        (block $b2
          (block $b1
            (block $b0
              (br_table $b0 $b1 $b2 (i32.and (local.get $next) (i32.const 1))))
            (local.set $acc (i32.add (local.get $acc) (i32.const 1)))
            (br $b2))
          (local.set $acc (i32.add (local.get $acc) (i32.const 100))))
        (if (i32.eq (local.get $next) (i32.const 15))
          (then (i32.store offset=4 (local.get $frame) (i32.const 8))))
        (if (i32.eq (local.get $next) (i32.const 25))
          (then
            (local.set $frame (i32.const 128))
            (i32.store offset=4 (local.get $frame) (i32.const 8))))
        (local.set $next (i32.add (local.get $next) (i32.const 1)))
        (br $top)))
    (local.get $acc)))
