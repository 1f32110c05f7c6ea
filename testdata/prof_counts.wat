;; Programs whose instruction counts are worked out by hand, for the
;; instruction profiler's tests (tests/profiler_test.cc, tests/profile_cli_test.cc).
;; Rule (vm/profiling.h): every executed instruction counts 1, except the
;; structure markers block, loop, else and end.
(module
  ;; loop(n) = 0 + 1 + ... + (n-1). Per iteration that goes round: 13
  ;; instructions; the last test exits with 4; then 1 for the result:
  ;; 13 n + 5 in total (n = 1000: 13005).
  (func $loop (export "loop") (param $n i32) (result i32)
    (local $i i32) (local $acc i32)
    (block $done
      (loop $top
        local.get $i         ;; 1
        local.get $n         ;; 2
        i32.ge_u             ;; 3
        br_if $done          ;; 4
        local.get $acc       ;; 5
        local.get $i         ;; 6
        i32.add              ;; 7
        local.set $acc       ;; 8
        local.get $i         ;; 9
        i32.const 1          ;; 10
        i32.add              ;; 11
        local.set $i         ;; 12
        br $top))            ;; 13
    local.get $acc)

  ;; A call tree. leaf: 3 instructions per call.
  (func $leaf (param i32) (result i32)
    local.get 0
    i32.const 1
    i32.add)
  ;; mid: 3 of its own per call (local.get, call, call) and two leaf calls.
  (func $mid (param i32) (result i32)
    local.get 0
    call $leaf
    call $leaf)
  ;; tree() = 5: own 5 (i32.const, call, call, call, return) + mid twice (6)
  ;; + leaf from mid four times (12) + leaf once directly (3) = 26.
  ;; Per stack: tree 5; tree;mid 6; tree;mid;leaf 12; tree;leaf 3.
  ;; Per function (self): leaf 15, mid 6, tree 5.
  (func $tree (export "tree") (result i32)
    i32.const 0
    call $mid
    call $leaf
    call $mid
    return)

  ;; if/else: the markers don't count, the branch taken does.
  ;; pick(1) = 10: local.get, if, i32.const = 3. pick(0) = 20: same, 3.
  (func $pick (export "pick") (param i32) (result i32)
    local.get 0
    if (result i32)
      i32.const 10
    else
      i32.const 20
    end)

  ;; Traps after exactly 3 counted instructions (i32.const, i32.const, i32.div_u).
  (func $boom (export "boom") (result i32)
    i32.const 1
    i32.const 0
    i32.div_u)

  ;; Recursion n deep: dive(n) = n in 9 n + 4 instructions. When the call
  ;; stack runs out first, each of the k frames entered has run 7 (the
  ;; failing call included): 7 k.
  (func $dive (export "dive") (param $n i32) (result i32)
    local.get $n
    i32.eqz
    if (result i32)
      i32.const 0
    else
      local.get $n  i32.const 1  i32.sub  call $dive
      i32.const 1
      i32.add
    end)

  ;; Callees whose bodies start with a loop, whose back-edge re-runs the
  ;; loop's first instruction and not the function's entry, and one with no
  ;; instructions at all, called directly (counted code enters them with
  ;; call_local.counted, which counts the entry itself: vm/counted_ops.def).
  ;; spin(k), k >= 1: 5 per iteration, k iterations.
  (func $spin (param $k i32)
    (loop $l
      local.get $k   ;; 1
      i32.const 1    ;; 2
      i32.sub        ;; 3
      local.tee $k   ;; 4
      br_if $l))     ;; 5
  (func $empty)
  ;; entry_loops(n) = 4 own + 5 n in spin; empty counts nothing.
  (func $entry_loops (export "entry_loops") (param $n i32)
    local.get $n     ;; 1
    call $spin       ;; 2
    call $empty      ;; 3
    call $empty)     ;; 4
  ;; spin_trap(k) goes round k times (9 each) and traps at the division of
  ;; the next: 9 k + 3; entry_loops_trap(n) adds its own 2: 9 n + 5.
  (func $spin_trap (param $k i32)
    (loop $l
      i32.const 10   ;; 1
      local.get $k   ;; 2
      i32.div_u      ;; 3
      drop           ;; 4
      local.get $k   ;; 5
      i32.const 1    ;; 6
      i32.sub        ;; 7
      local.set $k   ;; 8
      br $l))        ;; 9
  (func $entry_loops_trap (export "entry_loops_trap") (param $n i32)
    local.get $n     ;; 1
    call $spin_trap) ;; 2

  ;; br_table and early returns: classify(0) = classify(1) = 4, else 3.
  (func $classify (export "classify") (param $x i32) (result i32)
    (block $b2
      (block $b1
        (block $b0
          local.get $x            ;; 1
          br_table $b0 $b1 $b2)   ;; 2
        i32.const 10              ;; 3  (x = 0)
        return)                   ;; 4
      i32.const 20                ;; 3  (x = 1)
      return)                     ;; 4
    i32.const 30)                 ;; 3  (otherwise)
  ;; n tail calls of 7 instructions, then 4: countdown(n) = 7 n + 4, all in
  ;; countdown (a tail call replaces its caller).
  (func $countdown (export "countdown") (param $n i32) (result i32)
    (block
      local.get $n                ;; 1
      i32.eqz                     ;; 2
      br_if 0                     ;; 3
      local.get $n                ;; 4
      i32.const 1                 ;; 5
      i32.sub                     ;; 6
      return_call $countdown)     ;; 7
    i32.const 0)                  ;; 4  (n = 0)

  ;; A loop whose label shares its word with an earlier one, with a counted
  ;; instruction that emits nothing (nop) between them: the back-edge must
  ;; not count the nop again. nested() = 1 + 5 * 7 + 1 = 37.
  (func $nested (export "nested") (result i32) (local i32)
    (loop $a
      nop                         ;; 1
      (loop $b
        local.get 0  i32.const 1  i32.add  local.tee 0   ;; 4 per iteration
        i32.const 5  i32.lt_s                            ;; 6
        br_if $b))                                       ;; 7
    local.get 0)                  ;; 1
)
