#pragma once
// `wzvm report [--top N] PROFILE...`: a text summary of profiles wzvm wrote
// (pprof files, gzipped or not), the same text --profile-summary prints.

namespace wzvm::cli {

// argv[0] is "report". Returns the exit status: 0, 1 (unreadable profile),
// 2 (usage).
int report_command(int argc, char** argv);

}  // namespace wzvm::cli
