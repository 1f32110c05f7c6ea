;; Bodies the VM knows (vm/known_bodies.def), called as Go calls them:
;; tests/known_bodies_test.cc. $mul64 is Go 1.22's and 1.23's math/bits.Mul64
;; instruction for instruction (Go's wasm ABI: the stack pointer in global 0,
;; arguments and results on that stack, the i32 parameter a resume point);
;; $mul64_other differs from it in one constant, so the VM must run it as
;; written.
(module
  (memory 1)
  (global $sp (mut i32) (i32.const 4096))

  (func $mul64 (param i32) (result i32) (local i32 i64 i64 i64 i64)
    global.get 0
    local.set 1
    block
      block
        local.get 0
        br_table 0 1
      end
      local.get 1
      i64.load offset=8
      i64.const 4294967295
      i64.and
      local.set 2
      local.get 1
      i64.load offset=8
      i64.const 32
      i64.shr_u
      local.set 3
      local.get 1
      i64.load offset=16
      i64.const 4294967295
      i64.and
      local.set 4
      local.get 1
      i64.load offset=16
      i64.const 32
      i64.shr_u
      local.set 5
      local.get 4
      local.get 2
      i64.mul
      i64.const 32
      i64.shr_u
      local.get 4
      local.get 3
      i64.mul
      i64.add
      local.tee 4
      i64.const 32
      i64.shr_u
      local.get 5
      local.get 3
      i64.mul
      i64.add
      local.get 5
      local.get 2
      i64.mul
      local.get 4
      i64.const 4294967295
      i64.and
      i64.add
      i64.const 32
      i64.shr_u
      i64.add
      local.set 2
      local.get 1
      i64.load offset=16
      local.get 1
      i64.load offset=8
      i64.mul
      local.set 3
      local.get 1
      i64.extend_i32_u
      i64.const 24
      i64.add
      i32.wrap_i64
      local.get 2
      i64.store
      local.get 1
      i64.extend_i32_u
      i64.const 32
      i64.add
      i32.wrap_i64
      local.get 3
      i64.store
      local.get 1
      i32.const 8
      i32.add
      local.tee 1
      global.set 0
      i32.const 0
      return
    end
    unreachable)

  ;; The same but for the last shift of the high half (31, not 32).
  (func $mul64_other (param i32) (result i32) (local i32 i64 i64 i64 i64)
    global.get 0
    local.set 1
    block
      block
        local.get 0
        br_table 0 1
      end
      local.get 1
      i64.load offset=8
      i64.const 4294967295
      i64.and
      local.set 2
      local.get 1
      i64.load offset=8
      i64.const 32
      i64.shr_u
      local.set 3
      local.get 1
      i64.load offset=16
      i64.const 4294967295
      i64.and
      local.set 4
      local.get 1
      i64.load offset=16
      i64.const 32
      i64.shr_u
      local.set 5
      local.get 4
      local.get 2
      i64.mul
      i64.const 32
      i64.shr_u
      local.get 4
      local.get 3
      i64.mul
      i64.add
      local.tee 4
      i64.const 32
      i64.shr_u
      local.get 5
      local.get 3
      i64.mul
      i64.add
      local.get 5
      local.get 2
      i64.mul
      local.get 4
      i64.const 4294967295
      i64.and
      i64.add
      i64.const 31
      i64.shr_u
      i64.add
      local.set 2
      local.get 1
      i64.load offset=16
      local.get 1
      i64.load offset=8
      i64.mul
      local.set 3
      local.get 1
      i64.extend_i32_u
      i64.const 24
      i64.add
      i32.wrap_i64
      local.get 2
      i64.store
      local.get 1
      i64.extend_i32_u
      i64.const 32
      i64.add
      i32.wrap_i64
      local.get 3
      i64.store
      local.get 1
      i32.const 8
      i32.add
      local.tee 1
      global.set 0
      i32.const 0
      return
    end
    unreachable)

  (func (export "sp_set") (param i32) local.get 0 global.set 0)
  (func (export "sp_get") (result i32) global.get 0)

  ;; x * y as Go's caller computes it: x and y at sp, sp+8, the return
  ;; address pushed (sp - 8), the call with resume point $pc; then the
  ;; results at sp+16 (high) and sp+24 (low), the call's own result, and the
  ;; stack pointer it left (Go's caller reloads it after every call).
  (func (export "mul") (param $x i64) (param $y i64) (param $pc i32) (result i64 i64 i32 i32)
    (local $s i32) (local $r i32)
    global.get 0
    local.set $s
    local.get $s
    local.get $x
    i64.store
    local.get $s
    local.get $y
    i64.store offset=8
    local.get $s
    i32.const 8
    i32.sub
    global.set 0
    local.get $s
    i32.const 8
    i32.sub
    i64.const 12345
    i64.store
    local.get $pc
    call $mul64
    local.set $r
    local.get $s
    i64.load offset=16
    local.get $s
    i64.load offset=24
    local.get $r
    global.get 0)

  ;; The same call sequence to $mul64_other, with the resume point 0.
  (func (export "mul_other") (param $x i64) (param $y i64) (result i64 i64 i32 i32)
    (local $s i32) (local $r i32)
    global.get 0
    local.set $s
    local.get $s
    local.get $x
    i64.store
    local.get $s
    local.get $y
    i64.store offset=8
    local.get $s
    i32.const 8
    i32.sub
    global.set 0
    local.get $s
    i32.const 8
    i32.sub
    i64.const 12345
    i64.store
    i32.const 0
    call $mul64_other
    local.set $r
    local.get $s
    i64.load offset=16
    local.get $s
    i64.load offset=24
    local.get $r
    global.get 0))
