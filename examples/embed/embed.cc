// Embedding wzvm in a C++ program: load a WASI program, give it one host
// directory, run its _start under a wall-clock limit with a CPU profile and
// an exact instruction profile, and write both as pprof files.
//
//   embed [--timeout-ms N] MODULE.wasm HOST_DIR [GUEST_ARGS...]
//
// HOST_DIR is the guest's /data; GUEST_ARGS follow argv[0] (the module's
// path). Writes cpu.pb.gz and instructions.pb.gz in the current directory
// (open them with `go tool pprof -top cpu.pb.gz`). Exit status: the guest's
// proc_exit status, 124 when the time limit stopped it, 134 for a trap, 1
// for an error.
//
// Built against an installed wzvm (cmake --install), see CMakeLists.txt.
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "profiler/pprof.h"
#include "profiler/profiler.h"
#include "vm/interp.h"
#include "vm/module.h"
#include "vm/runtime.h"
#include "wasi/wasi.h"

using namespace wzvm;

namespace {

int fail(const std::string& what) {
  std::cerr << "embed: " << what << "\n";
  return 1;
}

// Asks the interpreter to stop at its next safe point (a call or a loop's
// back edge) once `limit` has passed, unless the run ended first.
class TimeLimit {
 public:
  TimeLimit(vm::Profiling& p, std::chrono::milliseconds limit)
      : thread_([this, &p, limit] {
          std::unique_lock lock(mu_);
          if (cv_.wait_for(lock, limit, [this] { return done_; })) return;
          fired_ = true;
          vm::set_flag(p.interrupt_requested, 1);
          p.raise();
        }) {}
  ~TimeLimit() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  bool fired() {
    std::lock_guard lock(mu_);
    return fired_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false, fired_ = false;
  std::thread thread_;
};

}  // namespace

int main(int argc, char** argv) {
  std::chrono::milliseconds limit{10000};
  int a = 1;
  if (a + 1 < argc && std::string(argv[a]) == "--timeout-ms") {
    limit = std::chrono::milliseconds(std::atol(argv[a + 1]));
    a += 2;
  }
  if (argc - a < 2) return fail("usage: embed [--timeout-ms N] MODULE.wasm HOST_DIR [GUEST_ARGS...]");
  const std::string path = argv[a], dir = argv[a + 1];

  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(path + ": cannot open");
  std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  // Instruction counting is chosen when the code is lowered.
  vm::LoadOptions load;
  load.count_instructions = true;
  auto module = vm::load_module(std::move(bytes), load);
  if (!module) return fail(path + ": " + module.error().to_string());

  wasi::Config config;
  config.args.push_back(path);
  for (int i = a + 2; i < argc; ++i) config.args.push_back(argv[i]);
  config.preopens.push_back(wasi::Preopen::dir(dir, "/data"));
  auto w = wasi::Wasi::create(std::move(config));
  if (!w) return fail(w.error().message);

  vm::Store store;
  profiler::Options options;
  options.cpu = true;
  options.instructions = true;
  profiler::Profiler prof(options);
  prof.add_module(module->get(), path);
  std::string why;
  if (!prof.start(store, why)) return fail(why);

  vm::Trap trap;
  bool stopped = false;
  {
    // Started before instantiation: a start function is bounded too.
    TimeLimit time_limit(prof.profiling(), limit);
    auto imports = (*w)->imports_for(store, **module);
    if (!imports) return fail(path + ": " + imports.error().message);
    auto inst = store.instantiate(*module, *imports);
    if (!inst && inst.error().kind != vm::Error::Kind::Instantiate)
      return fail(path + ": " + inst.error().to_string());
    if (!inst) {
      trap = vm::Trap::make(vm::TrapCode::Unreachable, inst.error().message);  // in the start function
    } else if (vm::FuncInst* start = (*inst)->exported_func("_start")) {
      std::vector<vm::Value> results;
      trap = store.invoke(start, {}, results);
    } else {
      return fail(path + ": no _start export");
    }
    stopped = time_limit.fired() && trap;
  }
  prof.stop();

  for (const auto& [file, profile] :
       {std::pair{"cpu.pb.gz", profiler::build_cpu_profile(prof)},
        std::pair{"instructions.pb.gz", profiler::build_instructions_profile(prof)}}) {
    if (!profiler::write_profile(profile, file, why)) return fail(std::string(file) + ": " + why);
    std::cerr << "embed: wrote " << file << "\n";
  }
  uint64_t total = 0;
  for (uint64_t n : prof.instruction_totals()) total += n;
  std::cerr << "embed: " << total << " instructions\n";

  if (stopped) {
    std::cerr << "embed: stopped after " << limit.count() << " ms\n";
    return 124;
  }
  switch (trap.code) {
    case vm::TrapCode::None:
      return 0;
    case vm::TrapCode::Exit:
      return trap.exit_code;
    default:
      std::cerr << "embed: trap: " << trap.message << "\n";
      return 134;
  }
}
