#pragma once
// Differential execution against independent engines (fuzz/README.md,
// "Against binaryen and V8").
//
// Binaryen (Debian's `binaryen`) is both the generator and the first oracle:
// `wasm-opt BYTES -ttf` turns any bytes into a valid module whose exports
// take no arguments and log values through `fuzzing-support.log-*` imports,
// and `wasm-opt M --fuzz-exec-before` runs every export in binaryen's own
// interpreter, printing each call, logged value, result and trap. wzvm runs
// the same module with the same imports and prints the same events; both
// texts are brought to one canonical form (numbers by value, traps by kind,
// not message) and compared line by line. V8 (node) is the second oracle,
// through fuzz/v8_exec.js.
//
// Everything here is shared by the libFuzzer target (fuzz_binaryen.cc), the
// campaign driver (binaryen_campaign.cc) and the replay of reduced
// divergences in tests/regress/binaryen/ (tests/regress_test.cc).

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_common.h"

namespace wzvm::fuzz::binaryen {

// The proposals both engines have (binaryen 108 has no multi-memory; its
// reference types need typed function references, which wzvm does not have).
// Without SIMD, V8 can run the module too: no v128 crosses into JS.
inline std::vector<std::string> feature_flags(bool simd = true) {
  std::vector<std::string> flags = {"--enable-sign-ext",        "--enable-threads",
                                    "--enable-mutable-globals", "--enable-nontrapping-float-to-int",
                                    "--enable-bulk-memory",     "--enable-exception-handling",
                                    "--enable-tail-call",       "--enable-multivalue",
                                    "--enable-memory64",        "--enable-extended-const"};
  if (simd) flags.push_back("--enable-simd");
  return flags;
}

// Where binaryen's tools are: $WZVM_BINARYEN_BIN, else the build's unpacked
// copy (WZVM_BINARYEN_BIN, scripts/fetch-binaryen.sh), else PATH. Binaryen
// is not installed for wzvm: clang-14 would run its wasm-opt on every wasm
// link it does at -O1 and above.
inline std::string binaryen_tool(const char* name) {
  if (const char* dir = std::getenv("WZVM_BINARYEN_BIN"); dir && *dir) return std::string(dir) + "/" + name;
#ifdef WZVM_BINARYEN_BIN
  std::string built = std::string(WZVM_BINARYEN_BIN) + "/" + name;
  if (access(built.c_str(), X_OK) == 0) return built;
#endif
  return name;
}

// ---------------------------------------------------------------------------
// Running the other engines: a child process with its output captured and a
// CPU-time limit (binaryen's interpreter has no budget of its own; the
// generated code bounds loops and recursion with a global, but only loosely).

struct Command {
  int status = -1;      // exit status, or 128 + signal
  std::string out;      // stdout and stderr together
  bool killed = false;  // by the CPU limit
};

inline Command run_command(const std::vector<std::string>& argv, int cpu_seconds) {
  Command r;
  int fds[2];
  if (pipe(fds) != 0) return r;
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return r;
  }
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    rlimit cpu{static_cast<rlim_t>(cpu_seconds), static_cast<rlim_t>(cpu_seconds)};
    setrlimit(RLIMIT_CPU, &cpu);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(fds[1]);
  char buf[65536];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (r.out.size() < (64u << 20)) r.out.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(st)) r.status = WEXITSTATUS(st);
  else if (WIFSIGNALED(st)) {
    r.status = 128 + WTERMSIG(st);
    r.killed = WTERMSIG(st) == SIGXCPU || WTERMSIG(st) == SIGKILL;
  }
  return r;
}

inline bool write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  return std::fclose(f) == 0 && ok;
}

inline std::vector<uint8_t> read_file(const std::string& path) {
  std::vector<uint8_t> out;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return out;
  uint8_t buf[65536];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.insert(out.end(), buf, buf + n);
  std::fclose(f);
  return out;
}

// ---------------------------------------------------------------------------
// The final state. Binaryen's output says nothing about memory, but the
// generator exports `hashMemory` (a hash of the memory's first bytes).
// Exporting it once more, last, makes every engine print a hash of the final
// memory.

inline void put_leb(std::vector<uint8_t>& out, uint64_t v) {
  do {
    uint8_t b = v & 0x7f;
    v >>= 7;
    out.push_back(b | (v ? 0x80 : 0));
  } while (v);
}

