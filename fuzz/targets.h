// The body of each fuzz target, as a function that returns what went wrong
// ("" when nothing did), so tests/regress_test.cc can replay findings through
// exactly the code the fuzzers run. A crash or sanitizer report is a finding
// too; fuzz/fuzz_*.cc abort on a non-empty answer.

#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fuzz/fuzz_common.h"

namespace wzvm::fuzz {

// The binary decoder alone (vm/decoder.cc), the front door for untrusted
// bytes: a Module or an Error whose offset lies inside the input.
inline std::string check_decode(const uint8_t* data, size_t size) {
  auto r = vm::decode_module(std::vector<uint8_t>(data, data + size));
  if (!r && r.error().offset > static_cast<int64_t>(size))
    return "error offset past the end: " + r.error().to_string();
  return {};
}

// load_module: decode + module validation + one-pass validation and lowering
// of bodies (vm/lower/), without and with instruction counting (which
// lowers differently but must accept the same modules).
inline std::string check_validate(const uint8_t* data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  auto plain = vm::load_module(bytes);
  vm::LoadOptions counted;
  counted.count_instructions = true;
  auto with_counts = vm::load_module(bytes, counted);
  if (plain.ok() != with_counts.ok()) return "instruction counting changed whether the module loads";
  if (!plain && plain.error().offset > static_cast<int64_t>(size))
    return "error offset past the end: " + plain.error().to_string();
  return {};
}

// Load + instantiate against stub imports of the declared types: table and
// memory allocation under small StoreLimits, constant expressions, segment
// initialisation, and the start function under the safe-point budget.
inline std::string check_instantiate(const uint8_t* data, size_t size) {
  auto loaded = vm::load_module(std::vector<uint8_t>(data, data + size));
  if (!loaded) return {};
  vm::Store store(fuzz_limits());
  Budget budget(store, 10000, false);
  std::vector<vm::Extern> imports;
  if (!stub_imports(store, **loaded, imports)) return {};
  try {
    auto inst = store.instantiate(*loaded, imports);
    (void)inst;
  } catch (const BudgetExceeded&) {
  }
  return {};
}

// Load, instantiate, then call every exported function with zero arguments,
// all under one safe-point budget and small StoreLimits. Runs the sampling
// loop, the same template as the plain loop (vm/interp.cc), which has no
// safe-point hook to stop at.
inline std::string check_execute(const uint8_t* data, size_t size) {
  auto loaded = vm::load_module(std::vector<uint8_t>(data, data + size));
  if (!loaded) return {};
  const vm::Module& m = **loaded;
  vm::Store store(fuzz_limits());
  Budget budget(store, 20000, false);
  std::vector<vm::Extern> imports;
  if (!stub_imports(store, m, imports)) return {};
  try {
    auto inst = store.instantiate(*loaded, imports);
    if (!inst) return {};
    for (const vm::Export& e : m.exports) {
      if (e.kind != vm::ExternKind::Func) continue;
      vm::FuncInst* f = (*inst)->funcs[e.index];
      std::vector<vm::Value> results;
      // A trap leaves the store usable: later exports still run.
      vm::Trap t = store.invoke(f, zero_args(f->type), results);
      if (!t && results.size() != f->type.results.size()) return "wrong number of results from " + e.name;
    }
  } catch (const BudgetExceeded&) {
  }
  return {};
}

namespace differential {

// Everything observable about one run, as text (easy to diff when it fails).
inline std::string describe_value(const vm::Value& v, const vm::Instance* inst) {
  std::string s = vm::valtype_name(v.type);
  s += ':';
  if (vm::is_ref(v.type)) {
    if (v.ref == 0) return s + "null";
    if (v.type == vm::ValType::FuncRef) {
      // Pointers differ between stores; the function index does not.
      const auto* f = reinterpret_cast<const vm::FuncInst*>(v.ref);
      return s + (f->instance == inst ? "func" + std::to_string(f->func_index) : "host:" + f->host_field);
    }
    return s + std::to_string(v.ref);
  }
  char buf[40];
  uint64_t lo, hi = 0;
  std::memcpy(&lo, v.v128, 8);
  if (v.type == vm::ValType::V128) std::memcpy(&hi, v.v128 + 8, 8);
  else if (v.type == vm::ValType::I32 || v.type == vm::ValType::F32) lo &= 0xffffffffu;
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(hi),
                static_cast<unsigned long long>(lo));
  return s + buf;
}

inline std::string describe_trap(const vm::Trap& t) {
  std::string s = "trap " + std::to_string(static_cast<int>(t.code)) + " " + t.message;
  for (const vm::FrameInfo& f : t.backtrace)
    s += " @" + std::to_string(f.func_index) + ":" + std::to_string(f.offset);
  return s;
}

// Runs the module one way; false if the budget ran out (S) or it could not be set up.
inline bool run(const std::vector<uint8_t>& bytes, Mode mode, uint64_t budget, std::string& out,
                uint64_t* used) {
  auto loaded = vm::load_module(bytes, load_options(mode));
  if (!loaded) {
    out = "load error";
    return true;
  }
  const vm::Module& m = **loaded;
  vm::Store store(fuzz_limits());
  std::unique_ptr<Budget> b;
  if (mode != Mode::Plain) b = std::make_unique<Budget>(store, budget, mode == Mode::Counted);
  std::vector<vm::Extern> imports;
  if (!stub_imports(store, m, imports)) return false;
  try {
    auto inst = store.instantiate(*loaded, imports);
    if (!inst) {
      out = "instantiate: " + inst.error().to_string();
      if (used && b) *used = b->sink.used();
      return true;
    }
    for (const vm::Export& e : m.exports) {
      if (e.kind != vm::ExternKind::Func) continue;
      vm::FuncInst* f = (*inst)->funcs[e.index];
      std::vector<vm::Value> results;
      vm::Trap t = store.invoke(f, zero_args(f->type), results);
      out += e.name + " -> ";
      if (t) out += describe_trap(t);
      for (const vm::Value& v : results) out += describe_value(v, *inst) + " ";
      out += "\n";
    }
    for (const vm::MemInst* mem : (*inst)->memories) {
      uint64_t h = 1469598103934665603ull;  // FNV-1a of the contents
      for (uint64_t i = 0; i < mem->size; ++i) h = (h ^ mem->data[i]) * 1099511628211ull;
      out += "memory " + std::to_string(mem->size) + " " + std::to_string(h) + "\n";
    }
    for (const vm::GlobalInst* g : (*inst)->globals)
      if (!vm::is_ref(g->type.type))
        out += "global " + std::to_string(g->value) + " " + std::to_string(g->value_hi) + "\n";
  } catch (const BudgetExceeded&) {
    return false;
  }
  if (used && b) *used = b->sink.used();
  return true;
}

}  // namespace differential

