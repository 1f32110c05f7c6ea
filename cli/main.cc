// The `wzvm` command. Thin by design (docs/DESIGN: "the CLI is thin"): parse
// flags, load and instantiate the module, call one function, print results or
// one error line. Exit statuses (documented in README.md):
//   0 success, 1 wzvm error (file, module, link, arguments, export),
//   2 usage error, 134 trap (like a native abort), N = WASI proc_exit(N),
//   128 + N a profiled run stopped by signal N (SIGINT, SIGTERM).

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <iterator>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "cli/preopens.h"
#include "cli/profile.h"
#include "cli/report.h"
#include "cli/values.h"
#include "profiler/cpython.h"
#include "profiler/golang.h"
#include "vm/atomics.h"
#include "vm/interp.h"
#include "vm/module.h"
#include "vm/profiling.h"
#include "vm/runtime.h"
#include "wasi/threads.h"
#include "wasi/wasi.h"

extern char** environ;

#ifndef WZVM_VERSION
#define WZVM_VERSION "0.0.0"
#endif

namespace {

using namespace wzvm;

constexpr int kExitOk = 0;
constexpr int kExitError = 1;
constexpr int kExitTrap = 134;

int fail(const std::string& file, const std::string& what) {
  std::cerr << "wzvm: error: " << file << ": " << what << "\n";
  return kExitError;
}

std::string hex(int64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

int report_trap(const vm::Trap& trap) {
  if (trap.code == vm::TrapCode::Exit) return trap.exit_code;
  std::cerr << "wzvm: trap: " << trap.message << "\n";
  // Deep recursion leaves thousands of frames: show the innermost and outermost ones.
  constexpr size_t kInner = 16, kOuter = 4;
  const size_t n = trap.backtrace.size();
  for (size_t i = 0; i < n; ++i) {
    if (n > kInner + kOuter + 1 && i == kInner) {
      std::cerr << "  ... " << (n - kInner - kOuter) << " frames omitted\n";
      i = n - kOuter;
    }
    const vm::FrameInfo& f = trap.backtrace[i];
    std::cerr << "  at " << i << ": " << f.name;
    if (f.offset >= 0) std::cerr << " (offset " << hex(f.offset) << ")";
    std::cerr << "\n";
  }
  return kExitTrap;
}

// Reads at most `max_bytes` (+1 to notice more): a huge file, a FIFO or
// /dev/zero must not make wzvm allocate without bound before decoding starts.
// A regular file is read straight into a buffer of its size: growing the
// buffer chunk by chunk copied it over and over and faulted in every new
// one (8% of loading Go's 14 MB encoding/json test binary, perf).
bool read_file(const std::string& path, uint64_t max_bytes, std::vector<uint8_t>& out, std::string& why) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    why = std::string("cannot open file: ") + std::strerror(errno);
    return false;
  }
  const uint64_t cap = max_bytes == UINT64_MAX ? max_bytes : max_bytes + 1;
  struct stat st {};
  uint64_t size = std::min<uint64_t>(1 << 16, cap);
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
    size = std::min<uint64_t>(static_cast<uint64_t>(st.st_size) + 1,
                              cap);  // +1: EOF seen without a second buffer
  out.assign(size, 0);
  size_t n = 0;
  bool ok = true;
  while (ok) {
    if (n == out.size()) {
      if (n > max_bytes) break;
      out.resize(std::min<uint64_t>(uint64_t{n} * 2, cap));
    }
    const ssize_t r = ::read(fd, out.data() + n, out.size() - n);
    if (r > 0) n += static_cast<size_t>(r);
    else if (r == 0) break;
    else if (errno != EINTR) ok = false;
  }
  if (!ok) why = std::string("cannot read file: ") + std::strerror(errno);
  ::close(fd);
  out.resize(n);
  if (ok && n > max_bytes) {
    why = "module larger than the limit of " + std::to_string(max_bytes) + " bytes (--max-module-size)";
    return false;
  }
  return ok;
}

