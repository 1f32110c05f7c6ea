#pragma once
// Other viewers' formats and a text report, all written from a finished pprof
// Profile rather than from the Profiler: every profile kind (cpu,
// instructions, mem, a live endpoint's window) and every profile read back
// from a file gets them the same way, and they show exactly what the pprof
// file holds, inlined frames included.
//
//   folded       one "root;caller;leaf VALUE" line per distinct stack
//                (flamegraph.pl, inferno, speedscope)
//   speedscope   speedscope's JSON file format: one sampled profile per
//                sample type
//   html         one self-contained page with an interactive flame graph
//   report       top functions by self and cumulative value, per sample type

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "profiler/profile.pb.h"

namespace wzvm::profiler {

// One frame of a sample's stack, with inlined frames expanded (a Location's
// Line entries become frames of their own).
struct StackFrame {
  std::string name;
  std::string file;        // source file of the function, "" if unknown
  int64_t start_line = 0;  // the function's first line, 0 if unknown
  int64_t line = 0;        // the line executing in this frame, 0 if unknown
  bool inlined = false;    // inlined into the frame before it (its caller)
};

// A sample's frames, root (outermost caller) first.
std::vector<StackFrame> sample_stack(const perftools::profiles::Profile& profile,
                                     const perftools::profiles::Sample& sample);
// sample_stack of every sample, in order, with the profile's tables indexed
// once (sample_stack indexes them per call: a CPython instruction profile's
// 154,000 samples took `wzvm report` 84 s that way).
void for_each_sample_stack(
    const perftools::profiles::Profile& profile,
    const std::function<void(const perftools::profiles::Sample&, const std::vector<StackFrame>&)>& visit);

// Entry `i` of the profile's string table; "" for 0 or an index out of range.
const std::string& profile_string(const perftools::profiles::Profile& profile, int64_t i);

// The sample type pprof shows by default: the one named default_sample_type,
// else the last. -1 when the profile has none.
int default_sample_index(const perftools::profiles::Profile& profile);
// "cpu/nanoseconds"
std::string sample_type_name(const perftools::profiles::Profile& profile, int index);

// Folded stacks of one sample type (default: pprof's default), one line per
// distinct stack, sorted, zero values left out. Function names only; in them
// '%', ';' and line breaks are percent-escaped ("%25", "%3B", "%0A"), since
// ';' separates frames and no folded reader knows an escape of its own.
std::string folded_text(const perftools::profiles::Profile& profile, int sample_index = -1);

// speedscope's file format (https://www.speedscope.app/file-format-schema.json):
// shared frames (name, file, the function's start line) and one "sampled"
// profile per sample type with a non-zero total, stacks root first. `name`
// names the file's profile group.
std::string speedscope_json(const perftools::profiles::Profile& profile, const std::string& name);

// The flame graph page: profiler/flamegraph.html with the profile's call tree
// (function-level frames, per-line self values) embedded as JSON.
std::string flamegraph_html(const perftools::profiles::Profile& profile, const std::string& title);

// Text summary: header (sample types, duration, period), then for each sample
// type with a non-zero total the top `top` functions by self value and by
// cumulative value. `name` is shown as the profile's name (its file).
std::string report_text(const perftools::profiles::Profile& profile, const std::string& name,
                        size_t top = 10);

// Reads a pprof file as wzvm writes it (gzipped) or uncompressed.
bool read_profile(const std::string& path, perftools::profiles::Profile& profile, std::string& why);

}  // namespace wzvm::profiler