inline bool get_leb(const std::vector<uint8_t>& in, size_t& pos, size_t end, uint64_t& v) {
  v = 0;
  for (int shift = 0; pos < end && shift < 64; shift += 7) {
    uint8_t b = in[pos++];
    v |= uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

// The module with "final:hashMemory" exported last; unchanged when it has
// no hashMemory or cannot be parsed.
inline std::vector<uint8_t> with_final_exports(const std::vector<uint8_t>& in) {
  if (in.size() < 8) return in;
  size_t pos = 8;
  while (pos < in.size()) {
    size_t start = pos;
    uint8_t id = in[pos++];
    uint64_t size;
    if (!get_leb(in, pos, in.size(), size) || size > in.size() - pos) return in;
    size_t body = pos, end = pos + size;
    pos = end;
    if (id != 7) continue;
    size_t p = body;
    uint64_t count;
    if (!get_leb(in, p, end, count)) return in;
    size_t entries = p;
    std::map<std::string, uint64_t> funcs;
    for (uint64_t i = 0; i < count; ++i) {
      uint64_t len, index;
      if (!get_leb(in, p, end, len) || len > end - p) return in;
      std::string name(in.begin() + p, in.begin() + p + len);
      p += len;
      if (p >= end) return in;
      uint8_t kind = in[p++];
      if (!get_leb(in, p, end, index)) return in;
      if (kind == 0) funcs[name] = index;
    }
    if (!funcs.count("hashMemory")) return in;
    std::vector<uint8_t> payload;
    put_leb(payload, count + 1);
    payload.insert(payload.end(), in.begin() + entries, in.begin() + end);
    std::string exported = "final:hashMemory";
    put_leb(payload, exported.size());
    payload.insert(payload.end(), exported.begin(), exported.end());
    payload.push_back(0);
    put_leb(payload, funcs["hashMemory"]);
    std::vector<uint8_t> out(in.begin(), in.begin() + start);
    out.push_back(7);
    put_leb(out, payload.size());
    out.insert(out.end(), payload.begin(), payload.end());
    out.insert(out.end(), in.begin() + end, in.end());
    return out;
  }
  return in;
}

// ---------------------------------------------------------------------------
// The canonical form. One line per event:
//   call NAME                 an export is called (arguments: zeros)
//   log TOKENS                a fuzzing-support.log-* import was called
//   result NAME => V, V...    what the call returned
//   trap KIND                 how it trapped (kinds below, not messages)
// Numbers are written by value: an integer (|v| <= 2^53) in decimal, "-0",
// any other float as %.17g, a NaN as its sign and payload ("-nan:0x7fa825"),
// or just "nan" when payloads are not compared (V8: a NaN crossing into JS
// loses its payload). v128 as four i32 lanes in hex, references as "ref" or
// "null" (engines name functions differently).

inline std::string number_token(std::string_view tok, bool nan_payloads) {
  std::string t(tok);
  if (t == "-0") return t;
  std::string_view body = tok;
  bool neg = !body.empty() && body[0] == '-';
  if (neg) body.remove_prefix(1);
  if (body.substr(0, 3) == "nan") return nan_payloads ? t : "nan";
  if (body == "inf" || body == "infinity" || body == "Infinity") return neg ? "-inf" : "inf";
  char* end = nullptr;
  double d = std::strtod(t.c_str(), &end);
  if (end == t.c_str() || *end) return "?" + t;  // not a number: kept, so it differs
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  if (d == 0 && std::signbit(d)) return "-0";
  if (d == std::trunc(d) && std::fabs(d) <= 9007199254740992.0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(d));
    return buf;
  }
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", d);
  return buf;
}

// Integers are compared as integers (an i64 above 2^53 is not a double).
inline std::string integer_token(std::string_view tok) {
  std::string t(tok);
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(t.c_str(), &end, 10);
  if (end == t.c_str() || *end || errno) {
    errno = 0;
    unsigned long long u = std::strtoull(t.c_str(), &end, 10);
    if (end == t.c_str() || *end || errno) return "?" + t;
    return std::to_string(static_cast<long long>(u));
  }
  return std::to_string(v);
}

inline std::string float_text(double d, uint64_t bits, int mantissa_bits) {
  if (std::isnan(d)) {
    uint64_t payload = bits & ((uint64_t(1) << mantissa_bits) - 1);
    bool neg = bits >> (mantissa_bits == 23 ? 31 : 63);
    char buf[40];
    std::snprintf(buf, sizeof buf, "%snan:0x%llx", neg ? "-" : "", static_cast<unsigned long long>(payload));
    return buf;
  }
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", d);
  return buf;
}

inline std::string v128_text(const uint8_t* b) {
  std::string s = "i32x4";
  for (int lane = 0; lane < 4; ++lane) {
    uint32_t v;
    std::memcpy(&v, b + 4 * lane, 4);
    char buf[16];
    std::snprintf(buf, sizeof buf, " 0x%08x", v);
    s += buf;
  }
  return s;
}

// A value as the engines print it, in canonical form.
inline std::string value_text(const vm::Value& v, bool nan_payloads) {
  switch (v.type) {
    case vm::ValType::I32:
      return std::to_string(static_cast<int32_t>(v.i32));
    case vm::ValType::I64:
      return std::to_string(static_cast<int64_t>(v.i64));
    case vm::ValType::F32:
      return number_token(float_text(v.f32, v.i32, 23), nan_payloads);
    case vm::ValType::F64:
      return number_token(float_text(v.f64, v.i64, 52), nan_payloads);
    case vm::ValType::V128:
      return v128_text(v.v128);
    default:
      return v.ref ? "ref" : "null";
  }
}

// A value printed by another engine, read as `type` (result types come from
// the module; binaryen prints an f64 254.0 as "254").
inline std::string typed_token(std::string_view tok, vm::ValType type, bool nan_payloads) {
  switch (type) {
    case vm::ValType::I32:
    case vm::ValType::I64:
      return integer_token(tok);
    case vm::ValType::F32:
    case vm::ValType::F64:
      return number_token(tok, nan_payloads);
    case vm::ValType::V128: {
      // "i32x4 0x00013354 0x0001ffff ...": already canonical, lanes padded.
      std::string s = "i32x4";
      size_t p = tok.find(' ');
      while (p != std::string_view::npos) {
        size_t q = tok.find(' ', p + 1);
        std::string lane(tok.substr(p + 1, q == std::string_view::npos ? q : q - p - 1));
        char buf[16];
        std::snprintf(buf, sizeof buf, " 0x%08lx", std::strtoul(lane.c_str(), nullptr, 16));
        s += buf;
        p = q;
      }
      return s;
    }
    default:
      return tok.find("null") != std::string_view::npos ? "null" : "ref";
  }
}

// Trap kinds. Binaryen's and V8's messages differ from the spec's; each maps
// to the spec trap it is. Unknown messages stay visible ("other:...").
enum class Kind { Exact, Coarse };

inline std::string trap_kind(vm::TrapCode c) {
  switch (c) {
    case vm::TrapCode::Unreachable:
      return "unreachable";
    case vm::TrapCode::MemoryOutOfBounds:
      return "memory";
    case vm::TrapCode::TableOutOfBounds:
      return "table";
    case vm::TrapCode::UndefinedElement:
      return "undefined-element";
    case vm::TrapCode::UninitializedElement:
      return "uninitialized-element";
    case vm::TrapCode::IndirectCallMismatch:
      return "indirect-mismatch";
    case vm::TrapCode::IntegerDivideByZero:
      return "divide-by-zero";
    case vm::TrapCode::IntegerOverflow:
      return "integer-overflow";
    case vm::TrapCode::InvalidConversion:
      return "invalid-conversion";
    case vm::TrapCode::StackExhausted:
      return "exhausted";
    case vm::TrapCode::NullReference:
      return "null";
    case vm::TrapCode::UnalignedAtomic:
      return "unaligned-atomic";
    case vm::TrapCode::ExpectedSharedMemory:
      return "expected-shared";
    case vm::TrapCode::UncaughtException:
      return "exception";
    default:
      return "other:" + std::string(vm::trap_message(c));
  }
}

inline std::string binaryen_trap_kind(std::string_view m) {
  auto has = [&](std::string_view s) { return m.find(s) != std::string_view::npos; };
  if (has("unreachable")) return "unreachable";
  if (has("unaligned atomic")) return "unaligned-atomic";
  if (has("final > memory") || has("out of bounds memory access") || has("out of bounds segment access") ||
      has("memory.grow") || has("highest > memory"))
    return "memory";
  if (has("of nan")) return "invalid-conversion";
  if (has("Float overflow") || has("div_s overflow") || has("rem_s overflow") || has("overflow in trunc")) {
    return "integer-overflow";
  }
  if (has(" by 0")) return "divide-by-zero";
  if (has("callTable overflow")) return "undefined-element";
  if (has("uninitialized table element") || has("callIndirect: uninitialized"))
    return "uninitialized-element";
  if (has("function types don't match") || has("callIndirect: bad type")) return "indirect-mismatch";
  if (has("out of bounds table access") || has("table oob") || has("table.") ||
      has("out of bounds segment")) {
    return "table";
  }
  if (has("null ref") || has("null")) return "null";
  if (has("stack limit")) return "exhausted";
  return "other:" + std::string(m);
}

// V8 says "table index is out of bounds" both for call_indirect's index and
// table.get/set, "null function or function signature mismatch" for both of
// the others, and "float unrepresentable in integer range" both for a NaN
// and for an out-of-range float: its kinds are compared at that grain.
inline std::string coarse_kind(const std::string& k) {
  if (k == "undefined-element") return "table";
  if (k == "uninitialized-element" || k == "indirect-mismatch") return "indirect";
  if (k == "integer-overflow" || k == "invalid-conversion") return "integer";
  return k;
}

// ---------------------------------------------------------------------------
// wzvm's run, printing the events above.

using wzvm::fuzz::Mode;

struct Run {
  bool complete = false;  // false: the budget ran out, or the imports could not be made
  std::string text;
};

inline Run run_wzvm(const std::vector<uint8_t>& bytes, Mode mode, uint64_t budget = 50'000'000) {
  Run run;
  auto loaded = vm::load_module(bytes, load_options(mode));
  if (!loaded) {
    run.complete = true;
    run.text = "load error: " + loaded.error().to_string() + "\n";
    return run;
  }
  const vm::Module& m = **loaded;
  vm::StoreLimits limits = fuzz_limits();
  limits.max_memory_pages = 1024;  // the generator's memories are up to 17 pages; grow to 64 MiB
  limits.max_call_depth = 1000;
  vm::Store store(limits);
  std::unique_ptr<Budget> b;
  if (mode != Mode::Plain) b = std::make_unique<Budget>(store, budget, mode == Mode::Counted);
  std::string& out = run.text;
  std::vector<vm::Extern> imports;
  for (const vm::Import& imp : m.imports) {
    if (imp.kind != vm::ExternKind::Func || imp.module != "fuzzing-support" ||
        imp.func_type >= m.types.size())
      return run;
    const vm::FuncType& t = m.types[imp.func_type];
    vm::Extern e;
    e.kind = vm::ExternKind::Func;
    e.func = store.add_host_func(
        imp.module, imp.field, t,
        [&out](vm::HostContext&, std::span<const vm::Value> args, std::span<vm::Value> results) {
          out += "log";
          for (const vm::Value& a : args) {
            if (a.type == vm::ValType::I64) {
              // Binaryen logs an i64 as its two i32 halves.
              out += " " + std::to_string(static_cast<int32_t>(a.i64));
              out += " " + std::to_string(static_cast<int32_t>(a.i64 >> 32));
            } else {
              out += " " + value_text(a, true);
            }
          }
          out += "\n";
          for (vm::Value& r : results) r = vm::Value::zero(r.type);
          return vm::Trap{};
        });
    imports.push_back(e);
  }
  try {
    auto inst = store.instantiate(*loaded, imports);
    if (!inst) {
      out += "instantiate: " + inst.error().to_string() + "\n";
      run.complete = true;
      return run;
    }
    // Binaryen re-arms the generated code's loop and recursion budget (a
    // global) before every export it calls, without printing that call.
    vm::FuncInst* rearm = nullptr;
    for (const vm::Export& e : m.exports)
      if (e.kind == vm::ExternKind::Func && e.name == "hangLimitInitializer") rearm = (*inst)->funcs[e.index];
    for (const vm::Export& e : m.exports) {
      if (e.kind != vm::ExternKind::Func) continue;
      vm::FuncInst* f = (*inst)->funcs[e.index];
      out += "call " + e.name + "\n";
      std::vector<vm::Value> results;
      if (rearm && store.invoke(rearm, {}, results)) {
        out += "trap in hangLimitInitializer\n";
        continue;
      }
      vm::Trap t = store.invoke(f, zero_args(f->type), results);
      if (t) {
        out += "trap " + trap_kind(t.code) + "\n";
        continue;
      }
      if (results.empty()) continue;
      out += "result " + e.name + " =>";
      for (size_t i = 0; i < results.size(); ++i) out += (i ? ", " : " ") + value_text(results[i], true);
      out += "\n";
    }
  } catch (const BudgetExceeded&) {
    return run;
  }
  run.complete = true;
  return run;
}

// ---------------------------------------------------------------------------
// Reading the other engines' output into the canonical form.

inline std::vector<std::string_view> split_top(std::string_view s) {
  std::vector<std::string_view> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '(') ++depth;
    else if (s[i] == ')') --depth;
    else if (depth == 0 && s[i] == ',') {
      parts.push_back(s.substr(start, i - start));
      start = i + 2;  // ", "
    }
  }
  parts.push_back(s.substr(start));
  return parts;
}

