#pragma once
// pprof writers (https://github.com/google/pprof/blob/main/proto/README.md).
// Each profile has one Mapping per module (file name = the module's path,
// has_functions; has_filenames, has_line_numbers and has_inline_frames when
// its Locations carry them), one Function per source function (from DWARF,
// demangled, with file and start line; else named from the name section,
// exports or index), and Locations whose address is a byte offset in the
// module: the sampled or counted instruction for a leaf, the call
// instruction for every caller (vm::CallTree keys nodes by call site), except
// above a recursive call, which the call tree keys by function only: that
// caller is at the function's first instruction and start line. A
// Location's Line entries are its inlined frames, innermost first
// (profiler/symbolize.h).

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "profiler/profile.pb.h"
#include "profiler/profiler.h"

namespace wzvm::profiler {

// samples/count, cpu/nanoseconds (default), host/nanoseconds. Host calls are
// samples whose leaf is the import ("wasi_snapshot_preview1.fd_read") on top
// of the calling guest stack, with values {0, 0, wall ns} and a label
// calls=N. period = 1e9 / cpu_hz ns; time_nanos and duration_nanos set.
perftools::profiles::Profile build_cpu_profile(const Profiler& profiler);

// instructions/count: executed instructions per call stack (the leaf frame's
// own instructions). Deterministic: no times, nothing from the host's memory,
// and every id and repeated field in call-tree order, which follows the
// program's execution; the same run gives the same bytes.
perftools::profiles::Profile build_instructions_profile(const Profiler& profiler);

// The bytes build_instructions_profile(profiler) serializes to, made without
// holding the samples as messages (the cost of a deep recursion's profile
// is in its samples: profiler/pprof.cc, Builder::stream_samples). Sets
// `*modules_without_lines`, if given, to modules_without_lines() of it.
std::string serialize_instructions_profile(const Profiler& profiler,
                                           std::vector<std::string>* modules_without_lines = nullptr);
// The same bytes gzipped into `path` (atomically, as write_profile does) as
// they are made: neither they nor their gzip are held whole.
bool write_instructions_profile(const Profiler& profiler, const std::string& path, std::string& why,
                                std::vector<std::string>* modules_without_lines = nullptr);

// alloc_objects/count, alloc_space/bytes, inuse_objects/count,
// inuse_space/bytes (default), like Go's heap profile: per allocating stack
// (the allocator's caller as the leaf, the allocator itself in a label
// "allocator"), what was allocated during the run and what is still in use
// at the end. Then grows/count, grow_space/bytes: one sample per memory.grow
// that made a memory larger, at the stack and instruction that ran it, with
// numeric labels memory_size (bytes, after the grow) and elapsed
// (nanoseconds since the start). period_type space/bytes; period =
// --mem-sample-bytes, or 1 when every allocation is recorded.
// `default_type` is the default sample type: inuse_space (Go's heap),
// alloc_space (Go's allocs).
perftools::profiles::Profile build_memory_profile(const Profiler& profiler,
                                                  const char* default_type = "inuse_space");

// File names of the modules (Mappings) whose samples mostly lack source
// lines: more than half of the default sample type's total is at leaf
// Locations without a line number (built without -g). Modules without
// samples are not listed.
std::vector<std::string> modules_without_lines(const perftools::profiles::Profile& profile);

// Serialize, gzip and write atomically.
bool write_profile(const perftools::profiles::Profile& profile, const std::string& path, std::string& why);
// Gzip a serialized Profile and write it atomically.
bool write_serialized_profile(std::string_view raw, const std::string& path, std::string& why);

// Instructions executed in each function's own code (self), summed over
// stacks and merged by name; sorted by count (descending), then name.
std::vector<std::pair<std::string, uint64_t>> instruction_totals(const Profiler& profiler);

}  // namespace wzvm::profiler
