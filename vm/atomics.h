#pragma once
// threads proposal (https://github.com/WebAssembly/threads/blob/main/proposals/threads/Overview.md):
// the read-modify-write functors of the AtomicRmw rows of vm/opcodes.def, and
// memory.atomic.wait32/wait64/notify, which block and wake real OS threads.
//
// Atomic accesses use the compiler's __atomic builtins on the guest's bytes,
// sequentially consistent as the proposal requires; the interpreter checks
// bounds and natural alignment first, so every access is aligned.

#include <cstdint>

namespace wzvm::vm {

struct MemInst;

// Extra column of an AtomicRmw row: T is the memory access, apply returns
// the old value. Narrow _u forms zero-extend it (T is unsigned).
#define WZVM_ATOMIC_RMW_(Name, builtin)                                   \
  template <class T>                                                      \
  struct Name {                                                           \
    using type = T;                                                       \
    static T apply(T* p, T v) { return builtin(p, v, __ATOMIC_SEQ_CST); } \
  };
WZVM_ATOMIC_RMW_(AtomicAdd, __atomic_fetch_add)
WZVM_ATOMIC_RMW_(AtomicSub, __atomic_fetch_sub)
WZVM_ATOMIC_RMW_(AtomicAnd, __atomic_fetch_and)
WZVM_ATOMIC_RMW_(AtomicOr, __atomic_fetch_or)
WZVM_ATOMIC_RMW_(AtomicXor, __atomic_fetch_xor)
WZVM_ATOMIC_RMW_(AtomicXchg, __atomic_exchange_n)
#undef WZVM_ATOMIC_RMW_

// memory.atomic.wait32/wait64 on `mem` (which must be shared: the caller
// traps otherwise) at byte address `ea` (checked, aligned): 1 ("not-equal")
// when the value there is not `expected`, else blocks until a notify for
// that address wakes it (0, "ok") or `timeout_ns` passes (2, "timed-out");
// a negative timeout waits forever. The value is compared under the same
// lock that notify takes, so a notify that follows the store a waiter is
// waiting for can never be missed.
uint32_t atomic_wait32(MemInst& mem, uint64_t ea, uint32_t expected, int64_t timeout_ns);
uint32_t atomic_wait64(MemInst& mem, uint64_t ea, uint64_t expected, int64_t timeout_ns);
// memory.atomic.notify: wakes at most `count` waiters of (mem, ea), oldest
// first, and returns how many it woke. On an unshared memory nobody can wait,
// so it returns 0.
uint32_t atomic_notify(MemInst& mem, uint64_t ea, uint32_t count);
// Wakes every waiter of every address with "timed-out" and makes later waits
// return at once: the process is ending (wasi-threads: proc_exit, or a trap,
// in any thread), and a thread blocked in a wait must reach a safe point to
// be stopped. Until reset_waits() (tests).
void interrupt_waits();
void reset_waits();
// Threads blocked in a wait right now (tests, to know a waiter has parked).
uint32_t waiters_parked();

}  // namespace wzvm::vm
