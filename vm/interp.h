#pragma once
// The interpreter: runs CompiledFunc code on an explicit frame stack.
// Nothing here recurses natively for wasm-to-wasm calls, so deep recursion
// traps with "call stack exhausted" instead of overflowing the host stack.

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "vm/profiling.h"
#include "vm/runtime.h"

namespace wzvm::vm {

// One activation of a wasm function.
// Frame::node not looked up yet (the plain loop finds nodes lazily). Below
// 2^31, so that a call writes node, call_hook and ret_check as one 8-byte
// store of a sign-extended 32-bit immediate (vm/interp.cc, kFreshFrame).
constexpr uint32_t kUnknownNode = INT32_MAX;

// The fields a call writes in the callee's record (func, fp, the word at
// node) lie apart, with the caller's ip and the counting loop's counters
// between them: GCC built two adjacent stores from two registers as one
// 16-byte store (three vector moves; vm/interp.cc, enter_callee).
struct Frame {
  FuncInst* func;      // the function running in this frame
  const uint32_t* ip;  // resume point when this frame is not the top one
  uint64_t* fp;        // its slots: params, locals, value stack
  uint64_t* counters;  // while counting: the node's segment run counters (Profiling), never null
  // Call-tree node of this frame, in the plain loop: kUnknownNode until a
  // sample, a host call or a hook needs it (vm/interp.cc, node_of); stored
  // also when nothing profiles, one store per call. The
  // counting loop leaves it alone: there a frame's node is that of its
  // `counters` (Profiling::block_node).
  uint32_t node;
  // Entered by a hooked call while profiling (memory profiling): the hook id
  // and the caller's real resume point (the caller's `ip` is then the stub
  // in vm/interp.cc that reports the return). Next to `node`.
  uint8_t call_hook;
  // Set when a return from this frame must do more than pop it: the entry
  // frame of a run (its return leaves the loop) and a frame whose function
  // may be of another instance than its caller's (the caller's memory 0 is
  // then reloaded). Zero for most calls, so a plain `ret` tests this one byte
  // instead of comparing the frame with the entry and loading the caller's
  // instance through its function (docs/RATIONALE.md, "A call knows what its
  // return checks").
  uint8_t ret_check;
  const uint32_t* hook_ret;
  // Where a callee's frame called from this one must end: the thread's
  // stack_end, or the stack's start in the frames from which no call may be
  // made (the depth limit: index max_depth - 1 on), so that a call checks
  // depth and value stack with one compare. Set once by Thread's constructor;
  // calls never write it (docs/RATIONALE.md, "A call checks its frame with
  // one compare").
  const uint64_t* callee_limit;
};

// exception-handling: a thrown exception, its tag and values. A catch keeps
// its number (index + 1) in an exception slot of the frame, for rethrow.
struct Exception {
  const TagInst* tag;
  std::vector<uint64_t> values;
};

// Per-thread interpreter state: the value stack (slots) and frame stack.
struct Thread {
  explicit Thread(const StoreLimits& limits);
  std::unique_ptr<uint64_t[]> stack;
  uint64_t* stack_end = nullptr;
  std::vector<Frame> frames;  // sized max_call_depth + 1 up front; never reallocates while running
  uint32_t max_depth = 0;
  // Frames in use and the first free value slot: a nested entry (a host
  // function calling back into wasm) builds on top of these.
  uint32_t depth = 0;
  uint64_t* top = nullptr;
  // Attached by a profiler; null runs the plain interpreter loop.
  Profiling* profiling = nullptr;
  // Call-tree node of the code that entered the VM (for nested entries).
  uint32_t entry_node = CallTree::kRoot;
  // Exceptions thrown since the outermost entry; emptied when it returns
  // (an exception slot may name any of them until then).
  std::vector<Exception> exceptions;
  // The counting loop: the callee whose frame did not fit at the last failed
  // call, perhaps a stub to lower (vm/interp.cc, on_trap).
  FuncInst* unfit = nullptr;
};

// threads: while it lives, store.thread() on this OS thread is `thread`
// (Store::invoke and instantiation's start function run there). One scope
// per OS thread at a time.
class ThreadScope {
 public:
  ThreadScope(Store& store, Thread& thread);
  ~ThreadScope();
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;
};

// Run `func` with arguments already placed as slots at `args` (which must lie
// in thread.stack); results are written to args[0..result_slots).
Trap execute(Store& store, Thread& thread, FuncInst* func, uint64_t* args);

}  // namespace wzvm::vm