inline std::map<std::string, std::vector<vm::ValType>> export_results(const vm::Module& m) {
  std::map<std::string, std::vector<vm::ValType>> r;
  for (const vm::Export& e : m.exports) {
    if (e.kind != vm::ExternKind::Func) continue;
    if (e.index < m.func_type_indices.size()) r[e.name] = m.func_type(e.index).results;
  }
  return r;
}

inline std::string canonical_result(std::string_view name, std::string_view values,
                                    const std::map<std::string, std::vector<vm::ValType>>& results,
                                    bool nan_payloads) {
  auto it = results.find(std::string(name));
  if (it == results.end()) return "result " + std::string(name) + " => ?" + std::string(values) + "\n";
  const std::vector<vm::ValType>& types = it->second;
  if (types.size() > 1 && values.size() >= 2 && values.front() == '(' && values.back() == ')')
    values = values.substr(1, values.size() - 2);
  std::vector<std::string_view> toks =
      types.size() > 1 ? split_top(values) : std::vector<std::string_view>{values};
  std::string out = "result " + std::string(name) + " =>";
  for (size_t i = 0; i < toks.size(); ++i)
    out += (i ? ", " : " ") +
           (i < types.size() ? typed_token(toks[i], types[i], nan_payloads) : "?" + std::string(toks[i]));
  return out + "\n";
}

