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
  (func (export "spin") (loop (br 0)))
  ;; The same with each other kind of back-edge lowering makes (a jump op
  ;; of its own, where the profiling loops once polled for samples and
  ;; interrupts; now any instruction can stop): called with $x = 1, every
  ;; one loops forever.
  (func (export "spin_br_if") (param $x i32)            ;; jump_if.back
    (loop $l (br_if $l (local.get $x))))
  (func (export "spin_br_if_eqz") (param $x i32)        ;; jump_unless.back
    (loop $l (br_if $l (i32.eqz (i32.sub (local.get $x) (i32.const 1))))))
  (func (export "spin_br_if_lt") (param $x i32)         ;; jump_if.back(I32LtS)
    (loop $l (br_if $l (i32.lt_s (local.get $x) (i32.const 5)))))
  (func (export "spin_br_table") (param $x i32)         ;; switch, backward
    (block $out (loop $l (br_table $out $l $l (local.get $x)))))
  (func (export "spin_nested") (param $x i32)           ;; a block first in the loop
    (loop $l (block $b (br_if $b (local.get $x))) (br $l))))
