// wzvm-fuzz-binaryen: a long differential campaign against binaryen's
// interpreter and V8 (fuzz/README.md, "Against binaryen and V8").
//
// Module i of a campaign is generated from bytes drawn from a generator
// seeded with SEED + i, so any one is reproduced with --seed SEED+i
// --modules 1. Each goes through fuzz/binaryen.h's check_generated (wzvm
// plain, sampled and counted against binaryen); those V8 can run (no v128
// crossing into JS) are then run by node in batches (fuzz/v8_exec.js) and
// compared with wzvm's text, NaN payloads aside. Divergences are written
// to OUT/ as the module and a text saying what differed.
//
// Usage: wzvm-fuzz-binaryen [--seed S] [--modules N] [--seconds T] [--out DIR]
//                           [--node PATH|none] [--v8-script PATH]
//        wzvm-fuzz-binaryen --check MODULE.wasm [--v8] [--out DIR]
// --check runs one module as it is (no generator, no export added) and exits
// 1 if wzvm diverges from binaryen (or, with --v8, from V8), 0 if not:
// the test fuzz/reduce-binaryen.sh gives wasm-reduce.

#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "fuzz/binaryen.h"

namespace {

using namespace wzvm::fuzz::binaryen;

struct Stats {
  uint64_t modules = 0, agree = 0, nan_only = 0, known = 0, skipped = 0, diverged = 0;
  uint64_t v8_nan_only = 0, v8_known = 0;
  uint64_t v8_compared = 0, v8_ineligible = 0, v8_diverged = 0;
  std::map<std::string, uint64_t> skip_reasons, known_reasons;
};

// V8 can run a module when no v128 crosses into JS (exports' signatures,
// the log imports) and nothing needs a proposal node 20 lacks.
bool v8_eligible(const wzvm::vm::Module& m, std::string& params_line) {
  using wzvm::vm::ValType;
  for (const wzvm::vm::Import& imp : m.imports)
    if (imp.kind == wzvm::vm::ExternKind::Func && imp.field == "log-v128") return false;
  for (const wzvm::vm::Export& e : m.exports) {
    if (e.kind != wzvm::vm::ExternKind::Func) continue;
    const wzvm::vm::FuncType& t = m.func_type(e.index);
    std::string types;
    for (ValType v : t.params) {
      if (v == ValType::V128) return false;
      types += std::string(types.empty() ? "" : ",") + (v == ValType::I64     ? "i64"
                                                        : wzvm::vm::is_ref(v) ? "ref"
                                                                              : "num");
    }
    for (ValType v : t.results)
      if (v == ValType::V128) return false;
    params_line += "\t" + e.name + "=" + types;
  }
  return true;
}

struct Pending {
  std::string path;
  std::string wzvm;  // canonical
  uint64_t seed;
};

void save(const std::string& out, uint64_t seed, const std::vector<uint8_t>& module,
          const std::string& what) {
  std::string base = out + "/divergence-" + std::to_string(seed);
  write_file(base + ".wasm", module);
  write_file(base + ".txt", std::vector<uint8_t>(what.begin(), what.end()));
  std::fprintf(stderr, "DIVERGENCE seed %llu: %s\n", static_cast<unsigned long long>(seed), what.c_str());
}

// node on the modules of a manifest: its output per module path.
std::map<std::string, std::string> v8_outputs(const std::string& node, const std::string& script,
                                              const std::string& manifest, const std::string& manifest_text) {
  write_file(manifest, std::vector<uint8_t>(manifest_text.begin(), manifest_text.end()));
  Command c = run_command(
      {node, "--experimental-wasm-memory64", "--experimental-wasm-extended-const", script, manifest}, 600);
  std::map<std::string, std::string> per;
  std::string current;
  size_t p = 0;
  while (p < c.out.size()) {
    size_t q = c.out.find('\n', p);
    if (q == std::string::npos) q = c.out.size();
    std::string line = c.out.substr(p, q - p);
    p = q + 1;
    if (line.rfind("module ", 0) == 0) current = line.substr(7);
    else if (!current.empty()) per[current] += line + "\n";
  }
  return per;
}

// A NaN that V8 makes canonical and x86 keeps (f64.min of a NaN with a
// payload) shows later as other bits in memory: as for binaryen
// (check_module), the same module with NaNs replaced by 0 tells.
bool v8_agrees_without_nans(const std::string& node, const std::string& script, const std::string& dir,
                            const std::string& path) {
  std::vector<uint8_t> dm = denan_module(path, dir);
  std::string denan = dir + "/denan-final.wasm";
  if (dm.empty() || !write_file(denan, dm)) return false;
  auto m = wzvm::vm::load_module(dm);
  std::string params;
  if (!m || !v8_eligible(**m, params)) return false;
  Run w = run_wzvm(dm, Mode::Sampled);
  if (!w.complete) return false;
  auto per = v8_outputs(node, script, dir + "/denan-manifest.txt", denan + params + "\n");
  auto it = per.find(denan);
  if (it == per.end()) return false;
  // Without NaNs they agree, or differ only where V8 is known to.
  Difference d = compare(relaxed(w.text), canonical_v8(it->second, **m), "v8");
  return d.equal || known_difference(d);
}

void run_v8(const std::string& node, const std::string& script, const std::string& out,
            std::vector<Pending>& batch, const std::string& manifest_text, Stats& st) {
  if (batch.empty()) return;
  auto per = v8_outputs(node, script, out + "/v8/manifest.txt", manifest_text);
  for (const Pending& b : batch) {
    std::vector<uint8_t> bytes = read_file(b.path);
    auto m = wzvm::vm::load_module(bytes);
    auto it = per.find(b.path);
    if (!m || it == per.end()) {
      ++st.v8_ineligible;
      continue;
    }
    if (it->second.rfind("instantiate: ", 0) == 0) {
      // V8 refused what wzvm and binaryen ran: a divergence too, unless V8
      // lacks a feature (say so in the text; the triage decides).
      ++st.v8_diverged;
      save(out, b.seed, bytes, "V8 did not instantiate: " + it->second);
      continue;
    }
    Difference d = compare(relaxed(b.wzvm), canonical_v8(it->second, **m), "v8");
    ++st.v8_compared;
    if (d.equal) continue;
    if (known_difference(d)) {
      ++st.v8_known;
      continue;
    }
    if (nan_only_difference(d.wzvm_line, d.other_line) ||
        v8_agrees_without_nans(node, script, out + "/v8", b.path)) {
      ++st.v8_nan_only;
      continue;
    }
    ++st.v8_diverged;
    save(out, b.seed, bytes, d.text + "--- wzvm\n" + b.wzvm + "--- v8\n" + it->second);
  }
  batch.clear();
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t seed = 1, modules = UINT64_MAX;
  double seconds = 1e18;
  std::string out = "binaryen-campaign", node = "node", script, check;
  bool check_v8 = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "wzvm-fuzz-binaryen: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--seed") seed = std::strtoull(next().c_str(), nullptr, 10);
    else if (a == "--modules") modules = std::strtoull(next().c_str(), nullptr, 10);
    else if (a == "--seconds") seconds = std::strtod(next().c_str(), nullptr);
    else if (a == "--out") out = next();
    else if (a == "--node") node = next();
    else if (a == "--v8-script") script = next();
    else if (a == "--check") check = next();
    else if (a == "--v8") check_v8 = true;
    else {
      std::fprintf(stderr,
                   "usage: wzvm-fuzz-binaryen [--seed S] [--modules N] [--seconds T] [--out DIR] [--node "
                   "PATH|none] [--v8-script PATH]\n");
      return 2;
    }
  }
  if (script.empty()) script = std::string(WZVM_SOURCE_DIR) + "/fuzz/v8_exec.js";
  mkdir(out.c_str(), 0755);
  std::string scratch = out + "/scratch", v8dir = out + "/v8";
  mkdir(scratch.c_str(), 0755);
  mkdir(v8dir.c_str(), 0755);
  bool use_v8 = node != "none" && run_command({node, "--version"}, 10).status == 0;
  if (!use_v8) std::fprintf(stderr, "wzvm-fuzz-binaryen: no node, comparing with binaryen only\n");
  if (run_command({binaryen_tool("wasm-opt"), "--version"}, 10).status != 0) {
    // 77: what ctest counts as skipped (the fuzz-binaryen test).
    std::fprintf(
        stderr,
        "wzvm-fuzz-binaryen: wasm-opt not found: apt-get install binaryen (scripts/install-deps.sh does)\n");
    return 77;
  }

  Stats st;
  if (!check.empty()) {
    Outcome o = check_module(read_file(check), scratch);
    if (o.status == Outcome::Diverged) {
      std::fprintf(stderr, "%s", o.why.c_str());
      return 1;
    }
    if (!check_v8 || o.status == Outcome::Skipped) return 0;
    auto m = wzvm::vm::load_module(o.module);
    std::string params;
    if (!m || !v8_eligible(**m, params)) return 0;
    std::string path = v8dir + "/0.wasm";
    write_file(path, o.module);
    std::vector<Pending> one = {{path, o.wzvm, 0}};
    run_v8(node, script, out, one, path + params + "\n", st);
    return st.v8_diverged ? 1 : 0;
  }
  std::vector<Pending> batch;
  std::string manifest;
  auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  for (uint64_t i = 0; i < modules && elapsed() < seconds; ++i) {
    uint64_t s = seed + i;
    std::mt19937_64 rng(s);
    std::vector<uint8_t> bytes(512 + rng() % 16384);
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
    // Every other module without SIMD, so that V8 can run it too.
    Outcome o = check_generated(bytes.data(), bytes.size(), scratch, s % 2 == 0);
    ++st.modules;
    switch (o.status) {
      case Outcome::Agree:
        ++st.agree;
        break;
      case Outcome::NanOnly:
        ++st.nan_only;
        break;
      case Outcome::Known:
        ++st.known;
        ++st.known_reasons[o.why];
        break;
      case Outcome::Skipped:
        ++st.skipped;
        ++st.skip_reasons[o.why.substr(0, 60)];
        break;
      case Outcome::Diverged:
        ++st.diverged;
        save(out, s, o.module, o.why + "--- wzvm\n" + o.wzvm + "--- binaryen\n" + o.binaryen);
        break;
    }
    if (use_v8 && (o.status == Outcome::Agree || o.status == Outcome::NanOnly)) {
      auto m = wzvm::vm::load_module(o.module);
      std::string params;
      if (m && v8_eligible(**m, params)) {
        std::string path = v8dir + "/" + std::to_string(batch.size()) + ".wasm";
        write_file(path, o.module);
        manifest += path + params + "\n";
        batch.push_back({path, o.wzvm, s});
      } else {
        ++st.v8_ineligible;
      }
      if (batch.size() >= 50) {
        run_v8(node, script, out, batch, manifest, st);
        manifest.clear();
      }
    }
    if (st.modules % 1000 == 0)
      std::fprintf(stderr,
                   "%llu modules, %.0f s: %llu agree, %llu NaN-only, %llu skipped, %llu diverged; V8 %llu "
                   "compared, %llu diverged\n",
                   (unsigned long long)st.modules, elapsed(), (unsigned long long)st.agree,
                   (unsigned long long)st.nan_only, (unsigned long long)st.skipped,
                   (unsigned long long)st.diverged, (unsigned long long)st.v8_compared,
                   (unsigned long long)st.v8_diverged);
  }
  if (use_v8) run_v8(node, script, out, batch, manifest, st);
  std::printf("seeds %llu..%llu, %.0f s\n", (unsigned long long)seed,
              (unsigned long long)(seed + st.modules - 1), elapsed());
  std::printf(
      "modules %llu: agree %llu, NaN payloads only %llu, known binaryen differences %llu, skipped %llu, "
      "diverged %llu\n",
      (unsigned long long)st.modules, (unsigned long long)st.agree, (unsigned long long)st.nan_only,
      (unsigned long long)st.known, (unsigned long long)st.skipped, (unsigned long long)st.diverged);
  std::printf("V8: compared %llu (NaN only %llu, known %llu), not runnable in JS %llu, diverged %llu\n",
              (unsigned long long)st.v8_compared, (unsigned long long)st.v8_nan_only,
              (unsigned long long)st.v8_known, (unsigned long long)st.v8_ineligible,
              (unsigned long long)st.v8_diverged);
  for (const auto& [why, n] : st.known_reasons)
    std::printf("  known %llu: %s\n", (unsigned long long)n, why.c_str());
  for (const auto& [why, n] : st.skip_reasons)
    std::printf("  skipped %llu: %s\n", (unsigned long long)n, why.c_str());
  return st.diverged || st.v8_diverged ? 1 : 0;
}