// Profiling must never change what a program computes. The same module runs
// three ways, each in a store of its own:
//   S  plain lowering, sampling loop, a CPU sample at every safe point (the
//      budget run: if it runs out, the input is skipped);
//   P  plain lowering, plain loop, no profiling (S proved it terminates);
//   C  lowering with instruction counting and every function call-hooked
//      (LoadOptions::call_hook), counting loop with CPU sampling too.
// Instantiation outcome, every export's results or trap (message and
// backtrace) and the final memories and numeric globals must be identical.
inline std::string check_differential(const uint8_t* data, size_t size) {
  using namespace differential;
  std::vector<uint8_t> bytes(data, data + size);
  std::string s, p, c;
  uint64_t used = 0;
  if (!run(bytes, Mode::Sampled, 20000, s, &used)) return {};
  if (!run(bytes, Mode::Plain, 0, p, nullptr)) return {};
  // Counting adds no safe points; the slack only keeps a miscount from
  // turning into a skipped input instead of a reported difference.
  if (!run(bytes, Mode::Counted, 2 * used + 100, c, nullptr))
    return "counted run exceeded the budget the sampled run kept (" + std::to_string(used) + ")";
  if (s != p || s != c)
    return "profiling changed the outcome\n--- sampled\n" + s + "--- plain\n" + p + "--- counted\n" + c;
  return {};
}

}  // namespace wzvm::fuzz