inline std::string canonical_log(std::string_view tokens, bool nan_payloads) {
  std::string out = "log";
  if (tokens.substr(0, 5) == "i32x4") return out + " " + typed_token(tokens, vm::ValType::V128, true) + "\n";
  size_t p = 0;
  while (p <= tokens.size()) {
    size_t q = tokens.find(' ', p);
    if (q == std::string_view::npos) q = tokens.size();
    if (q > p) out += " " + number_token(tokens.substr(p, q - p), nan_payloads);
    p = q + 1;
  }
  return out + "\n";
}

// The lines of a text (without their '\n').
inline std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> v;
  size_t p = 0;
  while (p < s.size()) {
    size_t q = s.find('\n', p);
    if (q == std::string::npos) q = s.size();
    v.push_back(s.substr(p, q - p));
    p = q + 1;
  }
  return v;
}

// Binaryen's --fuzz-exec-before output, canonical. `host_limit` is set when
// binaryen gave up ("[host limit ...]"): what follows is not comparable.
inline std::string canonical_binaryen(std::string_view text, const vm::Module& m, bool* host_limit) {
  auto results = export_results(m);
  std::string out;
  *host_limit = false;
  for (const std::string& l : lines_of(std::string(text))) {
    std::string_view line = l;
    auto starts = [&](std::string_view s) { return line.substr(0, s.size()) == s; };
    if (starts("[fuzz-exec] calling ")) {
      out += "call " + std::string(line.substr(20)) + "\n";
    } else if (starts("[LoggingExternalInterface logging ")) {
      std::string_view v = line.substr(34);
      if (!v.empty() && v.back() == ']') v.remove_suffix(1);
      out += canonical_log(v, true);
    } else if (starts("[fuzz-exec] note result: ")) {
      std::string_view rest = line.substr(25);
      size_t arrow = rest.find(" => ");
      if (arrow == std::string_view::npos) continue;
      out += canonical_result(rest.substr(0, arrow), rest.substr(arrow + 4), results, true);
    } else if (starts("[trap ")) {
      out += "trap " + binaryen_trap_kind(line.substr(6)) + "\n";
    } else if (starts("[exception thrown")) {
      out += "trap exception\n";
    } else if (starts("[host limit")) {
      *host_limit = true;
      out += "host limit\n";
    }
  }
  return out;
}

