// wzvm-spectest: runs the WebAssembly spec testsuite as converted by wabt's
// wast2json (a JSON script per .wast plus its .wasm modules), against wzvm's vm/.
//
//   wzvm-spectest [-v] [--known-failures PATH] [--skip-simd] [--profile-cpu]
//                 [--count-instructions] [--lazy] [--enable-<proposal>...] [--enable-all]
//                 FILE.json|DIR...
//
// Proposal flags are those of vm/features.def, by name or by wabt's name, so
// the flags `convert.sh --flags FILE` prints for a test file can be passed
// as they are. Without any, modules are plain wasm 2.0.
//
// Command semantics follow the reference interpreter's script runner
// (https://github.com/WebAssembly/spec/tree/main/interpreter#scripts).
// One fresh Store per JSON file, with the `spectest` host module in it.
// Deliberately simple and in-process: a crash in the engine ends the run, and
// a signal handler names the file and line it happened on.
//
// --profile-cpu and --count-instructions run everything with the profilers
// attached (the CPU sampler at 10 kHz, instruction counting lowered in): the
// results must be the same as without, since profiling never changes what a
// program computes. ctest runs the core suite all three ways. --lazy loads
// modules as the command line does (LoadOptions::lazy: bodies validated at
// load, lowered on first call); ctest's CPU-profiled run uses it, so both
// validation paths and both ways of entering a body see the whole suite.

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "profiler/profiler.h"
#include "spec-tests/spectest_host.h"
#include "spec-tests/values.h"
#include "vm/module.h"
#include "vm/result.h"
#include "vm/runtime.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace wzvm::spectest {
namespace {

using vm::Error;
using vm::Extern;
using vm::Instance;
using vm::Trap;
using vm::Value;

constexpr int kShownFailures = 5;

struct Options {
  bool verbose = false;
  bool skip_simd = false;
  bool profile_cpu = false;
  bool count_instructions = false;
  bool lazy = false;  // LoadOptions::lazy: bodies validated at load, lowered on first call
  // The spec files assume exactly the proposals their flags name.
  vm::Features features = vm::Features::wasm2();
  std::string known_failures_path;
  std::vector<std::string> inputs;
};

// --- crash reporting -------------------------------------------------------
// Only async-signal-safe work in the handler: the current file name is kept
// in a fixed buffer, the line in an int.
char g_crash_file[512];
volatile sig_atomic_t g_crash_line = 0;

void write_str(const char* s) { (void)!write(2, s, std::strlen(s)); }

void crash_handler(int sig) {
  char num[16];
  int n = 0, line = g_crash_line;
  char tmp[16];
  do {
    tmp[n++] = static_cast<char>('0' + line % 10);
    line /= 10;
  } while (line > 0 && n < 15);
  for (int i = 0; i < n; i++) num[i] = tmp[n - 1 - i];
  num[n] = '\0';
  write_str("\nwzvm-spectest: engine crashed (signal ");
  write_str(sig == SIGSEGV   ? "SIGSEGV"
            : sig == SIGABRT ? "SIGABRT"
            : sig == SIGBUS  ? "SIGBUS"
            : sig == SIGFPE  ? "SIGFPE"
                             : "?");
  write_str(") while running ");
  write_str(g_crash_file);
  write_str(":");
  write_str(num);
  write_str("\n");
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void install_crash_handler() {
  for (int sig : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL}) std::signal(sig, crash_handler);
}

void set_crash_context(const std::string& file, int line) {
  if (!file.empty()) {
    std::snprintf(g_crash_file, sizeof g_crash_file, "%s", file.c_str());
  }
  g_crash_line = line;
}

// --- known failures ----------------------------------------------------------

struct KnownFailures {
  struct Entry {
    std::string file;
    int line = 0;
    int list_line = 0;  // line in the list file, for messages
    bool seen = false;  // a command on that line ran (passed or failed)
    bool file_run = false;
  };
  std::vector<Entry> entries;

