;; Module for tests/cli_test.cc: has an import, which wzvm cannot satisfy yet.
(module
  (import "env" "host_fn" (func (param i32)))
  (func (export "f") (call 0 (i32.const 1)))
)
