;; For the --fuel and --timeout tests (tests/hardening_test.cc). Counted
;; instructions (structural block/loop/end are not counted, as in
;; --profile=instructions):
;;   count(n) = 4(n+1) checks + 5n increments + the final local.get = 9n + 5.
(module
  (func (export "count") (param $n i32) (result i32) (local $i i32)
    block
      loop
        local.get $i  local.get $n  i32.ge_s  br_if 1
        local.get $i  i32.const 1  i32.add  local.set $i
        br 0
      end
    end
    local.get $i)
  ;; Never returns: only a limit stops it.
  (func (export "spin") (loop (br 0))))
