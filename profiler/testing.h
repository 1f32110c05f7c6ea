#pragma once
// GoogleTest assertions on exact instruction counts, for users' own tests:
//
//   #include "profiler/testing.h"
//   auto p = wzvm::profiler::InstructionProfile::run_and_count_file("app.wasm", "run", {...});
//   ASSERT_TRUE(p) << p.error().to_string();
//   EXPECT_INSTRUCTIONS(*p, "parse_header", 12345, 2.0);  // self count within 2%
//   EXPECT_TOTAL_INSTRUCTIONS(*p, 1000000, 0);            // exactly
//
// Counts are deterministic, so a tolerance of 0 is meaningful: it catches
// any change in the code the test runs. A tolerance lets a test accept small
// changes (a compiler upgrade) while catching regressions. On failure the
// message gives the count, the accepted range, the change in percent and the
// profile's top functions, so the diff is readable in the test log.
//
// Header-only: include it in a test that links GoogleTest and wzvm::profiler.
#include <gtest/gtest.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "profiler/instruction_profile.h"

namespace wzvm::profiler::testing {

// `what` is the function's name, or empty for the total.
inline ::testing::AssertionResult instructions_near(const InstructionProfile& profile,
                                                    const std::string& what, uint64_t expected,
                                                    double tolerance_percent) {
  const bool total = what.empty();
  if (!total && !profile.counts().count(what)) {
    std::string names;
    for (const auto& [name, n] : profile.counts()) names += (names.empty() ? "" : ", ") + name;
    return ::testing::AssertionFailure()
           << "function " << what << " did not run (functions that ran: " << names << ")";
  }
  const uint64_t actual = total ? profile.total() : profile.count(what);
  const double slack = static_cast<double>(expected) * std::max(0.0, tolerance_percent) / 100.0;
  const uint64_t lo = static_cast<uint64_t>(std::max(0.0, std::ceil(static_cast<double>(expected) - slack)));
  const uint64_t hi = static_cast<uint64_t>(std::floor(static_cast<double>(expected) + slack));
  if (actual >= lo && actual <= hi) return ::testing::AssertionSuccess();

  char line[256];
  const double change = expected ? 100.0 * (static_cast<double>(actual) - static_cast<double>(expected)) /
                                       static_cast<double>(expected)
                                 : 0.0;
  std::snprintf(line, sizeof line,
                "%s: %" PRIu64 " instructions, expected %" PRIu64 " +- %.2f%% (%" PRIu64 "..%" PRIu64
                "): %+.2f%%",
                total ? "total" : what.c_str(), actual, expected, tolerance_percent, lo, hi, change);
  std::vector<std::pair<uint64_t, std::string>> top;
  for (const auto& [name, n] : profile.counts()) top.emplace_back(n, name);
  std::sort(top.begin(), top.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::string listing = "\ntop functions by self count (total " + std::to_string(profile.total()) + "):";
  for (size_t i = 0; i < top.size() && i < 10; ++i)
    listing += "\n  " + std::to_string(top[i].first) + "  " + top[i].second;
  return ::testing::AssertionFailure() << line << listing;
}

}  // namespace wzvm::profiler::testing

// The self count of `function` (as InstructionProfile::count names it) is
// within `tolerance_percent` of `expected`.
#define EXPECT_INSTRUCTIONS(profile, function, expected, tolerance_percent) \
  EXPECT_TRUE(                                                              \
      ::wzvm::profiler::testing::instructions_near((profile), (function), (expected), (tolerance_percent)))
#define ASSERT_INSTRUCTIONS(profile, function, expected, tolerance_percent) \
  ASSERT_TRUE(                                                              \
      ::wzvm::profiler::testing::instructions_near((profile), (function), (expected), (tolerance_percent)))
// The profile's total is within `tolerance_percent` of `expected`.
#define EXPECT_TOTAL_INSTRUCTIONS(profile, expected, tolerance_percent)                          \
  EXPECT_TRUE(::wzvm::profiler::testing::instructions_near((profile), std::string(), (expected), \
                                                           (tolerance_percent)))
#define ASSERT_TOTAL_INSTRUCTIONS(profile, expected, tolerance_percent)                          \
  ASSERT_TRUE(::wzvm::profiler::testing::instructions_near((profile), std::string(), (expected), \
                                                           (tolerance_percent)))
