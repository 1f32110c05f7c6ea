// libFuzzer target: load, instantiate, call every export under a budget (fuzz/targets.h).

#include <cstdio>
#include <cstdlib>

#include "fuzz/targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string what = wzvm::fuzz::check_execute(data, size);
  if (!what.empty()) {
    std::fprintf(stderr, "fuzz_execute: %s\n", what.c_str());
    std::abort();
  }
  return 0;
}
