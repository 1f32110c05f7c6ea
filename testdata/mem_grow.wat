;; memory.grow without any allocator (tests/memory_profile_test.cc,
;; tests/memory_cli_test.cc): the memory profile must still show who grew
;; the memory, by how much, and its size after each grow. 64 KiB pages.
(module
  (memory (export "memory") 1 10)

  ;; One page per call.
  (func $bump (result i32) (memory.grow (i32.const 1)))
  ;; Four pages at once.
  (func $big (result i32) (memory.grow (i32.const 4)))

  ;; bump three times (1 -> 2 -> 3 -> 4 pages), big once (4 -> 8); a grow by
  ;; 0 pages (a size query) and one past the maximum (fails, -1) are not
  ;; reported. Returns the final size in pages: 8.
  (func (export "run") (result i32)
    (drop (call $bump))
    (drop (call $bump))
    (drop (call $bump))
    (drop (call $big))
    (drop (memory.grow (i32.const 0)))
    (drop (memory.grow (i32.const 100)))
    (memory.size))

  ;; Grows by one page and spins for about `n` iterations: a guest that
  ;; stays alive for the live endpoint's tests (tests/viewers_test.cc).
  (func (export "grow_and_spin") (param $n i32) (result i32)
    (drop (call $bump))
    (block $done
      (loop $l
        (br_if $done (i32.eqz (local.get $n)))
        (local.set $n (i32.sub (local.get $n) (i32.const 1)))
        (br $l)))
    (memory.size))
)
