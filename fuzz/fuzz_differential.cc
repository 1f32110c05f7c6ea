// libFuzzer target: the same module with profiling off and on: identical outcomes (fuzz/targets.h).

#include <cstdio>
#include <cstdlib>

#include "fuzz/targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string what = wzvm::fuzz::check_differential(data, size);
  if (!what.empty()) {
    std::fprintf(stderr, "fuzz_differential: %s\n", what.c_str());
    std::abort();
  }
  return 0;
}