struct Options {
  std::string invoke;                      // empty: run _start
  std::vector<cli::PreopenFlag> preopens;  // --dir, --listen, --fd, in command-line order
  std::vector<std::string> envs;           // --env NAME=VALUE
  bool inherit_env = false;
  std::string file;
  std::vector<std::string> args;  // everything after the module path
  cli::ProfileFlags profile;
  vm::StoreLimits limits;  // --max-memory, --max-stack-depth
  vm::Features features;   // --enable-NAME, --disable-NAME, --enable-all
  // --max-module-size. 1 GiB: the largest real modules are a few hundred MB,
  // and the decoder's own limit (offsets are u32) is 4 GiB.
  uint64_t max_module_bytes = uint64_t{1} << 30;
  std::optional<uint64_t> fuel;                     // --fuel: most wasm instructions the guest may run
  std::optional<std::chrono::nanoseconds> timeout;  // --timeout: wall-clock budget of the run
  bool deterministic = false;                       // --deterministic (wasi/deterministic.h)
  bool known_bodies = true;                         // --no-known-bodies: LoadOptions::known_bodies
  uint64_t random_seed = 0;                         // --random-seed
};

// A duration: a number with an optional unit (ns, us, ms, s, m, h; default s),
// e.g. 500ms, 2.5s, 10. At most a year; zero is refused (it would stop every run).
std::string parse_duration(const std::string& text, std::chrono::nanoseconds& out) {
  size_t unit = text.find_first_not_of("0123456789.");
  std::string num = text.substr(0, unit), suffix = unit == std::string::npos ? "" : text.substr(unit);
  static const std::pair<const char*, double> kUnits[] = {{"", 1e9}, {"s", 1e9},  {"ms", 1e6},  {"us", 1e3},
                                                          {"ns", 1}, {"m", 60e9}, {"h", 3600e9}};
  double scale = 0;
  for (const auto& [name, ns] : kUnits)
    if (suffix == name) scale = ns;
  char* end = nullptr;
  double v = num.empty() || num.find('.') != num.rfind('.') ? -1 : std::strtod(num.c_str(), &end);
  if (scale == 0 || v < 0 || (end && *end))
    return "expected a duration such as 500ms, 10s or 2m, got '" + text + "'";
  double ns = v * scale;
  if (ns < 1 || ns > 365 * 24 * 3600e9) return "a duration from 1ns to a year, got '" + text + "'";
  out = std::chrono::nanoseconds(static_cast<int64_t>(ns));
  return {};
}

// --timeout: a thread that, when the time is up, asks the interpreter to stop
// at its next safe point (function entry or loop back-edge: vm/profiling.h).
// The interpreter thread is never signalled: a guest blocked in a host call
// (e.g. reading stdin) stops when that call returns.
class Watchdog {
 public:
  Watchdog(vm::Profiling& p, std::chrono::nanoseconds after)
      : thread_([this, &p, after] {
          std::unique_lock lock(mu_);
          if (cv_.wait_for(lock, after, [this] { return done_; })) return;
          vm::set_flag(p.interrupt_requested,
                       1);  // before raise(): take_sample reads it after clearing sample_pending
          p.raise();
          // threads: a guest parked in memory.atomic.wait reaches no safe point
          // until it wakes; wake it (the run is ending anyway).
          vm::interrupt_waits();
        }) {}
  ~Watchdog() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;  // last: started once the members it uses exist
};

