#pragma once
// wasi-threads (https://github.com/WebAssembly/wasi-threads): the host
// function `wasi.thread-spawn(start_arg: i32) -> i32` and the memory a
// threaded module imports (env.memory by convention, shared).
//
// thread-spawn starts an OS thread that instantiates the same module with
// the same imports (so the same shared memory and host functions) in the
// same Store, with its own interpreter state (vm::ThreadScope), and calls
// that instance's export `wasi_thread_start(tid, start_arg)`. It returns
// the new thread's id (1, 2, ... in spawn order, below 2^29) or a negative
// number when no thread can be started.
//
// Ending (the proposal, and what wasi-libc assumes): proc_exit or a trap in
// any thread ends the whole process; so does the main thread's return from
// _start (like exit(0)); a return from wasi_thread_start ends only its
// thread. Threads are stopped at their next safe point: each runs with a
// vm::Profiling (the profiler's or a bare one) whose interrupt flag stop()
// raises, and memory.atomic.wait returns early (vm::interrupt_waits). A
// thread blocked inside a host call (e.g. reading stdin) stops when the
// call returns.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "vm/module.h"
#include "vm/profiling.h"
#include "vm/result.h"
#include "vm/runtime.h"

namespace wzvm::wasi {

inline constexpr const char* kThreadsModule = "wasi";
inline constexpr const char* kThreadSpawn = "thread-spawn";

class Threads {
 public:
  // Per-thread hooks (the CLI's profilers). `attach` runs on a new thread
  // before its instance is made, with the thread's id; it may attach a
  // Profiling to store.thread() and return it (null: the thread gets a
  // bare one). `detach` runs on that thread when it has ended.
  struct Hooks {
    std::function<vm::Profiling*(int32_t tid)> attach;
    std::function<void(int32_t tid)> detach;
  };
  explicit Threads(vm::Store& store, Hooks hooks = {});
  ~Threads();  // stop()
  Threads(const Threads&) = delete;
  Threads& operator=(const Threads&) = delete;

  // Whether `module` imports wasi.thread-spawn (then the runner links it with these).
  static bool wanted(const vm::Module& module);
  // Whether this links `imp`: wasi.thread-spawn, and any memory import
  // (created with the import's own type: a threaded module imports its
  // shared memory, which every instance then shares).
  static bool handles(const vm::Import& imp);
  vm::Result<vm::Extern> import_for(const vm::Module& module, const vm::Import& imp);

  // The module and the imports its first instance was linked with: each
  // spawned thread instantiates it again with them. Before the guest runs.
  void set_module(std::shared_ptr<const vm::Module> module, std::vector<vm::Extern> imports);
  // The main thread's Profiling, interrupted when another thread ends the process.
  void set_main(vm::Profiling* main);

  // What ended the process from a spawned thread (the first of them wins):
  // a Trap Exit with the proc_exit code, or a trap (its message names the
  // thread). Empty when no spawned thread ended it.
  std::optional<vm::Trap> ended();
  // Stops every spawned thread at its next safe point and joins them.
  // Later spawns fail. Idempotent.
  void stop();
  // Threads spawned so far.
  int32_t spawned();

 private:
  struct Record {
    int32_t tid = 0;
    std::thread thread;
    vm::Profiling* profiling = nullptr;  // while it runs
  };
  int32_t spawn(uint32_t start_arg);
  void run(Record* rec, uint32_t start_arg);
  void run_guest(Record* rec, uint32_t start_arg);
  void end_process(int32_t tid, const vm::Trap& trap);
  static void interrupt(vm::Profiling* p);

  vm::Store& store_;
  Hooks hooks_;
  std::mutex mu_;  // everything below
  std::shared_ptr<const vm::Module> module_;
  std::vector<vm::Extern> imports_;
  vm::Profiling* main_ = nullptr;
  std::vector<std::unique_ptr<Record>> threads_;
  int32_t next_tid_ = 1;
  bool stopping_ = false;
  std::optional<vm::Trap> ended_;
};

}  // namespace wzvm::wasi
