#pragma once
// Profiles compared function by function, for CI: `wzvm report --diff BASE
// NEW` prints what grew and shrank between two profiles (instruction counts
// are exact, so any change is a change in the code or its inputs) and, with a
// threshold, fails the job when the total or a named function grew by more;
// `--format=benchmark-json` writes one profile's values in Google
// Benchmark's JSON format, which dashboards that already track Google
// Benchmark results over commits read as they are.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "profiler/profile.pb.h"

namespace wzvm::profiler {

// One sample type's values per function name: self (the function was the
// sample's leaf) and cumulative (it was on the stack; a recursive function
// once per sample), and the type's total.
struct FunctionValues {
  std::string type;  // "instructions"
  std::string unit;  // "count"
  int64_t total = 0;
  std::map<std::string, int64_t> self, cum;
};

// The sample type named `type` ("instructions", "cpu", "alloc_space"), or
// pprof's default one when `type` is empty; -1 if there is no such type.
int sample_index(const perftools::profiles::Profile& profile, const std::string& type);
// Every sample type's, in the profile's order.
std::vector<FunctionValues> function_values(const perftools::profiles::Profile& profile);

// A value as the text reports print it: times and sizes scaled ("1.50ms",
// "2.00MiB"), counts exact.
std::string format_value(int64_t value, const std::string& unit);

struct DiffOptions {
  size_t top = 20;                   // rows of the table, largest change first
  std::optional<double> fail_above;  // percent
  // Gated on their cumulative value (the function and what it calls), as a
  // benchmark of that function would measure it.
  std::vector<std::string> functions;
};

struct Diff {
  std::string text;
  // The total or a named function grew by more than fail_above percent, one
  // line each; empty when the gate passes (or there is none).
  std::vector<std::string> failures;
};

// `base_name` and `new_name` label the two (file names).
Diff diff_profiles(const FunctionValues& base, const FunctionValues& now, const std::string& base_name,
                   const std::string& new_name, const DiffOptions& options);

// Google Benchmark's JSON output format: one benchmark per function (its
// cumulative value, named by the function) and one named "(total)", sorted by
// name so the same profile always gives the same file. The value is given as
// `real_time` and `cpu_time` (with `time_unit` "ns", the only fields every
// reader plots) and again as the counters `cum` and `self` under the profile's
// own unit; `context` names the profile and its sample type.
std::string benchmark_json(const FunctionValues& values, const std::string& name);

}  // namespace wzvm::profiler