// V8's output through fuzz/v8_exec.js: lines "call NAME", "log ...",
// "result NAME => v, v" and "trap KIND" (the script maps V8's messages).
inline std::string canonical_v8(std::string_view text, const vm::Module& m) {
  auto results = export_results(m);
  std::string out;
  for (const std::string& l : lines_of(std::string(text))) {
    std::string_view line = l;
    if (line.substr(0, 4) == "log ") {
      out += canonical_log(line.substr(4), false);
    } else if (line.substr(0, 7) == "result ") {
      std::string_view rest = line.substr(7);
      size_t arrow = rest.find(" => ");
      if (arrow == std::string_view::npos) continue;
      out += canonical_result(rest.substr(0, arrow), rest.substr(arrow + 4), results, false);
    } else if (!line.empty()) {
      out += std::string(line) + "\n";
    }
  }
  return out;
}

// wzvm's canonical text as V8 can see it: NaN payloads dropped, trap kinds
// at V8's grain.
inline std::string relaxed(const std::string& canonical) {
  std::string out;
  size_t p = 0;
  while (p < canonical.size()) {
    size_t q = canonical.find('\n', p);
    std::string line = canonical.substr(p, q - p);
    p = q + 1;
    if (line.rfind("trap ", 0) == 0) {
      out += "trap " + coarse_kind(line.substr(5)) + "\n";
      continue;
    }
    // -nan:0x... and nan:0x... -> nan (tokens end at ' ' or ',').
    for (size_t n; (n = line.find("nan:0x")) != std::string::npos;) {
      size_t start = (n > 0 && line[n - 1] == '-') ? n - 1 : n;
      size_t end = n + 6;
      while (end < line.size() && std::isxdigit(static_cast<unsigned char>(line[end]))) ++end;
      line.replace(start, end - start, "nan");
    }
    out += line + "\n";
  }
  return out;
}

// ---------------------------------------------------------------------------
// Comparison. A call that exhausted the stack in one engine and not in the
// other is not a divergence (their depth limits differ), nor is anything
// after it; so both texts are cut at the first call where either says so,
// or where binaryen hit a host limit.

// Index of the "call" line that starts the call containing line i.
inline size_t call_start(const std::vector<std::string>& v, size_t i) {
  while (i > 0 && v[i].rfind("call ", 0) != 0) --i;
  return i;
}

struct Difference {
  bool equal = true;
  std::string wzvm_line, other_line;  // the first lines that differ ("<end>" past the end)
  std::string text;                   // what differed, for a report
};

inline Difference compare(const std::string& wzvm_text, const std::string& other_text, const char* other) {
  std::vector<std::string> a = lines_of(wzvm_text), b = lines_of(other_text);
  // The n-th call of each side: cut both at the first call that either
  // ended in exhaustion (or a host limit).
  auto cut_calls = [](const std::vector<std::string>& v) -> long {
    long calls = -1;
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i].rfind("call ", 0) == 0) ++calls;
      if (v[i] == "trap exhausted" || v[i] == "host limit") return calls;
    }
    return -1;
  };
  long ca = cut_calls(a), cb = cut_calls(b);
  long cut = ca < 0 ? cb : (cb < 0 ? ca : std::min(ca, cb));
  auto prefix = [](const std::vector<std::string>& v, long calls) {
    if (calls < 0) return v;
    long seen = -1;
    for (size_t i = 0; i < v.size(); ++i)
      if (v[i].rfind("call ", 0) == 0 && ++seen == calls)
        return std::vector<std::string>(v.begin(), v.begin() + i);
    return v;
  };
  a = prefix(a, cut);
  b = prefix(b, cut);
  Difference d;
  if (a == b) return d;
  d.equal = false;
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  d.wzvm_line = i < a.size() ? a[i] : "<end>";
  d.other_line = i < b.size() ? b[i] : "<end>";
  d.text = "wzvm and " + std::string(other) + " differ at line " + std::to_string(i + 1) +
           " (call from line " +
           std::to_string(call_start(a, std::min(i, a.empty() ? 0 : a.size() - 1)) + 1) + "):\n";
  d.text += "  wzvm:  " + d.wzvm_line + "\n  " + std::string(other) + ": " + d.other_line + "\n";
  return d;
}

