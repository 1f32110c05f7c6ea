// libFuzzer target: the input is the seed of binaryen's generator
// (`wasm-opt -ttf`); the module it makes runs on wzvm (plain, sampled,
// counted) and in binaryen's interpreter, and every call, logged value,
// result, trap kind and the final memory's hash must agree (fuzz/binaryen.h).
// Needs wasm-opt on PATH (Debian package binaryen).

#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuzz/binaryen.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // One scratch directory per fuzzing process (-jobs/-workers run several).
  static const std::string dir = [] {
    char tmpl[] = "/tmp/wzvm-fuzz-binaryen-XXXXXX";
    const char* d = mkdtemp(tmpl);
    if (!d) std::abort();
    return std::string(d);
  }();
  auto o = wzvm::fuzz::binaryen::check_generated(data, size, dir);
  if (o.status == wzvm::fuzz::binaryen::Outcome::Diverged) {
    std::fprintf(stderr, "fuzz_binaryen: %s\n--- wzvm\n%s--- binaryen\n%s", o.why.c_str(), o.wzvm.c_str(),
                 o.binaryen.c_str());
    std::abort();
  }
  return 0;
}