  // `display` is e.g. "core/i32.json"; an entry may be "core/i32.json" or "i32.json".
  static bool file_matches(const std::string& entry, const std::string& display) {
    if (entry == display) return true;
    return display.size() > entry.size() && display.ends_with(entry) &&
           display[display.size() - entry.size() - 1] == '/';
  }
  Entry* find(const std::string& display, int line) {
    for (auto& e : entries)
      if (e.line == line && file_matches(e.file, display)) return &e;
    return nullptr;
  }
  void mark_file_run(const std::string& display) {
    for (auto& e : entries)
      if (file_matches(e.file, display)) e.file_run = true;
  }
};

bool load_known_failures(const std::string& path, KnownFailures& out) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "wzvm-spectest: cannot read known-failures list %s\n", path.c_str());
    return false;
  }
  std::string text;
  int n = 0;
  bool ok = true;
  while (std::getline(in, text)) {
    n++;
    if (auto hash = text.find('#'); hash != std::string::npos) text.resize(hash);
    auto b = text.find_first_not_of(" \t\r");
    if (b == std::string::npos) continue;
    auto e = text.find_last_not_of(" \t\r");
    text = text.substr(b, e - b + 1);
    auto colon = text.rfind(':');
    char* end = nullptr;
    long line = colon == std::string::npos ? 0 : std::strtol(text.c_str() + colon + 1, &end, 10);
    if (colon == std::string::npos || colon == 0 || line <= 0 || !end || *end != '\0') {
      std::fprintf(stderr, "%s:%d: malformed entry '%s' (want FILE.json:LINE)\n", path.c_str(), n,
                   text.c_str());
      ok = false;
      continue;
    }
    out.entries.push_back({text.substr(0, colon), static_cast<int>(line), n});
  }
  return ok;
}

// --- running one file --------------------------------------------------------

struct Outcome {
  enum class Kind { Pass, Fail, Skip, Uncounted } kind = Kind::Pass;
  std::string message;  // why it failed / was skipped
  static Outcome pass() { return {Kind::Pass, {}}; }
  static Outcome fail(std::string m) { return {Kind::Fail, std::move(m)}; }
  static Outcome skip(std::string m) { return {Kind::Skip, std::move(m)}; }
};

struct FileStats {
  int passed = 0, failed = 0, skipped = 0, expected_failures = 0, unexpected_passes = 0;
  int phase_mismatches = 0;
};

std::string trap_text(const Trap& t) { return t.message.empty() ? vm::trap_message(t.code) : t.message; }

// The spec's trap texts and ours may differ by a suffix either way.
bool text_matches(const std::string& got, const std::string& want) {
  if (got.empty()) return want.empty();
  return got.starts_with(want) || want.starts_with(got);
}

const char* kind_name(Error::Kind k) {
  switch (k) {
    case Error::Kind::Malformed:
      return "malformed";
    case Error::Kind::Invalid:
      return "invalid";
    case Error::Kind::Link:
      return "link";
    case Error::Kind::Instantiate:
      return "instantiate";
    case Error::Kind::Io:
      return "io";
  }
  return "?";
}

std::string describe_error(const Error& e) {
  return std::string(kind_name(e.kind)) + " error: " + e.to_string();
}

class FileRunner {
 public:
  FileRunner(const fs::path& json_path, std::string display, const Options& opts)
      : dir_(json_path.parent_path()), display_(std::move(display)), opts_(opts) {}

  // Set up the store and the spectest module; false (with `error`) if impossible.
  bool init(std::string& error) {
    store_ = std::make_unique<vm::Store>();
    auto st = make_spectest_module(*store_, opts_.verbose);
    if (!st) {
      error = st.error().to_string();
      return false;
    }
    registry_["spectest"] = std::move(st.value());
    if (opts_.profile_cpu || opts_.count_instructions) {
      // A high rate, so that safe points really take samples in short tests.
      profiler_ = std::make_unique<profiler::Profiler>(profiler::Options{
          .cpu = opts_.profile_cpu, .instructions = opts_.count_instructions, .cpu_hz = 10000});
      if (!profiler_->start(*store_, error)) return false;
    }
    return true;
  }

