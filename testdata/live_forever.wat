;; The live endpoint tests' guest (tests/viewers_test.cc): `forever` runs
;; `loop` again and again and never returns, so the guest is there however
;; long a test takes on a loaded machine (a long `loop` alone ended within
;; some of those tests once loops got faster). The test kills it.
(module
  (func $loop (export "loop") (param $n i32) (result i32)
    (local $i i32) (local $acc i32)
    (block $done
      (loop $top
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $acc (i32.add (local.get $acc) (local.get $i)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $top)))
    (local.get $acc))
  (func (export "forever") (result i32)
    (loop $again
      (drop (call $loop (i32.const 1000000)))
      (br $again))
    unreachable))
