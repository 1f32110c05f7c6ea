// The `wzvm` command. Thin by design (docs/DESIGN: "the CLI is thin"): parse
// flags, load and instantiate the module, call one function, print results or
// one error line. Exit statuses (documented in README.md):
//   0 success, 1 wzvm error (file, module, link, arguments, export),
//   2 usage error, 134 trap (like a native abort), N = WASI proc_exit(N).

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/values.h"
#include "vm/module.h"
#include "vm/runtime.h"

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

bool read_file(const std::string& path, std::vector<uint8_t>& out, std::string& why) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    why = std::string("cannot open file: ") + std::strerror(errno);
    return false;
  }
  out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad()) {
    why = std::string("cannot read file: ") + std::strerror(errno);
    return false;
  }
  return true;
}

struct Options {
  std::string invoke;  // empty: run _start
  std::string file;
  std::vector<std::string> args;  // everything after the module path
};

int run(const Options& opt) {
  std::vector<uint8_t> bytes;
  std::string why;
  if (!read_file(opt.file, bytes, why)) return fail(opt.file, why);

  auto loaded = vm::load_module(std::move(bytes));
  if (!loaded) return fail(opt.file, loaded.error().to_string());
  std::shared_ptr<const vm::Module> module = loaded.value();

  // No host functions yet: WASI arrives in a later issue.
  if (!module->imports.empty()) {
    const vm::Import& imp = module->imports.front();
    std::string what = "unknown import " + imp.module + "." + imp.field;
    if (opt.invoke.empty() && imp.module.starts_with("wasi_"))
      what += " (WASI support is not built yet; use --invoke on a module without imports)";
    return fail(opt.file, what);
  }

  vm::Store store;
  auto inst = store.instantiate(module, {});
  if (!inst) {
    const vm::Error& e = inst.error();
    if (e.kind == vm::Error::Kind::Instantiate) {
      // A trap in segment initialisation or the start function.
      std::cerr << "wzvm: trap: " << e.message << "\n";
      return kExitTrap;
    }
    return fail(opt.file, e.to_string());
  }

  const std::string name = opt.invoke.empty() ? "_start" : opt.invoke;
  auto it = (*inst)->exports.find(name);
  if (it == (*inst)->exports.end()) {
    if (opt.invoke.empty())
      return fail(opt.file, "no _start export (WASI support is not built yet; use --invoke NAME to call an export)");
    return fail(opt.file, "export " + name + " not found");
  }
  if (it->second.kind != vm::ExternKind::Func)
    return fail(opt.file, "export " + name + " is a " + vm::extern_kind_name(it->second.kind) + ", not a function");
  vm::FuncInst* func = it->second.func;

  // Guest arguments are the function's parameters with --invoke; for _start
  // they will become WASI argv (ignored until WASI lands).
  std::vector<vm::Value> params;
  if (!opt.invoke.empty()) {
    const auto& types = func->type.params;
    if (opt.args.size() != types.size()) {
      return fail(opt.file, "function " + name + " " + func->type.to_string() + " takes " +
                                std::to_string(types.size()) + " argument" + (types.size() == 1 ? "" : "s") +
                                ", got " + std::to_string(opt.args.size()));
    }
    for (size_t i = 0; i < types.size(); ++i) {
      auto v = cli::parse_value(types[i], opt.args[i]);
      if (!v) {
        return fail(opt.file, "argument " + std::to_string(i + 1) + " of " + name + ": '" + opt.args[i] +
                                  "' is not a valid " + vm::valtype_name(types[i]));
      }
      params.push_back(*v);
    }
  } else if (!func->type.params.empty()) {
    return fail(opt.file, "_start must take no parameters, it has type " + func->type.to_string());
  }

  std::vector<vm::Value> results;
  vm::Trap trap = store.invoke(func, params, results);
  std::cout.flush();
  if (trap) return report_trap(trap);
  for (const vm::Value& r : results) std::cout << cli::format_value(r) << "\n";
  std::cout.flush();
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "wzvm: a WebAssembly interpreter with built-in profilers\n\n"
      "  wzvm [OPTIONS] MODULE.wasm [ARGS...]              run the module's _start\n"
      "  wzvm [OPTIONS] --invoke NAME MODULE.wasm [ARGS...] call export NAME, print its results\n",
      "wzvm"};
  app.footer(
      "Options come before the module; everything after it belongs to the guest\n"
      "(with --invoke, the function's arguments: i32/i64 decimal or 0x hex, f32/f64\n"
      "decimal, hex float, inf, nan, nan:0x...).\n"
      "Exit status: 0 ok, 1 error, 2 usage error, 134 trap.");
  // The module path and everything after it are left unparsed (remaining()).
  app.prefix_command();
  Options opt;
  app.add_option("--invoke", opt.invoke, "Call this exported function instead of _start and print its results")
      ->option_text("NAME");
  app.set_version_flag("--version", std::string("wzvm ") + WZVM_VERSION);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version arrive here with exit code 0.
    if (e.get_exit_code() == 0) return app.exit(e);
    std::cerr << "wzvm: usage error: " << e.what() << "\n"
              << "Run 'wzvm --help' for usage.\n";
    return 2;
  }
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
  opt.args.assign(rest.begin() + 1, rest.end());
  return run(opt);
}