  // Adds what the profiler aggregated for this file to `totals`.
  void add_profile_totals(uint64_t& instructions, uint64_t& samples, uint64_t& host_calls) {
    if (!profiler_) return;
    profiler_->stop();
    for (uint64_t c : profiler_->instruction_totals()) instructions += c;
    for (const auto& s : profiler_->cpu_sites()) samples += s.count;
    for (const auto& h : profiler_->host_sites()) host_calls += h.count;
  }

  Outcome run(const json& cmd) {
    std::string type = cmd.value("type", "");
    if (type == "module") return do_module(cmd);
    if (type == "register") return do_register(cmd);
    if (type == "action") return do_action(cmd);
    if (type == "assert_return") return do_assert_return(cmd);
    if (type == "assert_trap") {
      if (cmd.contains("filename")) return do_assert_module_fails(cmd, Error::Kind::Instantiate, true);
      return do_assert_trap(cmd);
    }
    if (type == "assert_exhaustion") return do_assert_trap(cmd);
    if (type == "assert_invalid") return do_assert_load_fails(cmd, Error::Kind::Invalid);
    if (type == "assert_malformed") return do_assert_load_fails(cmd, Error::Kind::Malformed);
    if (type == "assert_unlinkable") return do_assert_module_fails(cmd, Error::Kind::Link, false);
    if (type == "assert_uninstantiable") return do_assert_module_fails(cmd, Error::Kind::Instantiate, false);
    if (type == "assert_exception") return do_assert_exception(cmd);
    return Outcome::fail("unknown command type '" + type + "'");
  }

  const std::vector<std::string>& notes() const { return notes_; }
  int phase_mismatches() const { return phase_mismatches_; }

 private:
  using ModuleResult = vm::Result<std::shared_ptr<const vm::Module>>;

  static bool is_text_module(const json& cmd) {
    std::string f = cmd.value("filename", "");
    return cmd.value("module_type", "") == "text" || f.ends_with(".wat");
  }

