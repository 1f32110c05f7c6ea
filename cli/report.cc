#include "cli/report.h"

#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "profiler/viewers.h"

namespace wzvm::cli {

int report_command(int argc, char** argv) {
  CLI::App app{"wzvm report: top functions by self and cumulative value, per sample type, of pprof profiles", "wzvm report"};
  std::vector<std::string> files;
  size_t top = 10;
  app.add_option("--top,-n", top, "Functions per table (default 10)")->option_text("N")->check(CLI::Range(1, 100000));
  app.add_option("PROFILE", files, "pprof files (.pb.gz as wzvm writes them, or uncompressed)")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::cerr << "wzvm: usage error: " << e.what() << "\nRun 'wzvm report --help' for usage.\n";
    return 2;
  }
  int status = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    perftools::profiles::Profile p;
    std::string why;
    if (!profiler::read_profile(files[i], p, why)) {
      std::cerr << "wzvm: error: " << files[i] << ": " << why << "\n";
      status = 1;
      continue;
    }
    std::cout << (i ? "\n" : "") << profiler::report_text(p, files[i], top);
  }
  return status;
}

}  // namespace wzvm::cli
