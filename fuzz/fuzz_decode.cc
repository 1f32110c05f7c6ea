// libFuzzer target: the binary decoder alone (fuzz/targets.h).

#include <cstdio>
#include <cstdlib>

#include "fuzz/targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string what = wzvm::fuzz::check_decode(data, size);
  if (!what.empty()) {
    std::fprintf(stderr, "fuzz_decode: %s\n", what.c_str());
    std::abort();
  }
  return 0;
}
