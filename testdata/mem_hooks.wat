;; Memory profiling hooks (tests/memory_profile_test.cc): a bump allocator
;; under the C and C++ allocator names, and one export per case, each the
;; allocator's caller (the leaf of the memory profile's stacks).
(module
  (memory (export "memory") 1)
  (global $top (mut i32) (i32.const 1024))
  (table 1 funcref)
  (elem (i32.const 0) $malloc)
  (type $alloc_t (func (param i32) (result i32)))

  ;; Bump allocation in 16-byte steps; sizes of 64 KiB and more fail (0).
  ;; 0xDEAD traps, to leave a hooked call that never returns.
  (func $malloc (param $n i32) (result i32)
    (if (i32.eq (local.get $n) (i32.const 0xDEAD)) (then unreachable))
    (if (i32.ge_u (local.get $n) (i32.const 0x10000)) (then (return (i32.const 0))))
    global.get $top
    (global.set $top (i32.add (global.get $top)
                              (i32.and (i32.add (local.get $n) (i32.const 16)) (i32.const -16)))))
  (func $free (param i32))
  ;; Calls malloc: nested hooked calls must not count twice.
  (func $calloc (param $n i32) (param $size i32) (result i32)
    (if (i64.gt_u (i64.mul (i64.extend_i32_u (local.get $n)) (i64.extend_i32_u (local.get $size)))
                  (i64.const 0xFFFFFFFF))
      (then (return (i32.const 0))))
    (call $malloc (i32.mul (local.get $n) (local.get $size))))
  ;; realloc(p, 0) frees and returns 0; otherwise a new block (no copy needed here).
  (func $realloc (param $p i32) (param $n i32) (result i32)
    (if (i32.and (i32.eqz (local.get $n)) (i32.ne (local.get $p) (i32.const 0)))
      (then (call $free (local.get $p)) (return (i32.const 0))))
    (call $malloc (local.get $n)))
  ;; Stores the block at *out only when out is in bounds, so a test can make
  ;; it report success with an out-of-bounds pointer.
  (func $posix_memalign (param $out i32) (param $align i32) (param $n i32) (result i32)
    (local $p i32)
    (local.set $p (call $malloc (local.get $n)))
    (if (i32.eqz (local.get $p)) (then (return (i32.const 12))))
    (if (i32.le_u (local.get $out) (i32.const 65532)) (then (i32.store (local.get $out) (local.get $p))))
    (i32.const 0))
  (func $_Znwm (param $n i32) (result i32) (call $malloc (local.get $n)))
  (func $_ZdlPv (param $p i32) (call $free (local.get $p)))
  ;; Named like an allocator but with the wrong signature: never hooked.
  (func $aligned_alloc (param $n i32) (result i32) (call $malloc (local.get $n)))
  ;; Only an allocator when named with --alloc-fn my_alloc=malloc.
  (func $my_alloc (param $n i32) (result i32) (call $malloc (local.get $n)))
  (func $xmalloc (param $n i32) (result i32) (call $malloc (local.get $n)))

  (func (export "alloc") (param $n i32) (result i32) (call $malloc (local.get $n)))
  (func (export "release") (param $p i32) (call $free (local.get $p)))
  (func (export "resize") (param $p i32) (param $n i32) (result i32) (call $realloc (local.get $p) (local.get $n)))
  (func (export "zeroed") (param $n i32) (param $s i32) (result i32) (call $calloc (local.get $n) (local.get $s)))
  (func (export "memalign") (param $out i32) (param $n i32) (result i32)
    (call $posix_memalign (local.get $out) (i32.const 16) (local.get $n)))
  (func (export "new") (param $n i32) (result i32) (call $_Znwm (local.get $n)))
  (func (export "delete") (param $p i32) (call $_ZdlPv (local.get $p)))
  (func (export "indirect") (param $n i32) (result i32)
    (call_indirect (type $alloc_t) (local.get $n) (i32.const 0)))
  (func (export "wrapped") (param $n i32) (result i32) (call $xmalloc (local.get $n)))
  ;; malloc through xmalloc, then directly: the second call's frame is where
  ;; xmalloc's was, so a call-tree node cached in that frame must not be reused.
  (func (export "both") (param $n i32) (result i32)
    (drop (call $xmalloc (local.get $n)))
    (call $malloc (local.get $n)))
  (func (export "boom") (result i32) (call $malloc (i32.const 0xDEAD)))
  (func (export "wrong") (param $n i32) (result i32) (call $aligned_alloc (local.get $n)))
  (func (export "mine") (param $n i32) (result i32) (call $my_alloc (local.get $n)))
)
