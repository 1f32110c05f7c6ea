// compile_functions (vm/module.h): every body of a module validated and
// lowered, a big module's spread over threads.

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "vm/lower/function_compiler.h"

namespace wzvm::vm {

Status compile_functions(Module& module, const LoadOptions& options) {
  module.graft_calls.clear();
  if (options.graft_calls) {
    bool any = false;
    module.graft_calls.resize(module.func_type_indices.size());
    for (uint32_t f = 0; f < module.graft_calls.size(); ++f)
      any |= (module.graft_calls[f] = options.graft_calls(module, f));
    if (!any) module.graft_calls.clear();
  }
  module.call_hooks.clear();
  if (options.call_hook) {
    bool any = false;
    module.call_hooks.resize(module.func_type_indices.size());
    for (uint32_t f = 0; f < module.call_hooks.size(); ++f)
      any |= (module.call_hooks[f] = options.call_hook(module, f)) != 0;
    if (!any) module.call_hooks.clear();
  }
  if (options.known_bodies) find_known_bodies(module);
  else module.known_bodies.clear();
  module.code.clear();
  module.code.resize(module.functions.size());
  // LoadOptions::lazy: bodies are validated now and lowered on first call.
  bool shared_memory = false;
  for (const MemoryType& t : module.all_memories) shared_memory |= t.limits.shared;
  module.lazy = options.lazy && !shared_memory;
  module.lowering = options;
  module.lowering.call_hook = nullptr;  // decided above, kept in the module
  module.lowering.graft_calls = nullptr;
  // Functions are validated and lowered independently (each reads the module
  // and writes its own CompiledFunc), so a big module's are spread over the
  // cores: lowering is most of loading a code-heavy module (issue 10's 200 ms
  // for 20 MB; bench/README.md). Small modules stay on this thread, where a
  // thread's start would cost more than their lowering. The error reported is
  // the lowest-numbered invalid function's, as in a sequential pass: workers
  // only skip functions after one known to fail.
  const size_t n = module.functions.size();
  uint64_t code_bytes = 0;
  for (const Function& f : module.functions) code_bytes += f.body_end - f.body_offset;
  constexpr uint64_t kBytesPerThread = 1 << 20;
  size_t threads = std::min<uint64_t>(
      {std::max(1u, std::thread::hardware_concurrency()), code_bytes / kBytesPerThread, n});
  std::vector<Status> status(n);
  std::atomic<size_t> next{0}, first_error{n};
  auto work_queue = [&] {
    for (size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n;) {
      if (i > first_error.load(std::memory_order_relaxed)) break;
      lower::FunctionCompiler fc(module, static_cast<uint32_t>(module.num_imported_funcs + i), options);
      status[i] = module.lazy ? fc.validate(module.code[i]) : fc.compile(module.code[i]);
      if (!status[i]) {
        size_t e = first_error.load(std::memory_order_relaxed);
        while (i < e && !first_error.compare_exchange_weak(e, i, std::memory_order_relaxed)) {
        }
      }
    }
  };
  // What a worker threw (std::bad_alloc: the host out of memory) is thrown
  // again on this thread once all have stopped: an exception cannot leave a
  // thread but by terminating the process.
  std::exception_ptr thrown;
  std::mutex thrown_mu;
  auto work = [&] {
    try {
      work_queue();
    } catch (...) {
      next.store(n, std::memory_order_relaxed);  // the others stop at their next function
      std::lock_guard lock(thrown_mu);
      if (!thrown) thrown = std::current_exception();
    }
  };
  if (threads <= 1) {
    work();
  } else {
    std::vector<std::thread> pool;
    for (size_t t = 1; t < threads; ++t) {
      // A thread the host cannot give (EAGAIN: a ulimit, a full process
      // table) leaves the work to those there are: they share one queue.
      try {
        pool.emplace_back(work);
      } catch (const std::system_error&) {
        break;
      }
    }
    work();
    for (std::thread& t : pool) t.join();
  }
  if (thrown) std::rethrow_exception(thrown);
  if (size_t e = first_error.load(); e < n) return status[e];
  return Status();
}

// The module is shared as const once loaded, but a lazy one's stubs are
// meant to be replaced: each body is lowered once, on the one thread that
// runs the module (LoadOptions::lazy), and nothing holds on to a stub's
// words past its one op (a counted stub never runs: vm/interp.cc, on_trap).
// The options are the load's (Module::lowering).
Status lower_on_first_call(const Module& module, uint32_t func_index) {
  CompiledFunc& out = const_cast<Module&>(module).code[func_index - module.num_imported_funcs];
  CompiledFunc lowered;
  lower::FunctionCompiler fc(module, func_index, module.lowering);
  if (Status s = fc.compile(lowered); !s) return s;
  out = std::move(lowered);
  return Status();
}

}  // namespace wzvm::vm
