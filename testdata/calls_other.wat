;; For tests/calls_test.cc: the instance that calls_home.wat's calls go
;; into. Its memory is calls_home's memory 0, and `grow` grows it: after a
;; call here returns, the caller's cached size must be the new one.
(module
  (memory (export "mem") 1)
  ;; grows the memory by one page; the old size in pages
  (func (export "grow") (result i32) (memory.grow (i32.const 1)))
  ;; the same with no result (ret0) and with two (ret): the old size and 9
  (func (export "grow_void") (drop (memory.grow (i32.const 1))))
  (func (export "grow_pair") (result i32 i32) (memory.grow (i32.const 1)) (i32.const 9))
)