// A profiled run stopped by Ctrl-C (SIGINT) or SIGTERM still writes its
// profiles, as perf record does: a long run or a server is often ended that
// way. The two signals are blocked in every thread (block() runs before any
// thread is started) and one thread takes them with sigwait: the first asks
// the interpreter to stop at its next safe point, as --timeout does, and wzvm
// then exits with 128 + the signal's number, as if killed by it; another one
// ends wzvm at once, without profiles (a guest blocked in a host call stops
// only when the call returns). Unprofiled runs keep the default: killed.
// One that comes within half a second of the first is the same request:
// `timeout -s INT 60 wzvm ...`, a way to profile a server for a minute,
// sends the signal to wzvm and then to its process group, so twice.
class SignalStop {
 public:
  static sigset_t signals() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    return set;
  }
  static void block() {
    sigset_t set = signals();
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
  }
  explicit SignalStop(vm::Profiling& p)
      : thread_([this, &p] {
          sigset_t set = signals();
          std::chrono::steady_clock::time_point first;
          for (int sig; sigwait(&set, &sig) == 0;) {
            if (done_.load()) return;
            if (signal_.load() && std::chrono::steady_clock::now() - first < std::chrono::milliseconds(500))
              continue;
            if (signal_.exchange(sig) == 0) {
              first = std::chrono::steady_clock::now();
              std::cerr << "wzvm: " << (sig == SIGINT ? "SIGINT" : "SIGTERM")
                        << ": stopping the guest to write the profiles (send it again to quit at once)\n";
              vm::set_flag(p.interrupt_requested, 1);  // before raise(), as Watchdog does
              p.raise();
              vm::interrupt_waits();
              continue;
            }
            // The second: what the signal would have done.
            std::signal(sig, SIG_DFL);
            sigset_t one;
            sigemptyset(&one);
            sigaddset(&one, sig);
            pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
            pthread_kill(pthread_self(), sig);
          }
        }) {}
  ~SignalStop() {
    done_.store(true);
    pthread_kill(thread_.native_handle(), SIGTERM);  // wakes its sigwait
    thread_.join();
  }
  SignalStop(const SignalStop&) = delete;
  SignalStop& operator=(const SignalStop&) = delete;
  // The signal that stopped the run, or 0.
  int signal() const { return signal_.load(); }

 private:
  std::atomic<bool> done_{false};
  std::atomic<int> signal_{0};
  std::thread thread_;  // last: started once the members it uses exist
};

// A size in bytes, with an optional K, M or G suffix (powers of 1024), at most 4 GiB.
std::string parse_bytes(const std::string& text, uint64_t& bytes) {
  uint64_t mult = 1;
  std::string digits = text;
  if (!digits.empty()) {
    switch (digits.back()) {
      case 'k':
      case 'K':
        mult = uint64_t{1} << 10;
        break;
      case 'm':
      case 'M':
        mult = uint64_t{1} << 20;
        break;
      case 'g':
      case 'G':
        mult = uint64_t{1} << 30;
        break;
    }
    if (mult != 1) digits.pop_back();
  }
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 12)
    return "expected a number of bytes (optionally with K, M or G), got '" + text + "'";
  bytes = std::stoull(digits) * mult;
  constexpr uint64_t kMax = uint64_t{65536} * 65536;
  if (bytes > kMax) return "at most 4G (4294967296 bytes), got '" + text + "'";
  return {};
}

