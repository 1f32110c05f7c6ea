#pragma once
// Plain-text forms of profiles, for shell-based tests and quick looks.

#include <string>

#include "profiler/profiler.h"

namespace wzvm::profiler {

// Instructions executed per function (self), one "COUNT NAME" line each,
// largest first (ties by name), then "COUNT total" as the last line. The
// counts are exact, so shell tests can compare them as strings.
std::string instruction_text(const Profiler& profiler);

}  // namespace wzvm::profiler
