;; Bodies the VM knows (vm/known_bodies.def), called as Go calls them:
;; tests/known_bodies_test.cc. $mul64 is Go 1.22's and 1.23's math/bits.Mul64
;; instruction for instruction (Go's wasm ABI: the stack pointer in global 0,
;; arguments and results on that stack, the i32 parameter a resume point);
;; $mul64_other differs from it in one constant, so the VM must run it as
;; written. $mul_add_www is Go 1.22's and 1.23's math/big.mulAddWWW_g but for
;; the immediates its row leaves open (the calls' function indices, the
;; return addresses it pushes); $mul_add_www_other calls $mul64_other, so it
;; is not one the VM knows. $add_mul_vvw is Go 1.22's and 1.23's
;; math/big.addMulVVW_g and $mul_add_vww its mulAddVWW_g, holes filled
;; alike, both calling $mul_add_www.
(module
  (memory 1)
  (global $sp (mut i32) (i32.const 4096))
  ;; Go's other two globals as mulAddWWW_g reads them: 1 is unused here (it
  ;; counts morestack's calls), 2 is the goroutine, whose stack guard is the
  ;; i32 at g + 16.
  (global $morestack_calls (mut i32) (i32.const 0))
  (global $g (mut i64) (i64.const 256))

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
    global.get 0)
  ;; Go's morestack, as far as the test sees it: counted, then the unwinding
  ;; a real one starts (1 returned), the return address popped.
  (func $morestack (param i32) (result i32)
    global.get 1
    i32.const 1
    i32.add
    global.set 1
    global.get 0
    i32.const 8
    i32.add
    global.set 0
    i32.const 1)

  (func $mul_add_www (param i32) (result i32) (local i32 i64 i64 i64)
    global.get 0
    local.set 1
    block
      block
        block
          block
            local.get 0
            br_table 0 0 0 0 1 1 1 1 1 1 2
          end
          local.get 1
          global.get 2
          i32.wrap_i64
          i32.load offset=16
          i32.le_u
          if
            local.get 1
            i32.const 8
            i32.sub
            local.tee 1
            global.set 0
            local.get 1
            i64.const 374341632
            i64.store
            i32.const 0
            call $morestack
            global.get 0
            local.set 1
            br_if 3
          end
          local.get 1
          i32.const 32
          i32.sub
          local.tee 1
          global.set 0
          nop
          local.get 1
          local.get 1
          i64.load offset=40
          i64.store
          local.get 1
          i64.extend_i32_u
          i64.const 8
          i64.add
          i32.wrap_i64
          local.get 1
          i64.load offset=48
          i64.store
          local.get 1
          i32.const 8
          i32.sub
          local.tee 1
          global.set 0
          local.get 1
          i64.const 1111111111111
          i64.store
          i32.const 0
          call $mul64
          global.get 0
          local.set 1
          br_if 2
        end
        local.get 1
        i64.load offset=24
        local.set 2
        local.get 1
        i64.load offset=16
        local.set 3
        local.get 2
        local.get 1
        i64.load offset=56
        i64.add
        local.set 4
        local.get 3
        local.get 4
        i64.const -1
        i64.xor
        local.get 2
        local.get 1
        i64.load offset=56
        i64.or
        i64.and
        local.get 2
        local.get 1
        i64.load offset=56
        i64.and
        i64.or
        i64.const 63
        i64.shr_u
        i64.add
        local.set 2
        nop
        nop
        local.get 1
        i64.extend_i32_u
        i64.const 64
        i64.add
        i32.wrap_i64
        local.get 2
        i64.store
        local.get 1
        i64.extend_i32_u
        i64.const 72
        i64.add
        i32.wrap_i64
        local.get 4
        i64.store
        local.get 1
        i32.const 32
        i32.add
        local.tee 1
        global.set 0
        local.get 1
        i32.const 8
        i32.add
        local.tee 1
        global.set 0
        i32.const 0
        return
      end
      unreachable
    end
    i32.const 1)

  (func $mul_add_www_other (param i32) (result i32) (local i32 i64 i64 i64)
    global.get 0
    local.set 1
    block
      block
        block
          block
            local.get 0
            br_table 0 0 0 0 1 1 1 1 1 1 2
          end
          local.get 1
          global.get 2
          i32.wrap_i64
          i32.load offset=16
          i32.le_u
          if
            local.get 1
            i32.const 8
            i32.sub
            local.tee 1
            global.set 0
            local.get 1
            i64.const 374341632
            i64.store
            i32.const 0
            call $morestack
            global.get 0
            local.set 1
            br_if 3
          end
          local.get 1
          i32.const 32
          i32.sub
          local.tee 1
          global.set 0
          nop
          local.get 1
          local.get 1
          i64.load offset=40
          i64.store
          local.get 1
          i64.extend_i32_u
          i64.const 8
          i64.add
          i32.wrap_i64
          local.get 1
          i64.load offset=48
          i64.store
          local.get 1
          i32.const 8
          i32.sub
          local.tee 1
          global.set 0
          local.get 1
          i64.const 1111111111111
          i64.store
          i32.const 0
          call $mul64_other
          global.get 0
          local.set 1
          br_if 2
        end
        local.get 1
        i64.load offset=24
        local.set 2
        local.get 1
        i64.load offset=16
        local.set 3
        local.get 2
        local.get 1
        i64.load offset=56
        i64.add
        local.set 4
        local.get 3
        local.get 4
        i64.const -1
        i64.xor
        local.get 2
        local.get 1
        i64.load offset=56
        i64.or
        i64.and
        local.get 2
        local.get 1
        i64.load offset=56
        i64.and
        i64.or
        i64.const 63
        i64.shr_u
        i64.add
        local.set 2
        nop
        nop
        local.get 1
        i64.extend_i32_u
        i64.const 64
        i64.add
        i32.wrap_i64
        local.get 2
        i64.store
        local.get 1
        i64.extend_i32_u
        i64.const 72
        i64.add
        i32.wrap_i64
        local.get 4
        i64.store
        local.get 1
        i32.const 32
        i32.add
        local.tee 1
        global.set 0
        local.get 1
        i32.const 8
        i32.add
        local.tee 1
        global.set 0
        i32.const 0
        return
      end
      unreachable
    end
    i32.const 1)

  (func (export "morestack_calls") (result i32) global.get 1)
  (func $guard_set (export "guard_set") (param i32) i32.const 272 local.get 0 i32.store)

  ;; x*y + c as Go's callers of mulAddWWW_g compute it: x, y and c at sp,
  ;; sp+8, sp+16, the return address pushed, the call with resume point $pc;
  ;; then z1 (sp+24) and z0 (sp+32), the call's result, the stack pointer it
  ;; left, and the five words it and Mul64 left below its frame (the
  ;; return address it pushed, x, y, and Mul64's high and low halves).
  (func (export "maw") (param $x i64) (param $y i64) (param $c i64) (param $pc i32)
    (result i64 i64 i32 i32 i64 i64 i64 i64 i64)
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
    local.get $c
    i64.store offset=16
    local.get $s
    i32.const 8
    i32.sub
    global.set 0
    local.get $s
    i32.const 8
    i32.sub
    i64.const 777
    i64.store
    local.get $pc
    call $mul_add_www
    local.set $r
    local.get $s
    i64.load offset=24
    local.get $s
    i64.load offset=32
    local.get $r
    global.get 0
    local.get $s
    i32.const 48
    i32.sub
    i64.load
    local.get $s
    i32.const 40
    i32.sub
    i64.load
    local.get $s
    i32.const 32
    i32.sub
    i64.load
    local.get $s
    i32.const 24
    i32.sub
    i64.load
    local.get $s
    i32.const 16
    i32.sub
    i64.load)
  (func (export "maw_other") (param $x i64) (param $y i64) (param $c i64) (param $pc i32)
    (result i64 i64 i32 i32 i64 i64 i64 i64 i64)
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
    local.get $c
    i64.store offset=16
    local.get $s
    i32.const 8
    i32.sub
    global.set 0
    local.get $s
    i32.const 8
    i32.sub
    i64.const 777
    i64.store
    local.get $pc
    call $mul_add_www_other
    local.set $r
    local.get $s
    i64.load offset=24
    local.get $s
    i64.load offset=32
    local.get $r
    global.get 0
    local.get $s
    i32.const 48
    i32.sub
    i64.load
    local.get $s
    i32.const 40
    i32.sub
    i64.load
    local.get $s
    i32.const 32
    i32.sub
    i64.load
    local.get $s
    i32.const 24
    i32.sub
    i64.load
    local.get $s
    i32.const 16
    i32.sub
    i64.load)
  (func $add_mul_vvw (param i32) (result i32) (local i32 i64 i64 i64 i64 i64 i64 i64)
    global.get 0
    local.set 1
    block
    loop
    block
    block
    block
    block
    block
    block
    block
    local.get 0
    br_table 0 0 1 2 2 2 2 2 2 3 4 5 6
    end
    local.get 1
    global.get 2
    i32.wrap_i64
    i32.load offset=16
    i32.le_u
    if
    local.get 1
    i32.const 8
    i32.sub
    local.tee 1
    global.set 0
    local.get 1
    i64.const 374341632
    i64.store
    i32.const 0
    call $morestack
    global.get 0
    local.set 1
    br_if 8
    end
    local.get 1
    i32.const 64
    i32.sub
    local.tee 1
    global.set 0
    local.get 1
    i64.load offset=80
    local.set 2
    local.get 1
    i64.load offset=104
    local.set 3
    local.get 1
    i64.load offset=96
    local.set 4
    local.get 1
    i64.load offset=120
    local.set 5
    local.get 1
    i64.load offset=72
    local.set 6
    i64.const 0
    local.set 7
    i64.const 0
    local.set 8
    i32.const 9
    local.set 0
    br 6
    end
    local.get 1
    local.get 7
    i64.store offset=40
    local.get 1
    local.get 8
    i64.store offset=48
    local.get 7
    i64.const 3
    i64.shl
    local.set 2
    local.get 4
    local.get 2
    i64.add
    i32.wrap_i64
    i64.load
    local.set 3
    local.get 6
    local.get 2
    i64.add
    local.set 2
    local.get 1
    local.get 2
    i64.store offset=56
    local.get 2
    i32.wrap_i64
    i64.load
    local.set 8
    local.get 1
    local.get 3
    i64.store
    local.get 1
    i64.extend_i32_u
    i64.const 8
    i64.add
    i32.wrap_i64
    local.get 5
    i64.store
    local.get 1
    i64.extend_i32_u
    i64.const 16
    i64.add
    i32.wrap_i64
    local.get 8
    i64.store
    local.get 1
    i32.const 8
    i32.sub
    local.tee 1
    global.set 0
    local.get 1
    i64.const 2222222222222
    i64.store
    i32.const 0
    call $mul_add_www
    global.get 0
    local.set 1
    br_if 6
    end
    local.get 1
    i64.extend_i32_u
    i64.const 32
    i64.add
    i32.wrap_i64
    i64.load
    local.set 2
    local.get 1
    i64.extend_i32_u
    i64.const 24
    i64.add
    i32.wrap_i64
    i64.load
    local.set 3
    local.get 2
    local.get 1
    i64.load offset=48
    i64.add
    local.tee 4
    i64.const -1
    i64.xor
    local.get 1
    i64.load offset=48
    local.get 2
    i64.or
    i64.and
    local.get 1
    i64.load offset=48
    local.get 2
    i64.and
    i64.or
    i64.const 63
    i64.shr_u
    local.set 2
    local.get 1
    i64.load offset=40
    i64.const 1
    i64.add
    local.set 7
    nop
    local.get 2
    local.get 3
    i64.add
    local.set 8
    nop
    local.get 1
    i64.load offset=56
    i32.wrap_i64
    local.get 4
    i64.store
    local.get 1
    i64.load offset=80
    local.set 2
    local.get 1
    i64.load offset=104
    local.set 3
    local.get 1
    i64.load offset=96
    local.set 4
    local.get 1
    i64.load offset=120
    local.set 5
    local.get 1
    i64.load offset=72
    local.set 6
    end
    local.get 7
    local.get 2
    i64.lt_s
    i32.eqz
    if
    i32.const 11
    local.set 0
    br 4
    end
    end
    local.get 7
    local.get 3
    i64.lt_s
    if
    i32.const 2
    local.set 0
    br 3
    end
    end
    local.get 1
    i64.extend_i32_u
    i64.const 128
    i64.add
    i32.wrap_i64
    local.get 8
    i64.store
    local.get 1
    i32.const 64
    i32.add
    local.tee 1
    global.set 0
    local.get 1
    i32.const 8
    i32.add
    local.tee 1
    global.set 0
    i32.const 0
    return
    end
    end
    unreachable
    end
    i32.const 1)

  ;; z[0..lenz) and x[0..lenx) at $zp and $xp filled from $seed (one
  ;; sequence over the words from the lower of the two to the end of the
  ;; upper, so overlapping slices share words), then c = z += x*y as Go
  ;; calls addMulVVW_g: z, x (pointer, length, capacity) and y at sp, the
  ;; return address pushed, the call with resume point $pc. Returns c
  ;; (sp+56), the call's result, the stack pointer it left, a hash of z's
  ;; words and one of the 14 words below the callee's sp0 (frame, scratch).
  (func $amv (export "amv") (param $zp i32) (param $lenz i64) (param $xp i32) (param $lenx i64)
    (param $y i64) (param $seed i64) (param $pc i32) (result i64 i32 i32 i64 i64)
    (local $s i32) (local $r i32) (local $a i32) (local $end i32) (local $h i64)
    ;; fill
    local.get $zp
    local.get $xp
    local.get $zp
    local.get $xp
    i32.lt_u
    select
    local.set $a
    local.get $zp
    local.get $lenz
    i32.wrap_i64
    i32.const 3
    i32.shl
    i32.add
    local.tee $end
    local.get $xp
    local.get $lenx
    i32.wrap_i64
    i32.const 3
    i32.shl
    i32.add
    local.tee $r
    local.get $end
    local.get $r
    i32.gt_u
    select
    local.set $end
    block
      loop
        local.get $a
        local.get $end
        i32.ge_u
        br_if 1
        local.get $seed
        i64.const 6364136223846793005
        i64.mul
        i64.const 1442695040888963407
        i64.add
        local.tee $seed
        local.set $h
        local.get $a
        local.get $h
        local.get $h
        i64.const 29
        i64.shr_u
        i64.xor
        i64.store
        local.get $a
        i32.const 8
        i32.add
        local.set $a
        br 0
      end
    end
    ;; the call
    global.get 0
    local.set $s
    local.get $s
    local.get $zp
    i64.extend_i32_u
    i64.store
    local.get $s
    local.get $lenz
    i64.store offset=8
    local.get $s
    local.get $lenz
    i64.store offset=16
    local.get $s
    local.get $xp
    i64.extend_i32_u
    i64.store offset=24
    local.get $s
    local.get $lenx
    i64.store offset=32
    local.get $s
    local.get $lenx
    i64.store offset=40
    local.get $s
    local.get $y
    i64.store offset=48
    local.get $s
    i32.const 8
    i32.sub
    global.set 0
    local.get $s
    i32.const 8
    i32.sub
    i64.const 777
    i64.store
    local.get $pc
    call $add_mul_vvw
    local.set $r
    local.get $s
    i64.load offset=56
    local.get $r
    global.get 0
    ;; z's hash
    i64.const 0
    local.set $h
    local.get $zp
    local.set $a
    block
      loop
        local.get $a
        local.get $zp
        local.get $lenz
        i32.wrap_i64
        i32.const 3
        i32.shl
        i32.add
        i32.ge_u
        br_if 1
        local.get $h
        i64.const 5
        i64.rotl
        local.get $a
        i64.load
        i64.xor
        local.set $h
        local.get $a
        i32.const 8
        i32.add
        local.set $a
        br 0
      end
    end
    local.get $h
    ;; the stack words' hash: sp0-112 to sp0 (sp0 = s - 8)
    i64.const 0
    local.set $h
    local.get $s
    i32.const 120
    i32.sub
    local.set $a
    block
      loop
        local.get $a
        local.get $s
        i32.const 8
        i32.sub
        i32.ge_u
        br_if 1
        local.get $h
        i64.const 5
        i64.rotl
        local.get $a
        i64.load
        i64.xor
        local.set $h
        local.get $a
        i32.const 8
        i32.add
        local.set $a
        br 0
      end
    end
    local.get $h)

  (func $mul_add_vww (param i32) (result i32) (local i32 i64 i64 i64 i64 i64 i64 i64)
    global.get 0
    local.set 1
    block
    loop
    block
    block
    block
    block
    block
    block
    block
    local.get 0
    br_table 0 0 1 2 3 4 5 6
    end
    local.get 1
    global.get 2
    i32.wrap_i64
    i32.load offset=16
    i32.le_u
    if
    local.get 1
    i32.const 8
    i32.sub
    local.tee 1
    global.set 0
    local.get 1
    i64.const 374800384
    i64.store
    i32.const 0
    call $morestack
    global.get 0
    local.set 1
    br_if 8
    end
    local.get 1
    i32.const 56
    i32.sub
    local.tee 1
    global.set 0
    local.get 1
    i64.load offset=64
    local.set 2
    local.get 1
    i64.load offset=96
    local.set 3
    local.get 1
    i64.load offset=72
    local.set 4
    local.get 1
    i64.load offset=112
    local.set 5
    local.get 1
    i64.load offset=88
    local.set 6
    local.get 1
    i64.load offset=120
    local.set 7
    i64.const 0
    local.set 8
    i32.const 4
    local.set 0
    br 6
    end
    local.get 1
    local.get 8
    i64.store offset=40
    local.get 8
    i64.const 3
    i64.shl
    local.set 3
    local.get 2
    local.get 3
    i64.add
    local.set 4
    local.get 1
    local.get 4
    i64.store offset=48
    local.get 1
    local.get 6
    local.get 3
    i64.add
    i32.wrap_i64
    i64.load
    i64.store
    local.get 1
    i64.extend_i32_u
    i64.const 8
    i64.add
    i32.wrap_i64
    local.get 5
    i64.store
    local.get 1
    i64.extend_i32_u
    i64.const 16
    i64.add
    i32.wrap_i64
    local.get 7
    i64.store
    local.get 1
    i32.const 8
    i32.sub
    local.tee 1
    global.set 0
    local.get 1
    i64.const 3333333333333
    i64.store
    i32.const 0
    call $mul_add_www
    global.get 0
    local.set 1
    br_if 6
    end
    local.get 1
    i64.extend_i32_u
    i64.const 32
    i64.add
    i32.wrap_i64
    i64.load
    local.set 2
    local.get 1
    i64.load offset=40
    i64.const 1
    i64.add
    local.set 8
    local.get 1
    i64.extend_i32_u
    i64.const 24
    i64.add
    i32.wrap_i64
    i64.load
    local.set 7
    local.get 1
    i64.load offset=48
    i32.wrap_i64
    local.get 2
    i64.store
    local.get 1
    i64.load offset=64
    local.set 2
    local.get 1
    i64.load offset=96
    local.set 3
    local.get 1
    i64.load offset=72
    local.set 4
    local.get 1
    i64.load offset=112
    local.set 5
    local.get 1
    i64.load offset=88
    local.set 6
    end
    local.get 8
    local.get 4
    i64.lt_s
    i32.eqz
    if
    i32.const 6
    local.set 0
    br 4
    end
    end
    local.get 8
    local.get 3
    i64.lt_s
    if
    i32.const 2
    local.set 0
    br 3
    end
    end
    local.get 1
    i64.extend_i32_u
    i64.const 128
    i64.add
    i32.wrap_i64
    local.get 7
    i64.store
    local.get 1
    i32.const 56
    i32.add
    local.tee 1
    global.set 0
    local.get 1
    i32.const 8
    i32.add
    local.tee 1
    global.set 0
    i32.const 0
    return
    end
    end
    unreachable
    end
    i32.const 1)

  ;; As amv, c = z = x*y + r by mulAddVWW_g: r at sp+56, c returned from
  ;; sp+64, the 13 words below the callee's sp0 hashed.
  (func $mav (export "mav") (param $zp i32) (param $lenz i64) (param $xp i32) (param $lenx i64)
    (param $y i64) (param $r i64) (param $seed i64) (param $pc i32) (result i64 i32 i32 i64 i64)
    (local $s i32) (local $t i32) (local $a i32) (local $end i32) (local $h i64)
    ;; fill
    local.get $zp
    local.get $xp
    local.get $zp
    local.get $xp
    i32.lt_u
    select
    local.set $a
    local.get $zp
    local.get $lenz
    i32.wrap_i64
    i32.const 3
    i32.shl
    i32.add
    local.tee $end
    local.get $xp
    local.get $lenx
    i32.wrap_i64
    i32.const 3
    i32.shl
    i32.add
    local.tee $t
    local.get $end
    local.get $t
    i32.gt_u
    select
    local.set $end
    block
      loop
        local.get $a
        local.get $end
        i32.ge_u
        br_if 1
        local.get $seed
        i64.const 6364136223846793005
        i64.mul
        i64.const 1442695040888963407
        i64.add
        local.tee $seed
        local.set $h
        local.get $a
        local.get $h
        local.get $h
        i64.const 29
        i64.shr_u
        i64.xor
        i64.store
        local.get $a
        i32.const 8
        i32.add
        local.set $a
        br 0
      end
    end
    ;; the call
    global.get 0
    local.set $s
    local.get $s
    local.get $zp
    i64.extend_i32_u
    i64.store
    local.get $s
    local.get $lenz
    i64.store offset=8
    local.get $s
    local.get $lenz
    i64.store offset=16
    local.get $s
    local.get $xp
    i64.extend_i32_u
    i64.store offset=24
    local.get $s
    local.get $lenx
    i64.store offset=32
    local.get $s
    local.get $lenx
    i64.store offset=40
    local.get $s
    local.get $y
    i64.store offset=48
    local.get $s
    local.get $r
    i64.store offset=56
    local.get $s
    i32.const 8
    i32.sub
    global.set 0
    local.get $s
    i32.const 8
    i32.sub
    i64.const 777
    i64.store
    local.get $pc
    call $mul_add_vww
    local.set $pc
    local.get $s
    i64.load offset=64
    local.get $pc
    global.get 0
    ;; z's hash
    i64.const 0
    local.set $h
    local.get $zp
    local.set $a
    block
      loop
        local.get $a
        local.get $zp
        local.get $lenz
        i32.wrap_i64
        i32.const 3
        i32.shl
        i32.add
        i32.ge_u
        br_if 1
        local.get $h
        i64.const 5
        i64.rotl
        local.get $a
        i64.load
        i64.xor
        local.set $h
        local.get $a
        i32.const 8
        i32.add
        local.set $a
        br 0
      end
    end
    local.get $h
    ;; the stack words' hash: sp0-104 to sp0 (sp0 = s - 8)
    i64.const 0
    local.set $h
    local.get $s
    i32.const 112
    i32.sub
    local.set $a
    block
      loop
        local.get $a
        local.get $s
        i32.const 8
        i32.sub
        i32.ge_u
        br_if 1
        local.get $h
        i64.const 5
        i64.rotl
        local.get $a
        i64.load
        i64.xor
        local.set $h
        local.get $a
        i32.const 8
        i32.add
        local.set $a
        br 0
      end
    end
    local.get $h)

  ;; The goroutine's stack guard set, then amv: one call for a counted run.
  (func (export "guard_set_and_amv") (param $guard i32) (param i32 i64 i32 i64 i64 i64 i32)
    (result i64 i32 i32 i64 i64)
    local.get $guard
    call $guard_set
    local.get 1
    local.get 2
    local.get 3
    local.get 4
    local.get 5
    local.get 6
    local.get 7
    call $amv)

  (func (export "guard_set_and_mav") (param $guard i32) (param i32 i64 i32 i64 i64 i64 i64 i32)
    (result i64 i32 i32 i64 i64)
    local.get $guard
    call $guard_set
    local.get 1
    local.get 2
    local.get 3
    local.get 4
    local.get 5
    local.get 6
    local.get 7
    local.get 8
    call $mav))
