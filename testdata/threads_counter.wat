;; wasi-threads test program (hand-written: Debian's wasi-libc has no
;; wasm32-wasi-threads target). `_start` spawns 4 threads; each does K rounds
;; of (an atomic increment of one shared counter; a non-atomic increment of a
;; second counter under a mutex built from cmpxchg/xchg and
;; memory.atomic.wait32/notify). Each thread then counts itself done and
;; notifies; the main thread waits on that count with memory.atomic.wait32 and
;; prints "threads 4 atomic A locked L\n". Both totals are exactly 4*K only if
;; the atomics are atomic and the mutex excludes: racing plain increments lose
;; updates. K is argv[1] (decimal), 10000 without it.
;;
;; --invoke exit_in_thread: a thread calls proc_exit(7) while the main thread
;; waits forever; the process must end with status 7.
;; --invoke trap_in_thread: a thread traps (unreachable) while the main thread
;; waits forever; the process must end with a trap naming the thread.
;; --invoke wait_forever: only --timeout ends it.
(module
  (import "wasi" "thread-spawn" (func $spawn (param i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (import "wasi_snapshot_preview1" "args_sizes_get" (func $args_sizes_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "args_get" (func $args_get (param i32 i32) (result i32)))
  (import "env" "memory" (memory 1 1 shared))

  ;; Memory layout.
  (global $ATOMIC i32 (i32.const 0))   ;; counter incremented atomically
  (global $MUTEX i32 (i32.const 4))    ;; 0 free, 1 locked, 2 locked with waiters
  (global $LOCKED i32 (i32.const 8))   ;; counter incremented under the mutex
  (global $DONE i32 (i32.const 12))    ;; threads finished
  (global $ROUNDS i32 (i32.const 16))  ;; K, written by _start before spawning
  (global $NEVER i32 (i32.const 20))   ;; stays 0: the main thread waits on it forever
  ;; 64..: iovec, 128..: output text, 256..: argv pointers, 512..: argv strings
  (global $THREADS i32 (i32.const 4))

  ;; A futex-style mutex: uncontended lock and unlock are one atomic each;
  ;; a contended lock marks the word 2 and sleeps until an unlock wakes it.
  (func $lock
    (local $c i32)
    (local.set $c (i32.atomic.rmw.cmpxchg (global.get $MUTEX) (i32.const 0) (i32.const 1)))
    (if (local.get $c)
      (then
        (if (i32.ne (local.get $c) (i32.const 2))
          (then (local.set $c (i32.atomic.rmw.xchg (global.get $MUTEX) (i32.const 2)))))
        (block $acquired
          (loop $retry
            (br_if $acquired (i32.eqz (local.get $c)))
            (drop (memory.atomic.wait32 (global.get $MUTEX) (i32.const 2) (i64.const -1)))
            (local.set $c (i32.atomic.rmw.xchg (global.get $MUTEX) (i32.const 2)))
            (br $retry))))))

  (func $unlock
    (if (i32.ne (i32.atomic.rmw.sub (global.get $MUTEX) (i32.const 1)) (i32.const 1))
      (then
        (i32.atomic.store (global.get $MUTEX) (i32.const 0))
        (drop (memory.atomic.notify (global.get $MUTEX) (i32.const 1))))))

  (func $work (param $rounds i32)
    (local $i i32)
    (block $done
      (loop $round
        (br_if $done (i32.ge_u (local.get $i) (local.get $rounds)))
        (drop (i32.atomic.rmw.add (global.get $ATOMIC) (i32.const 1)))
        (call $lock)
        ;; Plain load and store: only the mutex keeps this exact.
        (i32.store (global.get $LOCKED) (i32.add (i32.load (global.get $LOCKED)) (i32.const 1)))
        (call $unlock)
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $round))))

  ;; arg 1000: proc_exit(7); arg 1001: trap; otherwise a worker.
  (func (export "wasi_thread_start") (param $tid i32) (param $arg i32)
    (if (i32.eq (local.get $arg) (i32.const 1000)) (then (call $proc_exit (i32.const 7))))
    (if (i32.eq (local.get $arg) (i32.const 1001)) (then unreachable))
    (call $work (i32.atomic.load (global.get $ROUNDS)))
    (drop (i32.atomic.rmw.add (global.get $DONE) (i32.const 1)))
    (drop (memory.atomic.notify (global.get $DONE) (i32.const 1))))

  ;; argv[1] as a decimal number, or 10000.
  (func $rounds_arg (result i32)
    (local $p i32) (local $n i32) (local $c i32)
    (drop (call $args_sizes_get (i32.const 48) (i32.const 52)))
    (if (i32.lt_u (i32.load (i32.const 48)) (i32.const 2)) (then (return (i32.const 10000))))
    (if (i32.gt_u (i32.load (i32.const 52)) (i32.const 1024)) (then (return (i32.const 10000))))
    (drop (call $args_get (i32.const 256) (i32.const 512)))
    (local.set $p (i32.load (i32.const 260)))
    (block $end
      (loop $digit
        (local.set $c (i32.load8_u (local.get $p)))
        (br_if $end (i32.or (i32.lt_u (local.get $c) (i32.const 48)) (i32.gt_u (local.get $c) (i32.const 57))))
        (local.set $n (i32.add (i32.mul (local.get $n) (i32.const 10)) (i32.sub (local.get $c) (i32.const 48))))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (br $digit)))
    (local.get $n))

  ;; Writes `text` (at 128 + pos, len) ... helpers to build the output line.
  (global $out (mut i32) (i32.const 128))
  (func $put (param $c i32)
    (i32.store8 (global.get $out) (local.get $c))
    (global.set $out (i32.add (global.get $out) (i32.const 1))))
  (func $put_word (param $a i32) (param $b i32) (param $c i32) (param $d i32) (param $e i32) (param $f i32)
    (call $put (local.get $a)) (call $put (local.get $b)) (call $put (local.get $c))
    (call $put (local.get $d)) (call $put (local.get $e)) (call $put (local.get $f)))
  (func $put_num (param $n i32)
    (if (i32.ge_u (local.get $n) (i32.const 10)) (then (call $put_num (i32.div_u (local.get $n) (i32.const 10)))))
    (call $put (i32.add (i32.const 48) (i32.rem_u (local.get $n) (i32.const 10)))))

  (func $spawn_or_exit (param $arg i32)
    (if (i32.lt_s (call $spawn (local.get $arg)) (i32.const 1)) (then (call $proc_exit (i32.const 3)))))

  (func (export "_start")
    (local $i i32) (local $d i32)
    (i32.atomic.store (global.get $ROUNDS) (call $rounds_arg))
    (block $spawned
      (loop $next
        (br_if $spawned (i32.ge_u (local.get $i) (global.get $THREADS)))
        (call $spawn_or_exit (local.get $i))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    ;; Wait until every thread has counted itself done.
    (block $all_done
      (loop $wait
        (local.set $d (i32.atomic.load (global.get $DONE)))
        (br_if $all_done (i32.ge_u (local.get $d) (global.get $THREADS)))
        (drop (memory.atomic.wait32 (global.get $DONE) (local.get $d) (i64.const -1)))
        (br $wait)))
    ;; "threads 4 atomic A locked L\n"
    (call $put_word (i32.const 116) (i32.const 104) (i32.const 114) (i32.const 101) (i32.const 97) (i32.const 100))
    (call $put (i32.const 115)) (call $put (i32.const 32))
    (call $put_num (global.get $THREADS))
    (call $put (i32.const 32))
    (call $put_word (i32.const 97) (i32.const 116) (i32.const 111) (i32.const 109) (i32.const 105) (i32.const 99))
    (call $put (i32.const 32))
    (call $put_num (i32.atomic.load (global.get $ATOMIC)))
    (call $put (i32.const 32))
    (call $put_word (i32.const 108) (i32.const 111) (i32.const 99) (i32.const 107) (i32.const 101) (i32.const 100))
    (call $put (i32.const 32))
    (call $put_num (i32.atomic.load (global.get $LOCKED)))
    (call $put (i32.const 10))
    (i32.store (i32.const 64) (i32.const 128))
    (i32.store (i32.const 68) (i32.sub (global.get $out) (i32.const 128)))
    (drop (call $fd_write (i32.const 1) (i32.const 64) (i32.const 1) (i32.const 72))))

  ;; The main thread waits on a word nobody changes: only the end of the
  ;; process (started by the spawned thread) can end it.
  (func $wait_forever
    (loop $forever
      (drop (memory.atomic.wait32 (global.get $NEVER) (i32.const 0) (i64.const -1)))
      (br $forever)))
  ;; --timeout must stop a main thread parked in a wait nobody ends.
  (func (export "wait_forever") (call $wait_forever))
  (func (export "exit_in_thread")
    (call $spawn_or_exit (i32.const 1000))
    (call $wait_forever))
  (func (export "trap_in_thread")
    (call $spawn_or_exit (i32.const 1001))
    (call $wait_forever))
)
