;; Not a finding: a module that only terminates in the fuzz targets because of
;; their safe-point budget and StoreLimits (fuzz/fuzz_common.h): a loop,
;; unbounded recursion, a large fill, a grow past the memory cap.
(module
  (memory 1)
  (func (export "spin") (loop br 0))
  (func $rec (export "rec") (call $rec))
  (func (export "fill") (memory.fill (i32.const 0) (i32.const 7) (i32.const 65536)))
  (func (export "grow") (result i32) (memory.grow (i32.const 1000))))