  ModuleResult load_file(const json& cmd) {
    std::string name = cmd.value("filename", "");
    if (name.empty()) {
      Error e;
      e.kind = Error::Kind::Io;
      e.message = "command has no \"filename\"";
      return e;
    }
    fs::path p = dir_ / name;
    std::ifstream in(p, std::ios::binary);
    if (!in) {
      Error e;
      e.kind = Error::Kind::Io;
      e.message = "cannot read module file " + p.string() + " (missing .wasm? re-run wast2json)";
      return e;
    }
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) {
      Error e;
      e.kind = Error::Kind::Io;
      e.message = "error reading " + p.string();
      return e;
    }
    vm::LoadOptions lo;
    lo.count_instructions = opts_.count_instructions;
    lo.lazy = opts_.lazy;
    lo.features = opts_.features;
    return vm::load_module(std::move(bytes), lo);
  }

  vm::Result<Instance*> instantiate(std::shared_ptr<const vm::Module> module) {
    std::vector<Extern> imports;
    imports.reserve(module->imports.size());
    for (const auto& imp : module->imports) {
      auto m = registry_.find(imp.module);
      const Extern* ext = nullptr;
      if (m != registry_.end()) {
        auto f = m->second.find(imp.field);
        if (f != m->second.end()) ext = &f->second;
      }
      if (!ext) {
        Error e;
        e.kind = Error::Kind::Link;
        e.message = "unknown import \"" + imp.module + "\".\"" + imp.field + "\"";
        e.section = "import";
        return e;
      }
      imports.push_back(*ext);
    }
    return store_->instantiate(std::move(module), imports);
  }

  Outcome do_module(const json& cmd) {
    std::string name = cmd.value("name", "");
    int line = cmd.value("line", 0);
    // Until this module works, later commands addressed to it fail rather than
    // running against a previous module.
    current_ = nullptr;
    current_error_ = "module at line " + std::to_string(line) + " failed to load";
    if (!name.empty()) named_[name] = nullptr;
    if (is_text_module(cmd)) {
      current_error_ = "module at line " + std::to_string(line) + " is a text module (skipped)";
      return Outcome::skip("text module");
    }
    auto mod = load_file(cmd);
    if (!mod)
      return Outcome::fail("module " + cmd.value("filename", "") + ": " + describe_error(mod.error()));
    auto inst = instantiate(mod.value());
    if (!inst)
      return Outcome::fail("module " + cmd.value("filename", "") + ": " + describe_error(inst.error()));
    current_ = inst.value();
    if (!name.empty()) named_[name] = current_;
    return Outcome::pass();
  }

  Outcome do_register(const json& cmd) {
    std::string as = cmd.value("as", "");
    std::string error;
    Instance* inst = find_instance(cmd.value("name", ""), error);
    if (!inst) return {Outcome::Kind::Uncounted, "register \"" + as + "\": " + error};
    registry_[as] = ExportMap(inst->exports.begin(), inst->exports.end());
    return {Outcome::Kind::Uncounted, {}};
  }

  Instance* find_instance(const std::string& name, std::string& error) {
    if (name.empty()) {
      if (!current_) error = current_error_.empty() ? "no module loaded" : current_error_;
      return current_;
    }
    auto it = named_.find(name);
    if (it == named_.end()) {
      error = "no module named " + name;
      return nullptr;
    }
    if (!it->second) error = "module " + name + " failed to load";
    return it->second;
  }

  struct ActionResult {
    std::string error;  // could not run (no module, no export, bad argument)
    Trap trap;
    std::vector<Value> results;
    std::string what;  // "f(i32:1)" for messages
  };

  ActionResult perform(const json& action) {
    ActionResult r;
    std::string type = action.value("type", "");
    std::string field = action.value("field", "");
    std::string module = action.value("module", "");
    r.what = (module.empty() ? "" : module + ".") + "\"" + field + "\"";
    std::vector<Value> args;
    if (action.contains("args")) {
      for (const auto& a : action["args"]) {
        auto v = parse_value(a, r.error);
        if (!v) return r;
        args.push_back(*v);
      }
    }
    if (type == "invoke") r.what += format_values(args);
    Instance* inst = find_instance(module, r.error);
    if (!inst) return r;
    if (type == "get") {
      vm::GlobalInst* g = inst->exported_global(field);
      if (!g) {
        r.error = "no exported global \"" + field + "\"";
        return r;
      }
      r.what = "get " + r.what;
      r.results.push_back(global_value(*g));
      return r;
    }
    if (type != "invoke") {
      r.error = "unknown action type '" + type + "'";
      return r;
    }
    vm::FuncInst* f = inst->exported_func(field);
    if (!f) {
      r.error = "no exported function \"" + field + "\"";
      return r;
    }
    r.trap = store_->invoke(f, args, r.results);
    return r;
  }

  Outcome do_action(const json& cmd) {
    auto r = perform(cmd["action"]);
    if (!r.error.empty()) return Outcome::fail("action " + r.what + ": " + r.error);
    if (r.trap) return Outcome::fail("action " + r.what + ": trapped: " + trap_text(r.trap));
    return Outcome::pass();
  }

  Outcome do_assert_return(const json& cmd) {
    std::vector<Expected> want;
    std::string error;
    if (cmd.contains("expected")) {
      for (const auto& e : cmd["expected"]) {
        auto x = parse_expected(e, error);
        if (!x) return Outcome::fail("assert_return: " + error);
        want.push_back(std::move(*x));
      }
    }
    auto r = perform(cmd["action"]);
    std::string head = "assert_return " + r.what + ": ";
    if (!r.error.empty()) return Outcome::fail(head + r.error);
    if (r.trap)
      return Outcome::fail(head + "expected " + format_expecteds(want) + ", trapped: " + trap_text(r.trap));
    bool ok = r.results.size() == want.size();
    for (size_t i = 0; ok && i < want.size(); i++) ok = matches(want[i], r.results[i]);
    if (ok) return Outcome::pass();
    return Outcome::fail(head + "expected " + format_expecteds(want) + ", got " + format_values(r.results));
  }

  // assert_trap (action form) and assert_exhaustion.
  Outcome do_assert_trap(const json& cmd) {
    std::string want = cmd.value("text", "");
    auto r = perform(cmd["action"]);
    std::string head = cmd.value("type", "") + " " + r.what + ": ";
    if (!r.error.empty()) return Outcome::fail(head + r.error);
    if (!r.trap)
      return Outcome::fail(head + "expected trap \"" + want + "\", got " + format_values(r.results));
    std::string got = trap_text(r.trap);
    if (!text_matches(got, want))
      return Outcome::fail(head + "expected trap \"" + want + "\", got trap \"" + got + "\"");
    return Outcome::pass();
  }

  // exception-handling: the action must end with an exception no try caught.
  Outcome do_assert_exception(const json& cmd) {
    auto r = perform(cmd["action"]);
    std::string head = "assert_exception " + r.what + ": ";
    if (!r.error.empty()) return Outcome::fail(head + r.error);
    if (!r.trap)
      return Outcome::fail(head + "expected an uncaught exception, got " + format_values(r.results));
    if (r.trap.code != vm::TrapCode::UncaughtException)
      return Outcome::fail(head + "expected an uncaught exception, trapped: " + trap_text(r.trap));
    return Outcome::pass();
  }

  // assert_invalid / assert_malformed: any load failure passes; a different
  // phase than the one the spec names is noted for -v.
  Outcome do_assert_load_fails(const json& cmd, Error::Kind phase) {
    std::string type = cmd.value("type", "");
    std::string want = cmd.value("text", "");
    if (is_text_module(cmd)) return Outcome::skip("text module");
    auto mod = load_file(cmd);
    std::string head = type + " " + cmd.value("filename", "") + " (\"" + want + "\"): ";
    if (mod) return Outcome::fail(head + "module loaded successfully");
    const Error& e = mod.error();
    if (e.kind == Error::Kind::Io) return Outcome::fail(head + e.message);
    if (e.kind != phase) {
      phase_mismatches_++;
      notes_.push_back("line " + std::to_string(cmd.value("line", 0)) + ": " + head +
                       "rejected in another phase: " + describe_error(e));
    }
    return Outcome::pass();
  }

  // assert_unlinkable, assert_uninstantiable, assert_trap on a module.
  Outcome do_assert_module_fails(const json& cmd, Error::Kind kind, bool check_text) {
    std::string type = cmd.value("type", "");
    std::string want = cmd.value("text", "");
    std::string head = type + " " + cmd.value("filename", "") + " (\"" + want + "\"): ";
    if (is_text_module(cmd)) return Outcome::skip("text module");
    auto mod = load_file(cmd);
    if (!mod) return Outcome::fail(head + "module failed to load: " + describe_error(mod.error()));
    auto inst = instantiate(mod.value());
    if (inst) return Outcome::fail(head + "module instantiated successfully");
    const Error& e = inst.error();
    if (e.kind != kind)
      return Outcome::fail(head + "expected a " + kind_name(kind) + " error, got " + describe_error(e));
    if (!text_matches(e.message, want)) {
      if (check_text)
        return Outcome::fail(head + "expected trap \"" + want + "\", got \"" + e.message + "\"");
      notes_.push_back("line " + std::to_string(cmd.value("line", 0)) + ": " + head +
                       "message differs: " + e.message);
    }
    return Outcome::pass();
  }

  fs::path dir_;
  std::string display_;
  const Options& opts_;
  std::unique_ptr<vm::Store> store_;
  std::unique_ptr<profiler::Profiler> profiler_;  // after store_: detaches before the store goes
  std::map<std::string, ExportMap> registry_;     // module name (register "as", "spectest") -> exports
  std::map<std::string, Instance*> named_;        // "$name" -> instance (nullptr if it failed)
  Instance* current_ = nullptr;
  std::string current_error_;
  std::vector<std::string> notes_;
  int phase_mismatches_ = 0;
};