// Two values that differ only where both are NaNs. The spec lets an
// arithmetic operation return a NaN of either sign and, from NaN inputs, any
// payload; engines differ (x86 gives 0xffc00000 for 0/0 and keeps an
// input's payload, binaryen's interpreter makes positive canonical NaNs).
// Such a NaN can surface through a v128 or an f64 made of f32 lanes, or as
// integer bits after a reinterpret, so values are compared as bits: as one
// f64 or f32, or as f32 lanes of a 64-bit value, or f64/f32 lanes of a v128.
inline bool nan_bits(uint64_t v, int width) {
  if (width == 64) return ((v >> 52) & 0x7ff) == 0x7ff && (v & ((uint64_t(1) << 52) - 1));
  return ((v >> 23) & 0xff) == 0xff && (v & 0x7fffff);
}

inline bool same_or_nans(uint64_t a, uint64_t b, int width) {
  if (a == b || (nan_bits(a, width) && nan_bits(b, width))) return true;
  if (width != 64) return false;
  for (int lane = 0; lane < 2; ++lane) {
    uint32_t x = static_cast<uint32_t>(a >> (32 * lane)), y = static_cast<uint32_t>(b >> (32 * lane));
    if (x != y && !(nan_bits(x, 32) && nan_bits(y, 32))) return false;
  }
  return true;
}

struct Bits {
  uint64_t v;
  int width;
};

// The bit patterns a printed number can stand for: a decimal may be an f64
// or (if exact) an f32, an integer an i32 or an i64, a NaN either width its
// payload fits.
inline std::vector<Bits> bit_readings(const std::string& t) {
  std::vector<Bits> r;
  bool neg = !t.empty() && t[0] == '-';
  std::string body = neg ? t.substr(1) : t;
  if (body.rfind("nan:0x", 0) == 0) {
    uint64_t payload = std::strtoull(body.c_str() + 6, nullptr, 16);
    r.push_back({(neg ? uint64_t(1) << 63 : 0) | (uint64_t(0x7ff) << 52) | payload, 64});
    if (payload < (1u << 23)) r.push_back({(neg ? 0x80000000u : 0) | 0x7f800000u | payload, 32});
    return r;
  }
  char* end = nullptr;
  errno = 0;
  long long i = std::strtoll(t.c_str(), &end, 10);
  if (end != t.c_str() && !*end && !errno && t != "-0") {
    r.push_back({static_cast<uint64_t>(i), 64});
    if (i >= INT32_MIN && i <= INT32_MAX) r.push_back({static_cast<uint32_t>(i), 32});
  }
  double d = std::strtod(t.c_str(), &end);
  if (end != t.c_str() && !*end) {
    uint64_t b64;
    std::memcpy(&b64, &d, 8);
    r.push_back({b64, 64});
    float f = static_cast<float>(d);
    if (static_cast<double>(f) == d || std::isnan(d)) {
      uint32_t b32;
      std::memcpy(&b32, &f, 4);
      r.push_back({b32, 32});
    }
  }
  return r;
}

inline bool same_but_nans(const std::string& x, const std::string& y) {
  if (x == y) return true;
  if (x.rfind("i32x4", 0) == 0 && y.rfind("i32x4", 0) == 0) {
    uint32_t a[4], b[4];
    if (std::sscanf(x.c_str(), "i32x4 %x %x %x %x", &a[0], &a[1], &a[2], &a[3]) != 4 ||
        std::sscanf(y.c_str(), "i32x4 %x %x %x %x", &b[0], &b[1], &b[2], &b[3]) != 4)
      return false;
    bool f64 = true;
    for (int l = 0; l < 2; ++l)
      f64 = f64 && same_or_nans(a[2 * l] | uint64_t(a[2 * l + 1]) << 32,
                                b[2 * l] | uint64_t(b[2 * l + 1]) << 32, 64);
    return f64;  // same_or_nans at 64 bits also tries the f32 lanes
  }
  for (const Bits& p : bit_readings(x))
    for (const Bits& q : bit_readings(y))
      if (p.width == q.width && same_or_nans(p.v, q.v, p.width)) return true;
  return false;
}

// Lines "log a b" / "result f => a, b" that differ only in NaN values.
inline bool nan_only_difference(const std::string& x, const std::string& y) {
  auto tokens = [](const std::string& line) {
    std::vector<std::string> t;
    size_t arrow = line.find(" => ");
    std::string head = arrow == std::string::npos ? line.substr(0, 4) : line.substr(0, arrow + 4);
    std::string rest = line.substr(head.size());
    t.push_back(head);
    // Results are separated by ", "; a log's numbers by spaces (no v128 there
    // but one, alone).
    std::string sep = arrow == std::string::npos && rest.rfind("i32x4", 0) != 0 ? " " : ", ";
    size_t p = 0;
    while (p <= rest.size()) {
      size_t q = rest.find(sep, p);
      if (q == std::string::npos) q = rest.size();
      t.push_back(rest.substr(p, q - p));
      p = q + sep.size();
    }
    // A logged i64 is printed as two i32 halves: one 64-bit value again.
    char* e1 = nullptr;
    char* e2 = nullptr;
    if (arrow == std::string::npos && t.size() == 3) {
      long lo = std::strtol(t[1].c_str(), &e1, 10), hi = std::strtol(t[2].c_str(), &e2, 10);
      if (!*e1 && !*e2 && !t[1].empty() && !t[2].empty())
        t = {head,
             std::to_string(static_cast<int64_t>(uint64_t(uint32_t(lo)) | uint64_t(uint32_t(hi)) << 32))};
    }
    return t;
  };
  if (x.rfind("log ", 0) != 0 && x.rfind("result ", 0) != 0) return false;
  std::vector<std::string> a = tokens(x), b = tokens(y);
  if (a.size() != b.size() || a[0] != b[0]) return false;
  for (size_t i = 1; i < a.size(); ++i)
    if (!same_but_nans(a[i], b[i])) return false;
  return true;
}

