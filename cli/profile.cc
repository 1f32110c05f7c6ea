#include "cli/profile.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <set>

#include "profiler/pprof.h"
#include "profiler/profiler.h"
#include "profiler/text.h"

namespace wzvm::cli {

namespace {
constexpr const char* kCpuFile = "wzvm-cpu.pb.gz";
constexpr const char* kInstructionsFile = "wzvm-instructions.pb.gz";

bool has(const std::vector<std::string>& kinds, const char* k) {
  return std::find(kinds.begin(), kinds.end(), k) != kinds.end();
}
bool is_dir(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
std::string parent_dir(const std::string& p) {
  auto slash = p.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : p.substr(0, slash);
}
}  // namespace

void ProfileFlags::add_to(CLI::App& app) {
  auto* profile = app.add_option("--profile", kinds,
                                 "Profile the run: cpu (guest CPU time; host calls as wall time), instructions "
                                 "(exact counts); comma list, repeatable. Writes gzipped pprof files")
                      ->option_text("cpu|instructions")
                      ->delimiter(',')
                      ->allow_extra_args(false)
                      ->check(CLI::IsMember({"cpu", "instructions"}));
  app.add_option("--profile-out", out,
                 "Where to write: a file for one profile, a directory for several "
                 "(default: wzvm-cpu.pb.gz, wzvm-instructions.pb.gz in the working directory)")
      ->option_text("PATH")
      ->needs(profile);
  app.add_option("--cpu-hz", cpu_hz, "CPU sampling rate (default 1000)")
      ->option_text("N")
      ->check(CLI::Range(1u, 100000u));
  app.add_flag("--profile-text", text,
               "Count instructions and print 'COUNT FUNCTION' lines (self counts, largest first) and "
               "'COUNT total' on stderr after the run");
}

bool ProfileFlags::cpu() const { return has(kinds, "cpu"); }
bool ProfileFlags::instructions() const { return has(kinds, "instructions"); }

ProfileSession::ProfileSession(const ProfileFlags& flags, vm::Store& store, const vm::Module& module,
                               const std::string& path)
    : flags_(flags) {
  if (!flags.any()) return;
  // Output paths are settled before the run, so a bad --profile-out is
  // reported before the guest spends its time, not after.
  const int files = int{flags.cpu()} + int{flags.instructions()};
  if (files > 0) {
    std::string dir;
    if (flags.out.empty()) {
      dir = ".";
    } else if (files > 1 || is_dir(flags.out)) {
      dir = flags.out;
      if (!is_dir(dir) && mkdir(dir.c_str(), 0777) != 0) {
        error_ = "--profile-out " + dir + ": cannot create directory: " + std::strerror(errno);
        return;
      }
    } else {
      std::string parent = parent_dir(flags.out);
      if (!is_dir(parent)) {
        error_ = "--profile-out " + flags.out + ": directory " + parent + " does not exist";
        return;
      }
      (flags.cpu() ? cpu_path_ : instructions_path_) = flags.out;
    }
    if (!dir.empty()) {
      std::string prefix = dir == "." ? "" : (dir.ends_with("/") ? dir : dir + "/");
      if (flags.cpu()) cpu_path_ = prefix + kCpuFile;
      if (flags.instructions()) instructions_path_ = prefix + kInstructionsFile;
    }
  }
  profiler::Options o;
  o.cpu = flags.cpu();
  o.instructions = flags.count_instructions();
  o.cpu_hz = flags.cpu_hz;
  profiler_ = std::make_unique<profiler::Profiler>(o);
  profiler_->add_module(&module, path);
  if (!profiler_->start(store, error_)) profiler_.reset();
}

ProfileSession::~ProfileSession() { finish(); }

void ProfileSession::finish() {
  if (!profiler_) return;
  profiler_->stop();
  // The guest's own output comes first.
  std::cout.flush();
  std::set<std::string> without_lines;  // one note per module, however many profiles
  auto write = [&](const char* what, const std::string& path, const perftools::profiles::Profile& p) {
    std::string why;
    for (std::string& m : profiler::modules_without_lines(p)) without_lines.insert(std::move(m));
    if (profiler::write_profile(p, path, why)) {
      std::cerr << "wzvm: " << what << " profile written to " << path << " (view: go tool pprof -top " << path
                << ")\n";
    } else {
      std::cerr << "wzvm: error: cannot write the " << what << " profile: " << why << "\n";
      if (flags_.write_failed) *flags_.write_failed = true;
    }
  };
  if (!cpu_path_.empty()) write("cpu", cpu_path_, profiler::build_cpu_profile(*profiler_));
  if (!instructions_path_.empty())
    write("instructions", instructions_path_, profiler::build_instructions_profile(*profiler_));
  for (const std::string& m : without_lines)
    std::cerr << "wzvm: note: " << m << " has no DWARF line info where the profile spends its time; "
              << "build it with -g for source lines and inlined frames\n";
  if (flags_.text) std::cerr << "wzvm: instructions executed per function (self):\n" << profiler::instruction_text(*profiler_);
  profiler_.reset();
}

}  // namespace wzvm::cli
