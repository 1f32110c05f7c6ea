;; A start function that never returns: --timeout and --fuel must stop
;; instantiation too (tests/hardening_test.cc).
(module
  (func $spin (loop (br 0)))
  (start $spin)
  (func (export "f")))
