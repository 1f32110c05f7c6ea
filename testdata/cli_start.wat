;; Module for tests/cli_test.cc: `wzvm` without --invoke calls _start.
(module
  (global $g (mut i32) (i32.const 0))
  (func (export "_start") (global.set $g (i32.const 1)))
  (func (export "get") (result i32) (global.get $g))
)