// --- driver ------------------------------------------------------------------

struct Totals {
  long passed = 0, failed = 0, skipped = 0, expected_failures = 0, unexpected_passes = 0;
  long phase_mismatches = 0;
  int simd_files_skipped = 0;
  long simd_commands_skipped = 0;
  int files = 0, files_failed = 0;
  // With the profilers attached: what they saw, to show they were there.
  uint64_t instructions = 0, cpu_samples = 0, host_calls = 0;
};

std::string display_name(const fs::path& p) {
  fs::path parent = p.parent_path().filename();
  if (parent.empty() || parent == "." || parent == "..") return p.filename().string();
  return (parent / p.filename()).string();
}

bool read_json(const fs::path& p, json& out, std::string& error) {
  std::ifstream in(p);
  if (!in) {
    error = "cannot read " + p.string();
    return false;
  }
  try {
    out = json::parse(in);
  } catch (const json::exception& e) {
    error = std::string("bad JSON: ") + e.what();
    return false;
  }
  if (!out.is_object() || !out.contains("commands") || !out["commands"].is_array()) {
    error = "not a wast2json script (no \"commands\" array)";
    return false;
  }
  return true;
}

void run_file(const fs::path& path, const Options& opts, KnownFailures& known, Totals& totals) {
  std::string display = display_name(path);
  set_crash_context(display, 0);
  totals.files++;
  json script;
  std::string error;
  if (!read_json(path, script, error)) {
    std::printf("FAIL %s  (%s)\n", display.c_str(), error.c_str());
    std::fflush(stdout);
    totals.failed++;
    totals.files_failed++;
    return;
  }
  const json& commands = script["commands"];
  auto counted = [](const json& c) { return c.value("type", "") != "register"; };

  if (opts.skip_simd && path.filename().string().starts_with("simd_")) {
    long n = std::count_if(commands.begin(), commands.end(), counted);
    totals.skipped += n;
    totals.simd_files_skipped++;
    totals.simd_commands_skipped += n;
    if (opts.verbose)
      std::printf("SKIP %s  (%ld skipped: simd files skipped until the SIMD issue)\n", display.c_str(), n);
    return;
  }

  known.mark_file_run(display);
  FileStats st;
  std::vector<std::string> shown;     // unexpected failures and passes
  std::vector<std::string> expected;  // expected failures (shown with -v)
  FileRunner runner(path, display, opts);
  if (!runner.init(error)) {
    std::printf("FAIL %s  (cannot set up the spectest module: %s)\n", display.c_str(), error.c_str());
    totals.failed++;
    totals.files_failed++;
    return;
  }
  for (const json& cmd : commands) {
    int line = cmd.value("line", 0);
    set_crash_context({}, line);
    Outcome o = runner.run(cmd);
    std::string where = "line " + std::to_string(line) + ": ";
    if (o.kind == Outcome::Kind::Uncounted) {
      if (!o.message.empty()) shown.push_back(where + o.message);  // a failed register
      continue;
    }
    KnownFailures::Entry* k = known.find(display, line);
    if (k) k->seen = true;
    switch (o.kind) {
      case Outcome::Kind::Skip:
        st.skipped++;
        break;
      case Outcome::Kind::Pass:
        st.passed++;
        if (k) {
          st.unexpected_passes++;
          shown.push_back(where + "unexpectedly passed \u2014 remove " + display + ":" +
                          std::to_string(line) + " from the known-failures list");
        }
        break;
      case Outcome::Kind::Fail:
        if (k) {
          st.expected_failures++;
          expected.push_back(where + "(expected failure) " + o.message);
        } else {
          st.failed++;
          shown.push_back(where + o.message);
        }
        break;
      case Outcome::Kind::Uncounted:
        break;
    }
  }
  set_crash_context({}, 0);
  runner.add_profile_totals(totals.instructions, totals.cpu_samples, totals.host_calls);

  bool bad = st.failed > 0 || st.unexpected_passes > 0 || (!shown.empty());
  std::string counts = std::to_string(st.passed) + " passed, ";
  if (bad) counts += std::to_string(st.failed) + " failed, ";
  counts += std::to_string(st.skipped) + " skipped";
  if (st.expected_failures) counts += ", " + std::to_string(st.expected_failures) + " expected failures";
  if (st.unexpected_passes) counts += ", " + std::to_string(st.unexpected_passes) + " unexpectedly passed";
  std::printf("%s %s  (%s)\n", bad ? "FAIL" : "PASS", display.c_str(), counts.c_str());
  size_t limit = opts.verbose ? shown.size() : std::min<size_t>(shown.size(), kShownFailures);
  for (size_t i = 0; i < limit; i++) std::printf("    %s\n", shown[i].c_str());
  if (limit < shown.size()) std::printf("    ... and %zu more (use -v)\n", shown.size() - limit);
  if (opts.verbose) {
    for (const auto& e : expected) std::printf("    %s\n", e.c_str());
    for (const auto& n : runner.notes()) std::printf("    note: %s\n", n.c_str());
  }
  std::fflush(stdout);

  totals.passed += st.passed;
  totals.failed += st.failed;
  totals.skipped += st.skipped;
  totals.expected_failures += st.expected_failures;
  totals.unexpected_passes += st.unexpected_passes;
  totals.phase_mismatches += runner.phase_mismatches();
  if (bad) totals.files_failed++;
}

