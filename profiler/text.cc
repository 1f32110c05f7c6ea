#include "profiler/text.h"

#include "profiler/pprof.h"

namespace wzvm::profiler {

std::string instruction_text(const Profiler& profiler) {
  std::string out;
  uint64_t total = 0;
  for (const auto& [name, count] : instruction_totals(profiler)) {
    out += std::to_string(count) + " " + name + "\n";
    total += count;
  }
  out += std::to_string(total) + " total\n";
  return out;
}

}  // namespace wzvm::profiler