int run(const Options& opt) {
  std::vector<uint8_t> bytes;
  std::string why;
  if (!read_file(opt.file, opt.max_module_bytes, bytes, why)) return fail(opt.file, why);

  vm::LoadOptions load_options;
  // Fuel is charged by the instruction counters (exact, per straight-line
  // segment). A deterministic run's clocks read what the fuel counted.
  const bool fueled = opt.fuel.has_value() || opt.deterministic;
  load_options.count_instructions = opt.profile.count_instructions() || fueled;
  load_options.fuel = fueled;
  load_options.call_hook = opt.profile.call_hook();
  // Go's goroutine scheduler loop, whose callees' callers the profiler reads
  // from Go's stack (profiler/golang.h).
  if (opt.profile.any()) load_options.graft_calls = profiler::GoModule::resumes_goroutines;
  // CPython: instruction counts by Python function and line, probed at its
  // evaluation loop's dispatch (profiler/python_counts.cc). Only when
  // instructions are all that is profiled: CPU samples, allocations and the
  // live endpoint take their Python stacks from memory instead
  // (docs/RATIONALE.md, "Python").
  if (opt.profile.count_instructions() && !opt.profile.cpu() && !opt.profile.mem() &&
      opt.profile.pprof_addr.empty())
    load_options.probe_dispatch = profiler::CPythonModule::dispatch_probe;
  load_options.features = opt.features;
  // Bodies lowered on their first call, counted or not (a shared memory's
  // threads stay eager: LoadOptions::lazy).
  load_options.lazy = true;
  load_options.known_bodies = opt.known_bodies;
  auto loaded = vm::load_module(std::move(bytes), load_options);
  if (!loaded) return fail(opt.file, loaded.error().to_string());
  std::shared_ptr<const vm::Module> module = loaded.value();

  // WASI: argv[0] is the module path as given; the environment is exactly
  // --env unless --inherit-env (later --env entries override earlier ones and
  // inherited ones of the same name).
  wasi::Config config;
  config.args.push_back(opt.file);
  if (opt.invoke.empty()) config.args.insert(config.args.end(), opt.args.begin(), opt.args.end());
  auto set_env = [&](const std::string& kv) {
    std::string name = kv.substr(0, kv.find('='));
    std::erase_if(config.env,
                  [&](const std::string& e) { return e.compare(0, name.size() + 1, name + "=") == 0; });
    config.env.push_back(kv);
  };
  if (opt.inherit_env)
    for (char** e = environ; e && *e; ++e)
      if (std::strchr(*e, '=')) set_env(*e);
  for (const std::string& kv : opt.envs) set_env(kv);
  config.deterministic = opt.deterministic;
  config.random_seed = opt.random_seed;
  if (std::string why = cli::open_preopens(opt.preopens, config.preopens); !why.empty()) {
    std::cerr << "wzvm: error: " << why << "\n";
    return kExitError;
  }
  auto ctx = wasi::Wasi::create(std::move(config));
  if (!ctx) return fail(opt.file, ctx.error().message);

  vm::Store store(opt.limits);
  if (opt.profile.any()) SignalStop::block();  // before the profiler starts threads
  // Attached before instantiation, so a start function is profiled too; the
  // profiles are written when run() returns, whichever way (trap, exit, error).
  cli::ProfileSession profile(opt.profile, store, *module, opt.file);
  if (!profile.ok()) {
    std::cerr << "wzvm: error: " << profile.error() << "\n";
    return kExitError;
  }
  // --fuel and --timeout reuse the profiling hooks: the profiler's state when
  // one runs, or a bare one (no sink: nothing recorded, only the limits).
  // wasi-threads too: a thread that ends the process stops the main one
  // through its interrupt flag, so a threaded program's main thread always
  // has one.
  const bool threaded = wasi::Threads::wanted(*module);
  if (threaded && opt.deterministic) {
    profile.discard();
    return fail(
        opt.file,
        "--deterministic cannot run a wasi-threads module (it imports wasi.thread-spawn): how its threads "
        "interleave is up to the operating system");
  }
  vm::Profiling bare;
  vm::Profiling* prof = profile.profiling();
  if (!prof && (fueled || opt.timeout || threaded)) {
    prof = &bare;
    store.thread()->profiling = prof;
  }
  if (fueled) {
    prof->count_instructions = true;
    prof->set_fuel(opt.fuel.value_or(UINT64_MAX));
  }
  // Started before instantiation, so a start function is bounded too.
  std::optional<Watchdog> watchdog;
  if (opt.timeout) watchdog.emplace(*prof, *opt.timeout);
  std::optional<SignalStop> stop_signal;
  if (profile.profiling()) stop_signal.emplace(*profile.profiling());
  struct Detach {  // `bare` dies before `store`: the thread must not point at it
    vm::Store& store;
    vm::Profiling* p;
    ~Detach() {
      if (store.thread()->profiling == p) store.thread()->profiling = nullptr;
    }
  } detach{store, &bare};
  // Errors found before any guest code runs write no profile (an earlier
  // one at the same path stays); after a start function ran, its profile is
  // written as after any run.
  bool guest_ran = false;
  auto not_run = [&](const std::string& why) {
    if (!guest_ran) profile.discard();
    return fail(opt.file, why);
  };
  // Every import must be a WASI function; anything else is "unknown import
  // M.F". A threaded module (wasi-threads) also gets wasi.thread-spawn and
  // its imported memory. `threads` is declared after the profiling session:
  // its threads are stopped and joined before the profiles are written.
  std::unique_ptr<wasi::Threads> threads;
  if (threaded) threads = std::make_unique<wasi::Threads>(store, profile.thread_hooks());
  std::vector<vm::Extern> imports;
  for (const vm::Import& imp : module->imports) {
    auto e = threads && wasi::Threads::handles(imp) ? threads->import_for(*module, imp)
                                                    : (*ctx)->import_for(store, *module, imp);
    if (!e) return not_run(e.error().message);
    imports.push_back(*e);
  }
  if (threads) {
    threads->set_module(module, imports);
    threads->set_main(prof);
  }
  // The host ran out of memory running the guest (vm::TrapCode::HostOutOfMemory,
  // a ulimit or a profile of millions of call paths): an error of wzvm's, not a
  // trap of the guest's, and what profiling counted is no longer exact, so no
  // profile is written (an earlier one at the same path stays).
  auto out_of_memory = [&](const std::string& doing) {
    profile.discard();
    return fail(opt.file, std::string(vm::trap_message(vm::TrapCode::HostOutOfMemory)) + " while " + doing +
                              ": no profile written");
  };
  auto inst = store.instantiate(module, imports);
  if (!inst) {
    const vm::Error& e = inst.error();
    // Its memories or tables could not be made, or its start function ran
    // out (which e.function then names).
    if (e.host_out_of_memory)
      return out_of_memory(e.function >= 0 ? "running the start function" : "instantiating");
    if (e.kind == vm::Error::Kind::Instantiate) {
      // A trap in segment initialisation or the start function.
      std::cerr << "wzvm: trap: " << e.message << "\n";
      return kExitTrap;
    }
    return not_run(e.to_string());
  }
  guest_ran = module->start.has_value();

  const std::string name = opt.invoke.empty() ? "_start" : opt.invoke;
  auto it = (*inst)->exports.find(name);
  if (it == (*inst)->exports.end()) {
    if (opt.invoke.empty()) return not_run("no _start export (use --invoke NAME to call an export)");
    return not_run("export " + name + " not found");
  }
  if (it->second.kind != vm::ExternKind::Func)
    return not_run("export " + name + " is a " + vm::extern_kind_name(it->second.kind) + ", not a function");
  vm::FuncInst* func = it->second.func;

  // Guest arguments are the function's parameters with --invoke; for _start
  // they will become WASI argv (ignored until WASI lands).
  std::vector<vm::Value> params;
  if (!opt.invoke.empty()) {
    const auto& types = func->type.params;
    if (opt.args.size() != types.size()) {
      return not_run("function " + name + " " + func->type.to_string() + " takes " +
                     std::to_string(types.size()) + " argument" + (types.size() == 1 ? "" : "s") + ", got " +
                     std::to_string(opt.args.size()));
    }
    for (size_t i = 0; i < types.size(); ++i) {
      auto v = cli::parse_value(types[i], opt.args[i]);
      if (!v) {
        return not_run("argument " + std::to_string(i + 1) + " of " + name + ": '" + opt.args[i] +
                       "' is not a valid " + vm::valtype_name(types[i]));
      }
      params.push_back(*v);
    }
  } else if (!func->type.params.empty()) {
    return not_run("_start must take no parameters, it has type " + func->type.to_string());
  }

  std::vector<vm::Value> results;
  // A WASI reactor is initialised before any of its exports is called.
  if (!opt.invoke.empty()) {
    if (vm::FuncInst* init = (*inst)->exported_func("_initialize"); init && init->type.params.empty()) {
      vm::Trap t = store.invoke(init, {}, results);
      if (t.code == vm::TrapCode::HostOutOfMemory) return out_of_memory("running _initialize");
      if (t) return report_trap(t);
      results.clear();
    }
  }
  vm::Trap trap = store.invoke(func, params, results);
  if (threads) {
    // The main thread's end (return, proc_exit or trap) ends the others
    // (wasi-threads: a return from _start is exit(0)). A spawned thread that
    // ended the process first decides the outcome: the main thread was
    // interrupted because of it.
    threads->stop();
    if (auto ended = threads->ended()) trap = *ended;
  }
  std::cout.flush();
  if (trap.code == vm::TrapCode::HostOutOfMemory) return out_of_memory("running " + name);
  if (stop_signal && stop_signal->signal()) {
    if (trap) report_trap(trap);  // where it stopped
    return 128 + stop_signal->signal();
  }
  if (trap) return report_trap(trap);
  for (const vm::Value& r : results) std::cout << cli::format_value(r) << "\n";
  std::cout.flush();
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  // `wzvm report ...` reads profiles instead of running a module (a module
  // file named "report" runs as ./report).
  if (argc > 1 && std::strcmp(argv[1], "report") == 0) {
    // A profile too big for the host (as for a run, below): one error line.
    try {
      return cli::report_command(argc - 1, argv + 1);
    } catch (const std::bad_alloc&) {
      std::cerr << "wzvm: error: report: " << vm::trap_message(vm::TrapCode::HostOutOfMemory) << "\n";
      return kExitError;
    }
  }
  CLI::App app{
      "wzvm: a WebAssembly interpreter with built-in profilers\n\n"
      "  wzvm [OPTIONS] MODULE.wasm [ARGS...]              run the module's _start\n"
      "  wzvm [OPTIONS] --invoke NAME MODULE.wasm [ARGS...] call export NAME, print its results\n"
      "  wzvm report [--top N] PROFILE...                  summarize profiles wzvm wrote\n",
      "wzvm"};
  app.footer(
      "Options come before the module; everything after it belongs to the guest\n"
      "(with --invoke, the function's arguments: i32/i64 decimal or 0x hex, f32/f64\n"
      "decimal, hex float, inf, nan, nan:0x...).\n"
      "Exit status: the guest's proc_exit code (0 when _start returns), 1 wzvm error,\n"
      "2 usage error, 134 trap; a profiled run stopped by Ctrl-C or SIGTERM writes its\n"
      "profiles and exits 130 or 143.");
  // The module path and everything after it are left unparsed (remaining()).
  app.prefix_command();
  Options opt;
  app.add_option("--invoke", opt.invoke,
                 "Call this exported function instead of _start and print its results")
      ->option_text("NAME");
  // One value per occurrence (CLI11 vectors otherwise swallow the module path).
  // --dir, --listen and --fd share the guest fds 3, 4, ... in the order given,
  // which parse_order() recovers after parsing.
  std::vector<std::string> dirs, listens, fds;
  CLI::Option* dir_opt =
      app.add_option(
             "--dir", dirs,
             "Preopen host directory HOST for the guest as GUEST (default: HOST); repeatable, fds 3, 4, ...")
          ->option_text("HOST[::GUEST]")
          ->allow_extra_args(false);
  CLI::Option* listen_opt =
      app.add_option("--listen", listens,
                     "Preopen a TCP socket listening on HOST:PORT (next fd, for sock_accept); repeatable; "
                     "port 0 picks a free port, announced on stderr")
          ->option_text("HOST:PORT")
          ->allow_extra_args(false)
          ->check([](const std::string& v) {
            std::string host, port;
            return cli::parse_host_port(v, host, port);
          });
  CLI::Option* fd_opt = app.add_option("--fd", fds,
                                       "Give the guest a copy of wzvm's open fd N (e.g. an inherited socket) "
                                       "as the next fd; repeatable")
                            ->option_text("N")
                            ->allow_extra_args(false)
                            ->check(CLI::Range(0, 1 << 20));
  app.add_option("--env", opt.envs, "Set a guest environment variable; repeatable")
      ->option_text("NAME=VALUE")
      ->allow_extra_args(false)
      ->check([](const std::string& v) {
        return v.find('=') == std::string::npos ? "expected NAME=VALUE, got '" + v + "'" : std::string();
      });
  app.add_flag("--inherit-env", opt.inherit_env, "Pass wzvm's own environment to the guest (before --env)");
  app.add_flag(
      "--deterministic", opt.deterministic,
      "Make the run a function of its inputs: random_get from a seeded PRNG, virtual clocks that advance "
      "1 ns per executed instruction, sleeps skipped (as slow as --fuel)");
  app.add_flag("!--no-known-bodies", opt.known_bodies,
               "Run every function as its wasm body, also those wzvm runs natively when it knows them by "
               "their bytes (wasi-libc's allocator and string functions, Go's math/bits): slower, for "
               "checking that both give the same results and profiles");
  std::string random_seed;
  app.add_option("--random-seed", random_seed,
                 "Seed of random_get's stream under --deterministic (default 0)")
      ->option_text("N")
      ->check([](const std::string& v) {
        return v.empty() || v.size() > 20 || v.find_first_not_of("0123456789") != std::string::npos ||
                       (v.size() == 20 && v > "18446744073709551615")
                   ? "expected a whole number from 0 to 18446744073709551615, got '" + v + "'"
                   : std::string();
      });
  opt.profile.add_to(app);
  // Limits against a hostile or runaway guest (README "Guarantees").
  std::string max_memory, max_module;
  auto bytes_check = [](const std::string& v) {
    uint64_t bytes;
    return parse_bytes(v, bytes);
  };
  app.add_option("--max-memory", max_memory,
                 "Largest linear memory the guest may have, in bytes (K, M, G suffixes; whole 64 KiB pages; "
                 "default 4G): memory.grow past it returns -1, an initial size past it is an error")
      ->option_text("BYTES")
      ->check(bytes_check);
  app.add_option("--max-module-size", max_module,
                 "Largest module file wzvm reads, in bytes (K, M, G suffixes; default 1G)")
      ->option_text("BYTES")
      ->check(bytes_check);
  app.add_option("--max-stack-depth", opt.limits.max_call_depth,
                 "Most nested wasm calls before the guest traps with 'call stack exhausted' (default 20000)")
      ->option_text("FRAMES")
      ->check(CLI::Range(1u, 1000000u));
  std::string timeout, fuel;
  // Parsed by hand: CLI11 would wrap "-3" into a huge unsigned budget.
  app.add_option("--fuel", fuel,
                 "Most wasm instructions the guest may execute; one more traps with 'all fuel consumed' "
                 "(exact: counted like --profile=instructions, and as slow)")
      ->option_text("N")
      ->check([](const std::string& v) {
        return v.empty() || v.size() > 19 || v.find_first_not_of("0123456789") != std::string::npos
                   ? "expected a whole number of instructions, got '" + v + "'"
                   : std::string();
      });
  app.add_option("--timeout", timeout,
                 "Stop the guest with trap 'interrupted' after this much wall-clock time "
                 "(500ms, 10s, 2m; a number alone is seconds)")
      ->option_text("DURATION")
      ->check([](const std::string& v) {
        std::chrono::nanoseconds d;
        return parse_duration(v, d);
      });
  // Proposals beyond wasm 2.0 (vm/features.def), in the order given.
  bool enable_all = false;
  std::vector<std::pair<const vm::FeatureInfo*, bool>> feature_flags;
  app.add_flag("--enable-all", enable_all,
               "Allow every implemented proposal (before the --disable-NAME flags)");
  for (const vm::FeatureInfo& f : vm::feature_table()) {
    std::string state = !f.implemented ? " (not implemented yet)" : f.default_on ? " (on by default)" : "";
    for (bool on : {true, false}) {
      std::string flag = std::string(on ? "--enable-" : "--disable-") + f.name;
      app.add_flag_callback(
          flag, [&feature_flags, &f, on] { feature_flags.emplace_back(&f, on); },
          std::string(on ? "Allow" : "Refuse") + " modules using the " + f.name + " proposal" +
              (on ? state : ""));
    }
  }
  app.set_version_flag("--version", std::string("wzvm ") + WZVM_VERSION);

  // `--profile=` with nothing after the `=`: CLI11 takes the next argument
  // as the value (often the module path), so the error would quote the wrong
  // text, or the run would go on with a module path as an output file. Looked
  // for among the first `upto` arguments: those before the module.
  auto empty_value = [&](int upto) -> std::string {
    for (int i = 1; i < upto; ++i) {
      std::string a = argv[i];
      if (a.size() > 3 && a.starts_with("--") && a.ends_with("=") &&
          app.get_option_no_throw(a.substr(0, a.size() - 1)))
        return a;
    }
    return {};
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version arrive here with exit code 0.
    if (e.get_exit_code() == 0) return app.exit(e);
    const std::string empty = empty_value(argc);
    std::cerr << "wzvm: usage error: " << (empty.empty() ? std::string(e.what()) : empty + " needs a value")
              << "\n"
              << "Run 'wzvm --help' for usage.\n";
    return 2;
  }
  if (const std::string empty = empty_value(argc - static_cast<int>(app.remaining_size())); !empty.empty()) {
    std::cerr << "wzvm: usage error: " << empty << " needs a value\nRun 'wzvm --help' for usage.\n";
    return 2;
  }
  {
    size_t next_dir = 0, next_listen = 0, next_fd = 0;
    for (const CLI::Option* o : app.parse_order()) {
      if (o == dir_opt) opt.preopens.push_back({cli::PreopenFlag::Kind::Dir, dirs.at(next_dir++)});
      else if (o == listen_opt)
        opt.preopens.push_back({cli::PreopenFlag::Kind::Listen, listens.at(next_listen++)});
      else if (o == fd_opt) opt.preopens.push_back({cli::PreopenFlag::Kind::Fd, fds.at(next_fd++)});
    }
  }
  if (enable_all) opt.features = vm::Features::all();
  for (auto [f, on] : feature_flags) {
    if (on && !f->implemented) {
      std::cerr << "wzvm: usage error: the " << f->name << " proposal is not implemented yet\n";
      return 2;
    }
    opt.features.set(f->id, on);
  }
  // Already checked by CLI11; a memory is made of whole 64 KiB pages.
  if (uint64_t bytes; !max_memory.empty() && parse_bytes(max_memory, bytes).empty())
    opt.limits.max_memory_pages = bytes / 65536;
  if (!max_module.empty()) (void)parse_bytes(max_module, opt.max_module_bytes);
  if (!fuel.empty()) opt.fuel = std::stoull(fuel);
  if (!random_seed.empty()) {
    if (!opt.deterministic) {
      std::cerr << "wzvm: usage error: --random-seed needs --deterministic\nRun 'wzvm --help' for usage.\n";
      return 2;
    }
    opt.random_seed = std::stoull(random_seed);
  }
  if (opt.deterministic) {
    // What --deterministic cannot make a function of the inputs is refused,
    // never left to vary quietly.
    std::string why;
    if (opt.inherit_env)
      why = "--inherit-env: wzvm's environment differs between runs and machines; pass --env";
    for (const cli::PreopenFlag& p : opt.preopens) {
      struct stat st;
      if (!why.empty()) break;
      if (p.kind == cli::PreopenFlag::Kind::Listen)
        why = "--listen " + p.value + ": what a socket receives, and in which pieces, is up to its peers";
      else if (p.kind == cli::PreopenFlag::Kind::Fd && fstat(std::atoi(p.value.c_str()), &st) == 0 &&
               S_ISSOCK(st.st_mode))
        why = "--fd " + p.value + " is a socket: what it receives, and in which pieces, is up to its peers";
    }
    if (!why.empty()) {
      std::cerr << "wzvm: usage error: --deterministic cannot be combined with " << why << "\n";
      return 2;
    }
    opt.profile.deterministic = true;
  }
  if (std::chrono::nanoseconds d; !timeout.empty() && parse_duration(timeout, d).empty()) opt.timeout = d;
  std::vector<std::string> rest = app.remaining();
  if (!rest.empty() && rest.front() == "--") rest.erase(rest.begin());
  if (rest.empty()) {
    std::cerr << "wzvm: usage error: no module given\nRun 'wzvm --help' for usage.\n";
    return 2;
  }
  if (rest.front().starts_with("-") && rest.front() != "-") {
    std::cerr << "wzvm: usage error: unknown option " << rest.front() << "\nRun 'wzvm --help' for usage.\n";
    return 2;
  }
  opt.file = rest.front();
  // A guest writing to a closed pipe gets EPIPE, as under wasmtime, rather
  // than wzvm dying of SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  // Likewise a file size limit (ulimit -f): a write past it fails with EFBIG
  // (the guest's, or a profile's, reported as such, the profile's temporary
  // file removed) instead of SIGXFSZ killing wzvm halfway through a file.
  std::signal(SIGXFSZ, SIG_IGN);
  opt.args.assign(rest.begin() + 1, rest.end());
  bool profile_write_failed = false;
  opt.profile.write_failed = &profile_write_failed;
  // Out of memory outside the guest's run (loading, instantiating; the run's
  // own is its trap, vm::TrapCode::HostOutOfMemory): one error line, not an
  // abort.
  int status;
  try {
    status = run(opt);
  } catch (const std::bad_alloc&) {
    return fail(opt.file, vm::trap_message(vm::TrapCode::HostOutOfMemory));
  } catch (const std::system_error& e) {
    // A thread of wzvm's own (--timeout's, the signal handler's, the live
    // endpoint's) the host cannot give: EAGAIN under a ulimit.
    return fail(opt.file, std::string("cannot start a thread: ") + e.what());
  }
  return status == kExitOk && profile_write_failed ? kExitError : status;
}