void usage(FILE* out) {
  std::fprintf(out,
               "usage: wzvm-spectest [options] FILE.json|DIR...\n"
               "Run wast2json output against wzvm. A directory stands for its *.json files, sorted.\n"
               "  -v, --verbose            show every failure, expected failures and notes\n"
               "  --known-failures PATH    FILE.json:LINE entries that are expected to fail\n"
               "  --skip-simd              count the commands of simd_*.json files as skipped\n"
               "  --profile-cpu            run with the CPU profiler attached (10 kHz sampling)\n"
               "  --count-instructions     load modules with instruction counting, profiler attached\n"
               "  --lazy                   validate bodies at load, lower each on its first call\n"
               "  --enable-NAME            allow proposal NAME (wabt's name too):");
  for (const vm::FeatureInfo& f : vm::feature_table()) {
    std::fprintf(out, " %s", f.name);
    if (*f.alias) std::fprintf(out, " (%s)", f.alias);
    if (!f.implemented) std::fprintf(out, " [not implemented]");
  }
  std::fprintf(out,
               "\n  --enable-all             allow every implemented proposal\n"
               "  --disable-NAME           disallow proposal NAME; wasm 2.0 features (e.g.\n"
               "                           reference-types) are always on and their\n"
               "                           --disable flag is accepted with a warning\n");
}

