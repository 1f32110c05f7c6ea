#include "profiler/instruction_profile.h"

#include <fstream>
#include <iterator>

#include "profiler/golang.h"
#include "profiler/pprof.h"
#include "profiler/profiler.h"
#include "profiler/text.h"
#include "vm/interp.h"

namespace wzvm::profiler {

// Declaration order is destruction order in reverse: the profiler (which
// points at functions in the store) goes first.
struct InstructionProfile::State {
  std::shared_ptr<const vm::Module> module;
  std::unique_ptr<vm::Store> store;
  std::unique_ptr<Profiler> profiler;
};

namespace {
vm::Error error(vm::Error::Kind kind, std::string message) {
  vm::Error e;
  e.kind = kind;
  e.message = std::move(message);
  return e;
}
}  // namespace

vm::Result<InstructionProfile> InstructionProfile::run_and_count(std::vector<uint8_t> wasm,
                                                                 const std::string& entry,
                                                                 std::vector<vm::Value> args, Linker imports,
                                                                 const std::string& module_path,
                                                                 RunOptions options) {
  const bool fueled = options.fuel.has_value() || options.deterministic;
  vm::LoadOptions lo;
  lo.count_instructions = true;
  lo.fuel = fueled;
  lo.graft_calls = GoModule::resumes_goroutines;
  lo.probe_dispatch =
      CPythonModule::dispatch_probe;  // Python functions and lines (profiler/python_counts.cc)
  auto loaded = vm::load_module(std::move(wasm), lo);
  if (!loaded) return loaded.error();

  InstructionProfile out;
  out.state_ = std::make_shared<State>();
  State& st = *out.state_;
  st.module = loaded.value();
  st.store = std::make_unique<vm::Store>();
  st.profiler = std::make_unique<Profiler>(Options{.instructions = true});
  st.profiler->add_module(st.module.get(), module_path);

  std::vector<vm::Extern> externs;
  if (imports) {
    auto r = imports(*st.store, *st.module);
    if (!r) return r.error();
    externs = std::move(r.value());
  } else if (!st.module->imports.empty()) {
    const vm::Import& i = st.module->imports.front();
    return error(vm::Error::Kind::Link, "unknown import " + i.module + "." + i.field + " (no Linker given)");
  }

  std::string why;
  if (!st.profiler->start(*st.store, why)) return error(vm::Error::Kind::Io, why);
  if (fueled) st.store->thread()->profiling->set_fuel(options.fuel.value_or(UINT64_MAX));
  auto inst = st.store->instantiate(st.module, externs);
  if (!inst) {
    st.profiler->stop();
    return inst.error();
  }
  vm::FuncInst* f = (*inst)->exported_func(entry);
  if (!f) {
    st.profiler->stop();
    return error(vm::Error::Kind::Link, "no exported function " + entry);
  }
  out.trap_ = st.store->invoke(f, args, out.results_);
  st.profiler->stop();

  for (const auto& [name, count] : instruction_totals(*st.profiler)) {
    out.counts_[name] = count;
    out.total_ += count;
  }
  return out;
}

vm::Result<InstructionProfile> InstructionProfile::run_and_count_file(const std::string& path,
                                                                      const std::string& entry,
                                                                      std::vector<vm::Value> args,
                                                                      Linker imports, RunOptions options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return error(vm::Error::Kind::Io, "cannot open " + path);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return error(vm::Error::Kind::Io, "cannot read " + path);
  return run_and_count(std::move(bytes), entry, std::move(args), std::move(imports), path, options);
}

uint64_t InstructionProfile::count(const std::string& function) const {
  auto it = counts_.find(function);
  return it == counts_.end() ? 0 : it->second;
}

bool InstructionProfile::write_pprof(const std::string& path, std::string& why) const {
  return write_instructions_profile(*state_->profiler, path, why);
}

std::string InstructionProfile::text() const { return instruction_text(*state_->profiler); }

}  // namespace wzvm::profiler
