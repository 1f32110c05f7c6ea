#pragma once
// Exact instruction counts for users' own tests:
//
//   auto p = wzvm::profiler::InstructionProfile::run_and_count_file("app.wasm", "run",
//   {vm::Value::from_i32(10)}); ASSERT_TRUE(p) << p.error().to_string(); EXPECT_EQ(p->total(), 1234567u);
//   EXPECT_EQ(p->counts().at("inner_loop"), 1000000u);
//
// Counts are per function, self (the function's own instructions, whoever
// called it), and deterministic: a change in them is a change in the code or
// its inputs. Every executed wasm instruction counts 1, except the structure
// markers block, loop, else and end.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "vm/module.h"
#include "vm/runtime.h"

namespace wzvm::profiler {

class Profiler;

// How InstructionProfile::run_and_count runs the code.
struct RunOptions {
  // At most this many instructions; the next one traps with OutOfFuel
  // before it runs (as `wzvm --fuel`), at the same instruction every run.
  std::optional<uint64_t> fuel;
  // For a WASI program whose Wasi was created with
  // wasi::Config::deterministic (as `wzvm --deterministic`): the code is
  // lowered to charge fuel, unlimited unless `fuel` is set, because the
  // deterministic clocks read its use. The counts are then the same on
  // every run even for programs that read clocks or randomness:
  //
  //   wasi::Config cfg;  cfg.args = {"app.wasm"};  cfg.deterministic = true;
  //   auto w = wasi::Wasi::create(cfg);
  //   auto p = InstructionProfile::run_and_count_file("app.wasm", "_start", {},
  //       [&](vm::Store& s, const vm::Module& m) { return (*w)->imports_for(s, m); },
  //       {.deterministic = true});
  bool deterministic = false;
};

class InstructionProfile {
 public:
  // Supplies the module's imports (one Extern per import, in order). A WASI
  // program passes
  //   [&](vm::Store& s, const vm::Module& m) { return wasi->imports_for(s, m); }
  // Left empty, the module must import nothing.
  using Linker = std::function<vm::Result<std::vector<vm::Extern>>(vm::Store&, const vm::Module&)>;

  // Loads `wasm` with instruction counting, instantiates it (its start
  // function is counted too) and calls the export `entry` with `args`. Load,
  // link and argument errors are returned as vm::Error; a trap or a WASI
  // proc_exit is not an error: the counts up to it are kept (see trap()).
  static vm::Result<InstructionProfile> run_and_count(std::vector<uint8_t> wasm,
                                                      const std::string& entry = "_start",
                                                      std::vector<vm::Value> args = {}, Linker imports = {},
                                                      const std::string& module_path = "module.wasm",
                                                      RunOptions options = {});
  static vm::Result<InstructionProfile> run_and_count_file(const std::string& path,
                                                           const std::string& entry = "_start",
                                                           std::vector<vm::Value> args = {},
                                                           Linker imports = {}, RunOptions options = {});

  uint64_t total() const { return total_; }
  // Self count per function name (name section, else export, else wasm-function[N]).
  const std::map<std::string, uint64_t>& counts() const { return counts_; }
  // 0 for a function that never ran (or does not exist).
  uint64_t count(const std::string& function) const;

  const vm::Trap& trap() const { return trap_; }
  const std::vector<vm::Value>& results() const { return results_; }

  // The same profile as `wzvm --profile=instructions`, and its text form.
  bool write_pprof(const std::string& path, std::string& why) const;
  std::string text() const;

 private:
  struct State;
  std::shared_ptr<State> state_;  // keeps the store alive: the call tree points into it
  uint64_t total_ = 0;
  std::map<std::string, uint64_t> counts_;
  vm::Trap trap_;
  std::vector<vm::Value> results_;
};

}  // namespace wzvm::profiler
