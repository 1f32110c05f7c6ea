;; An atomic load that is both misaligned and out of bounds: the threads
;; proposal checks alignment first, so the trap is "unaligned atomic"
;; (binaryen's interpreter checks bounds first and says "out of bounds"; see
;; fuzz/README.md). `fits` is aligned and in bounds, `oob` aligned and out.
(module
  (import "fuzzing-support" "log-i32" (func $log (param i32)))
  (memory 1 1 shared)
  (data (i32.const 65532) "\2a\00\00\00")
  (func (export "fits") (result i32) (i32.atomic.load (i32.const 65532)))
  (func (export "both") (result i32) (i32.atomic.load (i32.const 65535)))
  (func (export "oob") (call $log (i32.const 1)) (drop (i32.atomic.load (i32.const 65536))))
  (func (export "misaligned") (result i64) (i64.atomic.load offset=1 (i32.const 0))))
