#include "cli/profile.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>
#include <set>
#include <system_error>

#include "profiler/clock.h"
#include "profiler/live.h"
#include "profiler/output.h"
#include "profiler/pprof.h"
#include "profiler/profiler.h"
#include "profiler/symbolize.h"
#include "profiler/text.h"
#include "profiler/viewers.h"

namespace wzvm::cli {

namespace {
// Output formats and their file name extensions: wzvm-KIND + extension.
struct Format {
  const char* name;
  const char* ext;
  const char* view;  // how to look at it, for the "written to" message ("%s" = the path)
};
constexpr Format kFormats[] = {
    {"pprof", ".pb.gz", "go tool pprof -top %s"},
    {"folded", ".folded", "flamegraph.pl %s > flame.svg, or inferno-flamegraph, or speedscope"},
    {"speedscope", ".speedscope.json", "speedscope %s"},
    {"html", ".html", "open %s in a browser"},
};
const Format* find_format(const std::string& name) {
  for (const Format& f : kFormats)
    if (name == f.name) return &f;
  return nullptr;
}
// --profile-out a.html with no --profile-format: the extension says which.
const Format* format_of_path(const std::string& path) {
  for (const Format& f : kFormats)
    if (path.ends_with(f.ext)) return &f;
  if (path.ends_with(".json")) return find_format("speedscope");
  return nullptr;
}

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
  auto* profile =
      app.add_option("--profile", kinds,
                     "Profile the run: cpu (guest CPU time; host calls as wall time), instructions "
                     "(exact counts), mem (allocations and memory in use, by allocating stack); "
                     "comma list, repeatable. Writes gzipped pprof files")
          ->option_text("cpu|instructions|mem")
          ->delimiter(',')
          ->allow_extra_args(false)
          ->check(CLI::IsMember({"cpu", "instructions", "mem"}));
  app.add_option("--profile-out", out,
                 "Where to write: a file for one profile in one format, a directory for several "
                 "(default: wzvm-cpu.pb.gz, wzvm-instructions.pb.gz, ... in the working directory)")
      ->option_text("PATH")
      ->needs(profile);
  app.add_option("--profile-format", formats,
                 "Formats to write each profile in: pprof (default; .pb.gz), folded (.folded, for "
                 "flamegraph.pl/inferno), speedscope (.speedscope.json), html (.html, a self-contained flame "
                 "graph); comma list, repeatable")
      ->option_text("pprof|folded|speedscope|html")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->check(CLI::IsMember({"pprof", "folded", "speedscope", "html"}))
      ->needs(profile);
  app.add_flag("--profile-summary", summary,
               "Print a summary of each profile (top functions by self and cumulative value) on stderr after "
               "the run")
      ->needs(profile);
  app.add_option(
         "--pprof-addr", pprof_addr,
         "Serve /debug/pprof/ (profile, instructions, heap, allocs) while the guest runs; :PORT binds "
         "127.0.0.1, port 0 picks a free port")
      ->option_text("HOST:PORT");
  app.add_option("--mem-sample-bytes", mem_sample_bytes,
                 "Memory profile: sample about one allocation per N bytes allocated, with unbiased scaling "
                 "(default 0: record every allocation)")
      ->option_text("N");
  app.add_option("--alloc-fn", alloc_fns,
                 "Memory profile: treat function NAME (name section or export) as an allocator with the "
                 "arguments of malloc(size), calloc(n, size), realloc(ptr, size) or free(ptr); repeatable")
      ->option_text("NAME=KIND")
      ->allow_extra_args(false)
      ->check([](const std::string& v) {
        profiler::CustomAllocator a;
        std::string why;
        return profiler::parse_alloc_fn(v, a, why) ? std::string() : why;
      });
  app.add_option("--cpu-hz", cpu_hz,
                 "CPU sampling rate (default " + std::to_string(profiler::kDefaultCpuHz) + ")")
      ->option_text("N")
      ->check(CLI::Range(1u, 100000u));
  app.add_option(
         "--profile-c-frames", python_c_frames,
         "Instruction profile of CPython by Python line: C frames kept below each Python frame (default " +
             std::to_string(profiler::Options::kDefaultPythonCFrames) +
             "; deeper ones are elided, their functions' counts kept); 0: every frame, and C counts per "
             "line (profiles of millions of samples)")
      ->option_text("N");
  app.add_flag("--profile-text", text,
               "Count instructions and print 'COUNT FUNCTION' lines (self counts, largest first) and "
               "'COUNT total' on stderr after the run");
}

bool ProfileFlags::cpu() const { return has(kinds, "cpu"); }
bool ProfileFlags::instructions() const { return has(kinds, "instructions"); }
bool ProfileFlags::mem() const { return has(kinds, "mem"); }

std::function<uint8_t(const vm::Module&, uint32_t)> ProfileFlags::call_hook() const {
  // Allocators are hooked only when the memory profile is asked for: the
  // module is then lowered with no hooked calls and pays nothing.
  if (!mem()) return {};
  std::vector<profiler::CustomAllocator> extra;
  for (const std::string& spec : alloc_fns) {
    profiler::CustomAllocator a;
    std::string why;
    if (profiler::parse_alloc_fn(spec, a, why)) extra.push_back(std::move(a));
  }
  return profiler::allocator_hook(std::move(extra));
}

vm::Profiling* ProfileSession::profiling() { return profiler_ ? &profiler_->profiling() : nullptr; }

ProfileSession::ProfileSession(const ProfileFlags& flags, vm::Store& store, const vm::Module& module,
                               const std::string& path)
    : flags_(flags), store_(store), module_(&module), module_path_(path) {
  if (!flags.any()) return;
  // Output paths are settled before the run, so a bad --profile-out is
  // reported before the guest spends its time, not after. Every profile is
  // written in every format asked for.
  std::vector<std::string> kinds;
  if (flags.cpu()) kinds.push_back("cpu");
  if (flags.instructions()) kinds.push_back("instructions");
  if (flags.mem()) kinds.push_back("mem");
  std::vector<const Format*> formats;
  for (const std::string& f : flags.formats)
    if (const Format* fmt = find_format(f);
        fmt && std::find(formats.begin(), formats.end(), fmt) == formats.end())
      formats.push_back(fmt);
  if (formats.empty()) {
    const Format* by_ext =
        kinds.size() == 1 && !flags.out.empty() && !is_dir(flags.out) ? format_of_path(flags.out) : nullptr;
    formats.push_back(by_ext ? by_ext : &kFormats[0]);
  }
  const size_t files = kinds.size() * formats.size();
  if (files > 0) {
    std::string dir;
    if (flags.out.empty()) {
      dir = ".";
    } else if (files > 1 || is_dir(flags.out)) {
      dir = flags.out;
      // Several files go into a directory; one named like a profile file
      // (cpu.pb.gz) is more likely a mistake than a wish.
      if (!is_dir(dir) && format_of_path(dir)) {
        error_ =
            "--profile-out " + dir + ": " + std::to_string(files) +
            " files are written (one per profile and format), so this names a directory, but it looks like a "
            "file name; give a directory";
        return;
      }
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
      outputs_.push_back({kinds[0], formats[0]->name, flags.out});
      dir = parent;
    }
    // Written into after the run (a temporary file, then a rename): a
    // directory that refuses files is found now, not once the run is over.
    if (access(dir.c_str(), W_OK | X_OK) != 0) {
      error_ = "--profile-out " + (flags.out.empty() ? std::string(".") : flags.out) + ": cannot write in " +
               (dir == "." ? std::string("the working directory") : "directory " + dir) + ": " +
               std::strerror(errno);
      outputs_.clear();
      return;
    }
    if (outputs_.empty()) {
      std::string prefix = dir == "." ? "" : (dir.ends_with("/") ? dir : dir + "/");
      for (const std::string& k : kinds)
        for (const Format* f : formats) outputs_.push_back({k, f->name, prefix + "wzvm-" + k + f->ext});
    }
  }
  profiler::Options o;
  o.cpu = flags.cpu();
  o.instructions = flags.count_instructions();
  o.cpu_hz = flags.cpu_hz;
  o.mem = flags.mem();
  o.mem_sample_bytes = flags.mem_sample_bytes;
  o.deterministic = flags.deterministic;
  o.python_c_frames = flags.python_c_frames;
  // Said before the run, not after: an empty memory profile needs a reason.
  if (o.mem && module.call_hooks.empty())
    std::cerr
        << "wzvm: note: " << path << " has no function named like an allocator (malloc, free, operator new, "
        << "__rust_alloc, ...): the memory profile will show memory.grow only; name custom allocators with "
        << "--alloc-fn\n";
  profiler_ = std::make_unique<profiler::Profiler>(o);
  profiler_->add_module(&module, path);
  // The live profiler sits between the VM and the Profiler (profiler/live.h):
  // it counts samples for the progress line and serves --pprof-addr.
  live_ = std::make_unique<profiler::LiveProfiler>(*profiler_);
  if (!flags.pprof_addr.empty()) {
    live_->enable_windows();
    server_ = std::make_unique<profiler::PprofServer>(*live_);
    if (!server_->start(flags.pprof_addr, error_)) {
      server_.reset();
      live_.reset();
      profiler_.reset();
      return;
    }
    std::cerr << "wzvm: serving pprof at " << server_->url() << "/debug/pprof/ (e.g. go tool pprof "
              << server_->url() << "/debug/pprof/profile?seconds=10)\n";
  }
  if (!profiler_->start(store, error_)) {
    if (server_) server_->stop();
    server_.reset();
    live_.reset();
    profiler_.reset();
    return;
  }
  start_progress();
}

ProfileSession::~ProfileSession() {
  // Unwinding past the run (wzvm out of memory outside it, main.cc): nothing
  // is written, an earlier profile stays.
  if (std::uncaught_exceptions() > 0) discarded_ = true;
  finish();
}

namespace {
// The profiler of the spawned thread running here (attach and detach run on it).
thread_local profiler::Profiler* t_thread_profiler = nullptr;
}  // namespace

wasi::Threads::Hooks ProfileSession::thread_hooks() {
  if (!profiler_) return {};
  wasi::Threads::Hooks h;
  h.attach = [this](int32_t tid) -> vm::Profiling* {
    profiler::Profiler* p = profiler_->add_thread(tid);
    std::string why;
    // A thread whose CPU timer cannot start runs unprofiled (its profile is empty).
    if (!p->start(store_, why)) return nullptr;
    t_thread_profiler = p;
    return &p->profiling();
  };
  h.detach = [](int32_t) {
    if (t_thread_profiler) t_thread_profiler->stop();
    t_thread_profiler = nullptr;
  };
  return h;
}

// A line on stderr, rewritten in place, while a long profiled run goes on:
// only when stderr is a terminal (never in pipes, logs or tests), and only
// after a second, so short runs print nothing.
void ProfileSession::start_progress() {
  if (!isatty(STDERR_FILENO)) return;
  // Without a thread to give (EAGAIN), the run goes on without the line.
  try {
    progress_ = std::thread([this] {
      const uint64_t t0 = profiler::monotonic_ns();
      std::unique_lock lock(progress_mu_);
      bool shown = false;
      while (!progress_cv_.wait_for(lock, std::chrono::milliseconds(shown ? 250 : 1000),
                                    [&] { return progress_stop_; })) {
        char line[128];
        const double elapsed = static_cast<double>(profiler::monotonic_ns() - t0) / 1e9;
        if (flags_.cpu() || !flags_.pprof_addr.empty())
          std::snprintf(line, sizeof line, "\rwzvm: profiling: %.1f s, %llu samples ", elapsed,
                        static_cast<unsigned long long>(live_->samples()));
        else std::snprintf(line, sizeof line, "\rwzvm: profiling: %.1f s ", elapsed);
        std::fputs(line, stderr);
        shown = true;
      }
      if (shown) std::fputs("\r\033[K", stderr);  // leave no progress line behind
    });
  } catch (const std::system_error&) {
  }
}

void ProfileSession::stop_progress() {
  if (!progress_.joinable()) return;
  {
    std::lock_guard lock(progress_mu_);
    progress_stop_ = true;
  }
  progress_cv_.notify_all();
  progress_.join();
}

void ProfileSession::finish() {
  if (!profiler_) return;
  stop_progress();
  // Open live windows get what they have, then the server stops (waiting for
  // those requests), and only then does the profiler detach.
  if (live_) live_->finish();
  if (server_) server_->stop();
  profiler_->stop();
  if (discarded_) return;
  // Building a profile allocates as much as the run counted (a Go test's
  // instruction profile: 1.2 M samples): a host out of memory here is a
  // profile that could not be written, said as such, its temporary file
  // removed (profiler/output.h), never an abort.
  try {
    // The guest's own output comes first.
    std::cout.flush();
    std::set<std::string> without_lines;  // one note per module, however many profiles
    bool wrote = false;
    // `stream`: an instructions profile written as it is made (then `p` is not used).
    auto write = [&](const Output& o, const perftools::profiles::Profile& p, bool stream) {
      std::string why, data;
      bool ok;
      const Format* f = find_format(o.format);
      if (stream) {
        std::vector<std::string> wl;
        ok = profiler::write_instructions_profile(*profiler_, o.path, why, &wl);
        without_lines.insert(wl.begin(), wl.end());
      } else if (o.format == "pprof") {
        for (std::string& m : profiler::modules_without_lines(p)) without_lines.insert(std::move(m));
        ok = profiler::write_profile(p, o.path, why);
      } else {
        if (o.format == "folded") data = profiler::folded_text(p);
        else if (o.format == "speedscope") data = profiler::speedscope_json(p, "wzvm " + o.kind);
        else data = profiler::flamegraph_html(p, "wzvm " + o.kind + " profile");
        ok = profiler::write_file_atomic(o.path, data, why);
      }
      if (ok) {
        wrote = true;
        char view[512];
        std::snprintf(view, sizeof view, f->view, o.path.c_str());
        std::cerr << "wzvm: " << o.kind << " profile written to " << o.path << " (view: " << view << ")\n";
      } else {
        std::cerr << "wzvm: error: cannot write the " << o.kind << " profile: " << why << "\n";
        if (flags_.write_failed) *flags_.write_failed = true;
      }
    };
    // Each profile is built once, for all its formats and the summary. An
    // instructions profile wanted only as pprof is serialized and gzipped into
    // its file as it is built instead (profiler::write_instructions_profile):
    // deep recursions make it large (as a message it took 14 ms of the 26
    // that writing `calls`' took; Go's encoding/json tests' is 217 MB before
    // gzip, which held whole made the run's peak memory).
    std::string built_kind, summaries;
    perftools::profiles::Profile built;
    bool instructions_streamed = !flags_.summary;
    for (const Output& o : outputs_)
      if (o.kind == "instructions" && o.format != "pprof") instructions_streamed = false;
    for (const Output& o : outputs_) {
      if (o.kind == "instructions" && instructions_streamed) {
        write(o, built, true);
        continue;
      }
      if (o.kind != built_kind) {
        built = o.kind == "cpu"   ? profiler::build_cpu_profile(*profiler_)
                : o.kind == "mem" ? profiler::build_memory_profile(*profiler_)
                                  : profiler::build_instructions_profile(*profiler_);
        built_kind = o.kind;
        if (flags_.summary)
          summaries += "\n" + profiler::report_text(built, o.kind + " profile (" + o.path + ")");
      }
      write(o, built, false);
    }
    std::cerr << summaries;
    // The notes are about the profiles: none when every file failed to be
    // written, so that the error stays the one thing said about them.
    const bool notes = wrote || outputs_.empty();
    // A Go module has no DWARF to add (Go writes none for wasm): its lines come
    // from Go's tables, or, when those could not be read, it is said why.
    const profiler::Symbolizer& sym = profiler_->symbolizer(module_);
    if (notes && !sym.go_note().empty())
      std::cerr << "wzvm: note: " << module_path_ << ": " << sym.go_note() << "\n";
    // CPython whose frames could not be read: its profile is the C one.
    if (notes && !sym.python_note().empty())
      std::cerr << "wzvm: note: " << module_path_ << ": " << sym.python_note() << "\n";
    if (sym.built_by_go()) without_lines.erase(module_path_);
    if (!notes) without_lines.clear();
    for (const std::string& m : without_lines)
      std::cerr << "wzvm: note: " << m << " has no DWARF line info where the profile spends its time; "
                << "build it with -g for source lines and inlined frames\n";
    if (flags_.mem() && profiler_->memory()) std::cerr << profiler::memory_summary(*profiler_, 3);
    if (flags_.text)
      std::cerr << "wzvm: instructions executed per function (self):\n"
                << profiler::instruction_text(*profiler_);
  } catch (const std::bad_alloc&) {
    std::cerr << "wzvm: error: cannot write the profiles: " << vm::trap_message(vm::TrapCode::HostOutOfMemory)
              << "\n";
    if (flags_.write_failed) *flags_.write_failed = true;
  }
  server_.reset();
  live_.reset();
  profiler_.reset();
}

}  // namespace wzvm::cli
