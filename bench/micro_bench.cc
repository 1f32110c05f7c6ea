// Micro-benchmarks of the engine (Google Benchmark): loading (decode +
// validate + lower), instantiation, the cost of one call from the API, and
// the dispatch loop on a tight loop and on wasm-to-wasm calls.
//   build/bench/wzvm_bench [--benchmark_filter=REGEX]

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "vm/module.h"
#include "vm/runtime.h"

namespace {

using namespace wzvm::vm;

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "wzvm_bench: cannot read %s\n", path.c_str());
    std::exit(1);
  }
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::shared_ptr<const Module> load_or_die(const std::string& path) {
  auto m = load_module(read_bytes(path));
  if (!m) {
    std::fprintf(stderr, "wzvm_bench: %s: %s\n", path.c_str(), m.error().to_string().c_str());
    std::exit(1);
  }
  return m.value();
}

const std::string kMicro = WZVM_BENCH_DIR "/micro.wasm";
const std::string kExample = WZVM_TESTDATA_DIR "/example.wasm";

// Decode + validate + lower a C program compiled by clang (testdata/example.c).
void BM_LoadModule(benchmark::State& state) {
  const std::vector<uint8_t> bytes = read_bytes(kExample);
  for (auto _ : state) {
    auto m = load_module(bytes);
    if (!m) state.SkipWithError(m.error().to_string().c_str());
    benchmark::DoNotOptimize(m);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes.size()));
}
BENCHMARK(BM_LoadModule);

// A fresh Store and instance of a module with a memory, a table, a global and segments.
void BM_Instantiate(benchmark::State& state) {
  auto module = load_or_die(kMicro);
  for (auto _ : state) {
    Store store;
    auto inst = store.instantiate(module, {});
    if (!inst) state.SkipWithError(inst.error().to_string().c_str());
    benchmark::DoNotOptimize(inst);
  }
}
BENCHMARK(BM_Instantiate);

struct Fixture {
  std::shared_ptr<const Module> module = load_or_die(kMicro);
  Store store;
  Instance* inst = nullptr;
  Fixture() {
    auto r = store.instantiate(module, {});
    if (!r) {
      std::fprintf(stderr, "wzvm_bench: instantiate: %s\n", r.error().to_string().c_str());
      std::exit(1);
    }
    inst = r.value();
  }
  FuncInst* func(const char* name) { return inst->exported_func(name); }
};

// One call of (i32, i32) -> i32 from the embedding API.
void BM_CallTiny(benchmark::State& state) {
  Fixture fx;
  FuncInst* add = fx.func("add");
  Value args[2] = {Value::from_i32(1), Value::from_i32(2)};
  std::vector<Value> results;
  for (auto _ : state) {
    Trap t = fx.store.invoke(add, args, results);
    if (t) state.SkipWithError(t.message.c_str());
    benchmark::DoNotOptimize(results.data());
  }
}
BENCHMARK(BM_CallTiny);

// The dispatch loop: a counting loop (about 9 instructions per iteration).
void BM_TightLoop(benchmark::State& state) {
  Fixture fx;
  FuncInst* loop = fx.func("loop");
  Value arg = Value::from_i32(static_cast<uint32_t>(state.range(0)));
  std::vector<Value> results;
  for (auto _ : state) {
    Trap t = fx.store.invoke(loop, {&arg, 1}, results);
    if (t) state.SkipWithError(t.message.c_str());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));  // items = loop iterations
}
BENCHMARK(BM_TightLoop)->Arg(1 << 20);

// wasm-to-wasm calls of a one-instruction function.
void BM_Calls(benchmark::State& state) {
  Fixture fx;
  FuncInst* calls = fx.func("calls");
  Value arg = Value::from_i32(static_cast<uint32_t>(state.range(0)));
  std::vector<Value> results;
  for (auto _ : state) {
    Trap t = fx.store.invoke(calls, {&arg, 1}, results);
    if (t) state.SkipWithError(t.message.c_str());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));  // items = calls
}
BENCHMARK(BM_Calls)->Arg(1 << 18);

}  // namespace

BENCHMARK_MAIN();
