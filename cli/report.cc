#include "cli/report.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "profiler/diff.h"
#include "profiler/viewers.h"

namespace wzvm::cli {

namespace {

int usage(const std::string& why) {
  std::cerr << "wzvm: usage error: " << why << "\nRun 'wzvm report --help' for usage.\n";
  return 2;
}

bool read(const std::string& file, perftools::profiles::Profile& p) {
  std::string why;
  if (profiler::read_profile(file, p, why)) return true;
  std::cerr << "wzvm: error: " << file << ": " << why << "\n";
  return false;
}

// The values of the sample type `type` (pprof's default when empty) of `file`.
bool values_of(const std::string& file, const perftools::profiles::Profile& p, const std::string& type,
               profiler::FunctionValues& out) {
  const int index = profiler::sample_index(p, type);
  if (index < 0) {
    std::cerr << "wzvm: error: " << file << ": "
              << (type.empty() ? "no sample types" : "no sample type " + type) << "\n";
    return false;
  }
  out = std::move(profiler::function_values(p)[static_cast<size_t>(index)]);
  return true;
}

}  // namespace

int report_command(int argc, char** argv) {
  CLI::App app{
      "wzvm report: top functions by self and cumulative value, per sample type, of pprof profiles; "
      "with --diff, what changed between two (a CI gate with --fail-above)",
      "wzvm report"};
  std::vector<std::string> files;
  size_t top = 10;
  bool diff = false;
  std::optional<double> fail_above;
  std::vector<std::string> functions;
  std::string type, format = "text";
  app.add_option("--top,-n", top, "Functions per table (default 10; 20 with --diff)")
      ->option_text("N")
      ->check(CLI::Range(1, 100000));
  app.add_flag("--diff", diff,
               "Compare two profiles: PROFILE... is BASE NEW; per-function and total changes, largest first");
  app.add_option("--fail-above", fail_above,
                 "With --diff: exit 1 when the total, or a --function's cumulative value, grew by more than "
                 "PCT percent")
      ->option_text("PCT")
      ->check(CLI::Range(0.0, 1e9));
  app.add_option("--function", functions, "With --fail-above: also gate this function (repeatable)")
      ->option_text("NAME");
  app.add_option("--sample-type", type,
                 "The sample type to compare or write (default: pprof's default, e.g. instructions)")
      ->option_text("TYPE");
  app.add_option("--format", format, "text, or benchmark-json: Google Benchmark's JSON (one profile)")
      ->check(CLI::IsMember({"text", "benchmark-json"}));
  app.add_option("PROFILE", files, "pprof files (.pb.gz as wzvm writes them, or uncompressed)")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    return usage(e.what());
  }
  if (!diff && (fail_above || !functions.empty())) return usage("--fail-above and --function need --diff");
  if (!functions.empty() && !fail_above) return usage("--function needs --fail-above");
  if (diff && files.size() != 2) return usage("--diff compares two profiles: BASE NEW");
  if (diff && format != "text") return usage("--diff writes text");
  if (format == "benchmark-json" && files.size() != 1)
    return usage("--format=benchmark-json writes one profile");

  if (diff) {
    perftools::profiles::Profile base, now;
    profiler::FunctionValues vb, vn;
    if (!read(files[0], base) || !read(files[1], now) || !values_of(files[0], base, type, vb) ||
        !values_of(files[1], now, type, vn))
      return 1;
    if (vb.type != vn.type || vb.unit != vn.unit) {
      std::cerr << "wzvm: error: " << files[0] << " has " << vb.type << "/" << vb.unit << ", " << files[1]
                << " " << vn.type << "/" << vn.unit << ": choose one with --sample-type\n";
      return 1;
    }
    profiler::DiffOptions options;
    if (app.count("--top")) options.top = top;
    options.fail_above = fail_above;
    options.functions = functions;
    const profiler::Diff d = profiler::diff_profiles(vb, vn, files[0], files[1], options);
    std::cout << d.text;
    for (const std::string& f : d.failures) std::cerr << "wzvm: report: gate failed: " << f << "\n";
    return d.failures.empty() ? 0 : 1;
  }
  if (format == "benchmark-json") {
    perftools::profiles::Profile p;
    profiler::FunctionValues v;
    if (!read(files[0], p) || !values_of(files[0], p, type, v)) return 1;
    std::cout << profiler::benchmark_json(v, files[0]);
    return 0;
  }
  int status = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    perftools::profiles::Profile p;
    if (!read(files[i], p)) {
      status = 1;
      continue;
    }
    std::cout << (i ? "\n" : "") << profiler::report_text(p, files[i], top);
  }
  return status;
}

}  // namespace wzvm::cli