// Differences that are the other engine's, each with the reason (fuzz/README.md).
inline const char* known_difference(const Difference& d) {
  // An atomic access both misaligned and out of bounds: the threads
  // proposal checks alignment first (its reference interpreter, wasmtime,
  // wzvm); binaryen's interpreter checks bounds first.
  if (d.wzvm_line == "trap unaligned-atomic" && d.other_line == "trap memory")
    return "misaligned and out of bounds: binaryen checks bounds first";
  return nullptr;
}

// ---------------------------------------------------------------------------
// NaN-free variants. Binaryen's --denan replaces every f32/f64 value that is
// a NaN by 0, but binaryen 108 leaves v128 alone. The same is done here for
// SIMD float arithmetic on binaryen's text: each such expression is wrapped
// in a call that zeroes its NaN lanes (v128.bitselect with a lane-wise
// self-equality mask).

inline const std::vector<std::string>& simd_nan_ops() {
  static const std::vector<std::string> ops = {"add",
                                               "sub",
                                               "mul",
                                               "div",
                                               "min",
                                               "max",
                                               "pmin",
                                               "pmax",
                                               "sqrt",
                                               "ceil",
                                               "floor",
                                               "trunc",
                                               "nearest",
                                               "demote_f64x2_zero",
                                               "promote_low_f32x4"};
  return ops;
}

inline std::string denan_simd_text(const std::string& wat, bool* changed) {
  std::string out;
  out.reserve(wat.size() * 2);
  std::vector<std::string> closers;  // per open paren: text to add at its close
  *changed = false;
  for (size_t i = 0; i < wat.size(); ++i) {
    char ch = wat[i];
    if (ch == '"') {  // strings (data segments, names) pass through whole
      size_t j = i + 1;
      while (j < wat.size() && wat[j] != '"') j += wat[j] == '\\' ? 2 : 1;
      out.append(wat, i, j - i + 1);
      i = j;
      continue;
    }
    if (ch == '(') {
      std::string closer;
      for (const char* shape : {"f32x4.", "f64x2."}) {
        if (wat.compare(i + 1, 6, shape) != 0) continue;
        size_t end = wat.find_first_of(" \n)", i + 7);
        std::string op = wat.substr(i + 7, end - (i + 7));
        for (const std::string& o : simd_nan_ops())
          if (op == o) {
            // demote produces f32 lanes, promote f64 lanes.
            bool f64 = op == "promote_low_f32x4" || (shape[1] == '6' && op != "demote_f64x2_zero");
            out += f64 ? "(call $wzvm_denan_f64x2 " : "(call $wzvm_denan_f32x4 ";
            closer = ")";
            *changed = true;
          }
      }
      closers.push_back(closer);
      out += ch;
      continue;
    }
    if (ch == ')' && !closers.empty()) {
      out += ch;
      out += closers.back();
      closers.pop_back();
      continue;
    }
    out += ch;
  }
  if (!*changed) return wat;
  size_t last = out.rfind(')');
  if (last == std::string::npos) return wat;
  out.insert(last,
             " (func $wzvm_denan_f32x4 (param $v v128) (result v128)\n"
             "  (v128.bitselect (local.get $v) (v128.const i32x4 0 0 0 0) (f32x4.eq (local.get $v) "
             "(local.get $v))))\n"
             " (func $wzvm_denan_f64x2 (param $v v128) (result v128)\n"
             "  (v128.bitselect (local.get $v) (v128.const i32x4 0 0 0 0) (f64x2.eq (local.get $v) "
             "(local.get $v))))\n");
  return out;
}

// The module with no NaN anywhere: binaryen's --denan, then the SIMD
// rewrite above. Empty if a tool failed.
inline std::vector<uint8_t> denan_module(const std::string& mod, const std::string& dir) {
  std::string scalar = dir + "/denan.wasm", wat = dir + "/denan.wat", simd = dir + "/denan-simd.wasm";
  std::vector<std::string> dn = {binaryen_tool("wasm-opt"), mod, "--denan", "-o", scalar};
  std::vector<std::string> dis = {binaryen_tool("wasm-dis"), scalar, "-o", wat};
  for (const std::string& f : feature_flags()) {
    dn.push_back(f);
    dis.push_back(f);
  }
  if (run_command(dn, 20).status != 0 || run_command(dis, 20).status != 0) return {};
  std::vector<uint8_t> text = read_file(wat);
  bool changed = false;
  std::string rewritten = denan_simd_text(std::string(text.begin(), text.end()), &changed);
  if (!changed) return read_file(scalar);
  write_file(wat, std::vector<uint8_t>(rewritten.begin(), rewritten.end()));
  std::vector<std::string> as = {binaryen_tool("wasm-as"), wat, "-o", simd};
  for (const std::string& f : feature_flags()) as.push_back(f);
  if (run_command(as, 20).status != 0) return {};
  return read_file(simd);
}