// wabt's names of the wasm 2.0 features (wast2json --disable-NAME).
bool is_wasm2_feature(const std::string& name) {
  for (const char* f : {"mutable-globals", "saturating-float-to-int", "sign-extension", "simd", "multi-value",
                        "bulk-memory", "reference-types"})
    if (name == f) return true;
  return false;
}

int parse_args(int argc, char** argv, Options& opts) {
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "-v" || a == "--verbose") {
      opts.verbose = true;
    } else if (a == "--skip-simd") {
      opts.skip_simd = true;
    } else if (a == "--profile-cpu") {
      opts.profile_cpu = true;
    } else if (a == "--count-instructions") {
      opts.count_instructions = true;
    } else if (a == "--lazy") {
      opts.lazy = true;
    } else if (a == "--known-failures" || a.starts_with("--known-failures=")) {
      if (a.size() > std::strlen("--known-failures")) {
        opts.known_failures_path = a.substr(std::strlen("--known-failures="));
      } else if (i + 1 < argc) {
        opts.known_failures_path = argv[++i];
      } else {
        std::fprintf(stderr, "wzvm-spectest: --known-failures needs a PATH\n");
        return 2;
      }
    } else if (a == "--enable-all") {
      opts.features = vm::Features::all();
    } else if (a.starts_with("--enable-") || a.starts_with("--disable-")) {
      bool on = a.starts_with("--enable-");
      std::string name = a.substr(on ? std::strlen("--enable-") : std::strlen("--disable-"));
      const vm::FeatureInfo* f = vm::find_feature(name);
      if (f) {
        // A proposal wzvm does not implement yet still runs (and fails where
        // it must), so a folder's failures can be listed and counted.
        if (on && !f->implemented)
          std::fprintf(stderr, "wzvm-spectest: warning: proposal %s is not implemented yet\n", f->name);
        opts.features.set(f->id, on && f->implemented);
      } else if (!on && is_wasm2_feature(name)) {
        std::fprintf(stderr, "wzvm-spectest: warning: %s ignored: wasm 2.0 features are always on\n",
                     a.c_str());
      } else {
        std::fprintf(stderr, "wzvm-spectest: unknown proposal in %s\n", a.c_str());
        usage(stderr);
        return 2;
      }
    } else if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else if (a.starts_with("-") && a != "-") {
      std::fprintf(stderr, "wzvm-spectest: unknown option %s\n", a.c_str());
      usage(stderr);
      return 2;
    } else {
      opts.inputs.push_back(a);
    }
  }
  if (opts.inputs.empty()) {
    usage(stderr);
    return 2;
  }
  return -1;
}

}  // namespace
}  // namespace wzvm::spectest

