#pragma once
// What the fuzz targets share: small store limits, stub imports for whatever
// a module imports, and a deterministic execution budget.
//
// The budget. A fuzzer finds `loop br 0` in seconds. Fuel (LoadOptions::fuel)
// would need code lowered with counting, but users' plain runs use the other
// lowering, which is the one worth fuzzing; so the targets run guest code in
// the profiling loop with a CPU "profiler"
// that asks for a sample at every safe point (any instruction's dispatch:
// vm/profiling.h). Every unbounded execution passes through safe points, so a
// limit on their number bounds the run; the sink throws BudgetExceeded out of
// the loop when it is reached, and the target then drops the whole Store (its
// thread state is not usable after the throw). A wall-clock watchdog would
// also work but would make findings unreproducible.

#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "vm/interp.h"
#include "vm/module.h"
#include "vm/profiling.h"
#include "vm/runtime.h"

namespace wzvm::fuzz {

// Small enough that one input cannot exhaust the fuzzer's memory (-rss_limit_mb)
// or spend seconds in memory.fill, large enough for the spec modules.
inline vm::StoreLimits fuzz_limits() {
  vm::StoreLimits l;
  l.max_call_depth = 500;
  l.value_stack_slots = 1 << 16;
  l.max_memory_pages = 32;  // 2 MiB
  l.max_wait_ns = 0;        // threads: a wait nobody can notify times out at once
  return l;
}

struct BudgetExceeded {};

// A ProfileSink that re-arms the sampling flag at every sample, so every safe
// point reaches it, and stops the run after `budget` of them.
class BudgetSink final : public vm::ProfileSink {
 public:
  BudgetSink(vm::Profiling& p, uint64_t budget) : p_(p), budget_(budget) {}
  void on_cpu_sample(uint32_t, const vm::FuncInst*, int64_t, uint64_t) override {
    if (++used_ > budget_) throw BudgetExceeded{};
    p_.raise();
  }
  void on_host_call(uint32_t, uint64_t) override {}
  uint64_t used() const { return used_; }

 private:
  vm::Profiling& p_;
  uint64_t budget_;
  uint64_t used_ = 0;
};

// Attaches a budgeted sampling Profiling to a store's thread.
struct Budget {
  vm::Profiling profiling;
  BudgetSink sink;
  Budget(vm::Store& store, uint64_t budget, bool count_instructions) : sink(profiling, budget) {
    profiling.sink = &sink;
    profiling.cpu = true;
    profiling.count_instructions = count_instructions;
    profiling.raise();
    store.thread()->profiling = &profiling;
  }
};

// One extern per import: host functions that return zeros, and fresh tables,
// memories and globals of the declared types. False when one cannot be made
// (a memory above the fuzz limits).
inline bool stub_imports(vm::Store& store, const vm::Module& m, std::vector<vm::Extern>& out) {
  for (const vm::Import& imp : m.imports) {
    vm::Extern e;
    e.kind = imp.kind;
    switch (imp.kind) {
      case vm::ExternKind::Func: {
        if (imp.func_type >= m.types.size()) return false;
        e.func = store.add_host_func(
            imp.module, imp.field, m.types[imp.func_type],
            [](vm::HostContext&, std::span<const vm::Value>, std::span<vm::Value> results) {
              for (vm::Value& r : results) r = vm::Value::zero(r.type);
              return vm::Trap{};
            });
        break;
      }
      case vm::ExternKind::Table:
        e.table = store.add_table(imp.table);
        if (!e.table) return false;
        break;
      case vm::ExternKind::Memory:
        e.memory = store.add_memory(imp.memory);
        if (!e.memory) return false;
        break;
      case vm::ExternKind::Global:
        e.global = store.add_global(imp.global, 0);
        break;
      case vm::ExternKind::Tag:
        if (imp.tag_type >= m.types.size()) return false;
        e.tag = store.add_tag(m.types[imp.tag_type]);
        break;
    }
    out.push_back(e);
  }
  return true;
}

// The three ways the differential checks run a module (fuzz/targets.h,
// fuzz/binaryen.h): the sampling loop under a budget, the plain loop, and
// code lowered with instruction counting and every function call-hooked.
enum class Mode { Sampled, Plain, Counted };

inline vm::LoadOptions load_options(Mode mode) {
  vm::LoadOptions opts;
  if (mode == Mode::Counted) {
    opts.count_instructions = true;
    opts.call_hook = [](const vm::Module&, uint32_t) -> uint8_t { return 1; };
  }
  return opts;
}

// Zero of each parameter type: what the targets call exports with.
inline std::vector<vm::Value> zero_args(const vm::FuncType& t) {
  std::vector<vm::Value> args;
  for (vm::ValType v : t.params) args.push_back(vm::Value::zero(v));
  return args;
}

}  // namespace wzvm::fuzz