// ---------------------------------------------------------------------------
// One generated module through wzvm (three ways) and binaryen.

struct Outcome {
  enum Status { Agree, Skipped, NanOnly, Known, Diverged } status = Skipped;
  std::string why;              // for Skipped, Known and Diverged
  std::vector<uint8_t> module;  // the module that ran (final exports added)
  std::string wzvm;             // wzvm's canonical text (plain loop)
  std::string binaryen;         // binaryen's, canonical
};

// A module (binaryen's, or one being reduced) through wzvm and binaryen.
// `dir` is a scratch directory of the caller's.
inline Outcome check_module(std::vector<uint8_t> module, const std::string& dir) {
  const std::vector<std::string> features = feature_flags();
  Outcome o;
  o.module = std::move(module);
  std::string mod = dir + "/m.wasm";
  if (!write_file(mod, o.module)) {
    o.why = "cannot write " + mod;
    return o;
  }
  auto loaded = vm::load_module(o.module);
  if (!loaded) {
    o.status = Outcome::Diverged;
    o.why = "binaryen's module does not load in wzvm: " + loaded.error().to_string();
    return o;
  }
  Run s = run_wzvm(o.module, Mode::Sampled);
  if (!s.complete) {
    o.why = "wzvm's budget ran out";
    return o;
  }
  Run p = run_wzvm(o.module, Mode::Plain), c = run_wzvm(o.module, Mode::Counted);
  o.wzvm = p.text;
  if (s.text != p.text || c.text != p.text || !c.complete) {
    o.status = Outcome::Diverged;
    o.why = "profiling changed the outcome\n" + compare(s.text, p.text, "plain").text +
            compare(c.text, p.text, "plain").text;
    return o;
  }
  std::vector<std::string> exec = {binaryen_tool("wasm-opt"), mod, "--fuzz-exec-before", "-q"};
  for (const std::string& f : features) exec.push_back(f);
  Command e = run_command(exec, 20);
  if (e.killed || e.status != 0) {
    o.why = e.killed ? "binaryen's interpreter ran out of time" : "binaryen's interpreter failed";
    return o;
  }
  bool host_limit = false;
  o.binaryen = canonical_binaryen(e.out, **loaded, &host_limit);
  Difference d = compare(o.wzvm, o.binaryen, "binaryen");
  if (d.equal) {
    o.status = Outcome::Agree;
    return o;
  }
  if (const char* why = known_difference(d)) {
    o.status = Outcome::Known;
    o.why = why;
    return o;
  }
  if (nan_only_difference(d.wzvm_line, d.other_line)) {
    o.status = Outcome::NanOnly;
    return o;
  }
  // A NaN that became bits (reinterpret, a store then a load) differs later
  // and elsewhere. The same module with every NaN replaced by 0
  // (denan_module) tells a NaN difference from a real one.
  std::vector<uint8_t> dm = denan_module(mod, dir);
  std::string dpath = dir + "/denan-final.wasm";
  if (!dm.empty() && write_file(dpath, dm)) {
    auto dl = vm::load_module(dm);
    Run dp = run_wzvm(dm, Mode::Sampled);
    std::vector<std::string> dexec = {binaryen_tool("wasm-opt"), dpath, "--fuzz-exec-before", "-q"};
    for (const std::string& f : features) dexec.push_back(f);
    Command de = run_command(dexec, 20);
    if (dl && dp.complete && de.status == 0) {
      // Without NaNs they agree, or differ only where binaryen is known to.
      Difference dd = compare(dp.text, canonical_binaryen(de.out, **dl, &host_limit), "binaryen");
      if (dd.equal || known_difference(dd)) {
        o.status = Outcome::NanOnly;
        return o;
      }
    }
  }
  o.status = Outcome::Diverged;
  o.why = d.text;
  return o;
}

// The bytes as binaryen's generator input (`wasm-opt -ttf`), then the module
// it makes, with final:hashMemory exported, through check_module.
inline Outcome check_generated(const uint8_t* data, size_t size, const std::string& dir, bool simd = true) {
  Outcome o;
  std::string seed = dir + "/seed.dat", raw = dir + "/raw.wasm";
  if (!write_file(seed, std::vector<uint8_t>(data, data + size))) {
    o.why = "cannot write " + seed;
    return o;
  }
  std::vector<std::string> gen = {binaryen_tool("wasm-opt"), seed, "-ttf", "-o", raw};
  for (const std::string& f : feature_flags(simd)) gen.push_back(f);
  Command g = run_command(gen, 20);
  if (g.status != 0) {
    o.why = "generator failed: " + g.out.substr(0, 200);
    return o;
  }
  return check_module(with_final_exports(read_file(raw)), dir);
}

}  // namespace wzvm::fuzz::binaryen