int main(int argc, char** argv) {
  using namespace wzvm::spectest;
  Options opts;
  if (int rc = parse_args(argc, argv, opts); rc >= 0) return rc;

  KnownFailures known;
  if (!opts.known_failures_path.empty() && !load_known_failures(opts.known_failures_path, known)) return 2;

  std::vector<fs::path> files;
  for (const auto& in : opts.inputs) {
    std::error_code ec;
    if (fs::is_directory(in, ec)) {
      std::vector<fs::path> found;
      for (const auto& de : fs::directory_iterator(in, ec))
        if (de.path().extension() == ".json") found.push_back(de.path());
      std::sort(found.begin(), found.end());
      if (found.empty()) std::fprintf(stderr, "wzvm-spectest: warning: no *.json files in %s\n", in.c_str());
      files.insert(files.end(), found.begin(), found.end());
    } else {
      files.emplace_back(in);  // a missing file is reported as a failing file
    }
  }

  install_crash_handler();
  Totals totals;
  for (const auto& f : files) run_file(f, opts, known, totals);

  // Entries for files that ran but whose line holds no command: the list is stale.
  long stale = 0;
  for (const auto& e : known.entries) {
    if (e.file_run && !e.seen) {
      std::printf("known-failures entry %s:%d (list line %d) matches no command \u2014 remove or fix it\n",
                  e.file.c_str(), e.line, e.list_line);
      stale++;
    }
  }

  if (totals.simd_files_skipped)
    std::printf("%d simd files skipped until the SIMD issue (%ld commands, counted as skipped)\n",
                totals.simd_files_skipped, totals.simd_commands_skipped);
  if (opts.verbose && totals.phase_mismatches)
    std::printf("%ld assert_invalid/assert_malformed modules rejected in another phase than the spec's\n",
                totals.phase_mismatches);
  if (totals.unexpected_passes)
    std::printf("%ld unexpectedly passed \u2014 remove them from the known-failures list\n",
                totals.unexpected_passes);
  if (!opts.known_failures_path.empty() || totals.expected_failures)
    std::printf("%ld expected failures\n", totals.expected_failures);
  if (opts.profile_cpu || opts.count_instructions)
    std::printf("profiled: %llu instructions counted, %llu CPU samples, %llu host calls timed\n",
                static_cast<unsigned long long>(totals.instructions),
                static_cast<unsigned long long>(totals.cpu_samples),
                static_cast<unsigned long long>(totals.host_calls));
  std::printf("%ld passed, %ld failed, %ld skipped\n", totals.passed, totals.failed, totals.skipped);
  std::fflush(stdout);
  return (totals.failed > 0 || totals.unexpected_passes > 0 || stale > 0 || totals.files_failed > 0) ? 1 : 0;
}
