// CPython programs profiled as Python (profiler/cpython.h): the evaluation
// loop's frames replaced by the Python frames they run, C frames kept
// between them, checked through `go tool pprof` against the sources of
// testdata/python/shapes.py and against cProfile run natively on it.

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "profiler/cpython.h"
#include "profiler/symbolize.h"
#include "profiler/testing.h"
#include "tests/cli_fixture.h"
#include "tests/pprof_read.h"
#include "vm/module.h"
#include "wasi/wasi.h"

namespace wzvm {
namespace {

using cli_test::Output;
using ::testing::HasSubstr;
using ::testing::Not;

// One line of a pprof Location (pprof -raw): innermost first.
struct Frame {
  std::string name, file;
  uint32_t line = 0, start = 0;
  bool mapped = false;  // in the module's mapping: C; Python frames are in none
  bool python() const { return !mapped && !file.empty(); }
  // As cprofile_edges.py names a function.
  std::string key() const {
    std::string base = std::filesystem::path(file).filename().string();
    std::replace(base.begin(), base.end(), ' ', '_');
    return base + ":" + std::to_string(start);
  }
};
struct Sample {
  int64_t count = 0;
  std::vector<Frame> frames;  // innermost first
};

// `go tool pprof -raw`'s samples and locations, read back into stacks.
std::vector<Sample> parse_raw(const std::string& raw) {
  std::map<uint64_t, std::vector<Frame>> locations;
  std::vector<std::pair<int64_t, std::vector<uint64_t>>> samples;
  std::istringstream in(raw);
  std::string line;
  enum { Header, Samples, Locations, Rest } part = Header;
  uint64_t current = 0;
  // "   12: 0x1f M=1 name file:line s=start" or, for an inlined frame's
  // line, the same without the id and address; names may hold spaces.
  const std::regex loc(R"(^\s*(?:(\d+): 0x[0-9a-f]+( M=\d+)? )?\s*(.*) (\S*):(\d+) s=(\d+).*$)");
  const std::regex sample(R"(^\s*(\d+)\s+\d+\s+\d+: ([\d ]+)$)");
  std::smatch m;
  while (std::getline(in, line)) {
    if (line.rfind("Samples:", 0) == 0) part = Samples;
    else if (line.rfind("Locations", 0) == 0) part = Locations;
    else if (line.rfind("Mappings", 0) == 0) part = Rest;
    else if (part == Samples && std::regex_match(line, m, sample)) {
      std::vector<uint64_t> ids;
      std::istringstream ss(m[2].str());
      for (uint64_t id; ss >> id;) ids.push_back(id);
      samples.push_back({std::stoll(m[1].str()), ids});
    } else if (part == Locations && std::regex_match(line, m, loc)) {
      if (m[1].matched) current = std::stoull(m[1].str());
      std::vector<Frame>& frames = locations[current];
      const bool mapped = m[1].matched ? m[2].matched : !frames.empty() && frames.back().mapped;
      frames.push_back({m[3].str(), m[4].str(), uint32_t(std::stoul(m[5].str())),
                        uint32_t(std::stoul(m[6].str())), mapped});
      // A Python name has no spaces; a file may ("<frozen importlib._bootstrap>").
      Frame& f = frames.back();
      if (size_t space = f.name.find(' '); !mapped && space != std::string::npos) {
        f.file = f.name.substr(space + 1) + " " + f.file;
        f.name.resize(space);
      }
    }
  }
  std::vector<Sample> out;
  for (const auto& [count, ids] : samples) {
    Sample& s = out.emplace_back();
    s.count = count;
    for (uint64_t id : ids)
      for (const Frame& f : locations[id]) s.frames.push_back(f);
  }
  return out;
}

std::string names(const Sample& s) {
  std::string out;
  for (const Frame& f : s.frames) out += f.name + (f.python() ? ":" + std::to_string(f.line) : "") + "\n";
  return out;
}

class PythonProfile : public cli_test::CliFixture {
 protected:
  static std::string cpython() { return WZVM_CPYTHON_DIR; }
  static std::string script_dir() { return std::string(WZVM_SOURCE_DIR) + "/testdata/python"; }
  void SetUp() override {
    CliFixture::SetUp();
    if (!std::filesystem::exists(cpython() + "/python.wasm"))
      GTEST_SKIP() << "CPython for wasm32-wasi not built: bash scripts/build-cpython.sh " << cpython();
  }
  // wzvm FLAGS python.wasm /src/SCRIPT, the stdlib and testdata/python preopened.
  Output python(const std::string& flags, const std::string& script) { return wzvm_in(".", flags, script); }
  // The same, in the subdirectory `dir` of the test's directory.
  Output wzvm_in(const std::string& dir, const std::string& flags, const std::string& script) {
    return cli_test::run_wzvm(
        path(dir), flags + " --dir '" + cpython() + "/lib::/lib' --dir '" + script_dir() +
                       "::/src' --env PYTHONHOME=/ --env PYTHONDONTWRITEBYTECODE=1 --env PYTHONHASHSEED=0 '" +
                       cpython() + "/python.wasm' /src/" + script);
  }
  // The CPU profile of shapes.py, once for the tests that read it.
  static std::vector<Sample>& cpu_samples() {
    static std::vector<Sample> samples;
    return samples;
  }
  const std::vector<Sample>& shapes_cpu() {
    if (cpu_samples().empty()) {
      Output r = python("--profile=cpu --cpu-hz 5000 --profile-out cpu.pb.gz", "shapes.py");
      EXPECT_EQ(r.status, 0) << r.err;
      EXPECT_THAT(r.out, HasSubstr("538743741\n")) << "what python3.11 prints for it";
      EXPECT_THAT(r.err, Not(HasSubstr("note:"))) << "CPython with DWARF needs no note";
      cpu_samples() = parse_raw(pprof("-raw cpu.pb.gz"));
    }
    return cpu_samples();
  }
};

// The sample whose Python frames (innermost first, C frames skipped) begin
// with `want`, or null.
const Sample* find_python(const std::vector<Sample>& samples, const std::vector<std::string>& want) {
  for (const Sample& s : samples) {
    size_t i = 0;
    for (const Frame& f : s.frames) {
      if (!f.python()) continue;
      if (f.name != want[i]) break;
      if (++i == want.size()) return &s;
    }
  }
  return nullptr;
}

// Python frames stand where the evaluation loop was, with their own names,
// files and lines; the C frames that call back into Python stay between.
TEST_F(PythonProfile, CpuStacksArePython) {
  const std::vector<Sample>& samples = shapes_cpu();
  ASSERT_GT(samples.size(), 100u);
  // Recursion: fib under fib under main under the module.
  const Sample* fib = find_python(samples, {"shapes.fib", "shapes.fib", "shapes.fib", "shapes.fib"});
  ASSERT_TRUE(fib) << "no fib recursion sampled";
  // A method's generator, run by the C `sum` from the method.
  const Sample* gen =
      find_python(samples, {"shapes.Shape.area.<locals>.<genexpr>", "shapes.Shape.area",
                            "shapes.main.<locals>.<genexpr>", "shapes.main", "shapes.<module>"});
  ASSERT_TRUE(gen);
  // Python -> C -> Python: sorted()'s key= and json's default=.
  const Sample* key = find_python(samples, {"shapes.sort_key", "shapes.main", "shapes.<module>"});
  ASSERT_TRUE(key);
  EXPECT_THAT(
      names(*key),
      testing::ContainsRegex(
          "shapes.sort_key:3[67]\n(.*\n)*list_sort_impl\n(.*\n)*builtin_sorted\n(.*\n)*shapes.main:63\n"));
  const Sample* json = find_python(samples, {"shapes.encode_default", "encoder.JSONEncoder.iterencode",
                                             "encoder.JSONEncoder.encode", "json.dumps", "shapes.main"});
  ASSERT_TRUE(json) << "json's C encoder calling default=";
  EXPECT_THAT(names(*json), HasSubstr("encoder_listencode_obj"));
  // Host calls too: print(..., flush=True)'s write, in main at line 68.
  bool write_in_main = false;
  for (const Sample& s : samples)
    write_in_main |= !s.frames.empty() && s.frames[0].name == "wasi_snapshot_preview1.fd_write" &&
                     names(s).find("\nshapes.main:68\nshapes.<module>:71\n") != std::string::npos;
  EXPECT_TRUE(write_in_main) << "fd_write's host-time sample under shapes.main:68";
  // The module is run by C (Py_RunMain ...), which stays under it.
  EXPECT_THAT(names(*fib),
              testing::ContainsRegex("shapes.<module>:[0-9]+\n(.*\n)*Py_RunMain\n(.*\n)*_start\n"));

  // Every frame of shapes.py is in its file, within its function's lines
  // (its `def` line for the code before the first line's).
  const std::map<std::string, std::pair<uint32_t, uint32_t>> lines = {
      {"shapes.fib", {8, 11}},
      {"shapes.Shape.area", {18, 19}},
      {"shapes.Shape.area.<locals>.<genexpr>", {19, 19}},
      {"shapes.squares", {22, 24}},
      {"shapes.make_counter.<locals>.bump", {30, 32}},
      {"shapes.sort_key", {36, 37}},
      {"shapes.encode_default", {40, 41}},
      {"shapes.risky", {44, 50}},
      {"shapes.main", {53, 69}},
      {"shapes.Shape.__init__", {15, 16}}};
  int64_t total = 0, in_loop = 0, risky_caught = 0;
  for (const Sample& s : samples) {
    total += s.count;
    bool loop = false;
    for (const Frame& f : s.frames) {
      loop |= f.name == "_PyEval_EvalFrameDefault";
      if (f.name.rfind("shapes.", 0) != 0) continue;
      EXPECT_EQ(f.file, "/src/shapes.py") << f.name;
      auto it = lines.find(f.name);
      if (it == lines.end()) continue;
      EXPECT_GE(f.line, it->second.first) << f.name << "\n" << names(s);
      EXPECT_LE(f.line, it->second.second) << f.name << "\n" << names(s);
      if (f.name == "shapes.risky" && f.line == 50) risky_caught += s.count;
    }
    in_loop += loop ? s.count : 0;
  }
  // Only a loop frame caught entering or leaving (its _PyCFrame not linked
  // in) stays as C: about one sample in a hundred (two in the sanitizer
  // build, whose switch dispatch takes a sample at the very next instruction).
  EXPECT_LT(in_loop * 20, total) << in_loop << " of " << total << " samples still show the evaluation loop";
  EXPECT_GT(risky_caught, 0) << "the except clause's line (50) is sampled";
}

// The call structure wzvm shows is the one cProfile measures running the
// same script natively: every caller -> callee pair of Python functions in
// wzvm's stacks is a call cProfile saw (directly, or through built-ins),
// and every direct call that took at least 4% of cProfile's time is in
// wzvm's stacks.
TEST_F(PythonProfile, CallStructureMatchesCProfile) {
  if (!std::filesystem::exists("/usr/bin/python3.11"))
    GTEST_SKIP() << "no /usr/bin/python3.11 (apt-get install python3.11)";
  const std::vector<Sample>& samples = shapes_cpu();
  Output native =
      sh("/usr/bin/python3.11 '" + script_dir() + "/cprofile_edges.py' '" + script_dir() + "/shapes.py'");
  ASSERT_EQ(native.status, 0) << native.err;
  ASSERT_THAT(native.out, HasSubstr("538743741\n"));
  std::set<std::string> seen_by_cprofile, heavy;
  std::istringstream in(native.err);
  std::string kind, caller, arrow, callee;
  double share = 0;
  while (in >> kind >> caller >> arrow >> callee >> share) {
    seen_by_cprofile.insert(caller + " -> " + callee);
    if (kind == "direct" && share >= 0.04 &&
        (caller.rfind("shapes.py", 0) == 0 || callee.rfind("shapes.py", 0) == 0))
      heavy.insert(caller + " -> " + callee);
  }
  ASSERT_GE(heavy.size(), 3u) << "cProfile's output read: main, fib, ... " << native.err;
  std::set<std::string> ours;
  for (const Sample& s : samples) {
    const Frame* inner = nullptr;
    for (const Frame& f : s.frames) {
      if (!f.python()) continue;
      if (inner) ours.insert(f.key() + " -> " + inner->key());
      inner = &f;
    }
  }
  for (const std::string& e : ours) {
    // shapes.py's own calls and the calls into it; the import machinery
    // (frozen modules) runs differently under cProfile's runpy.
    if (e.find("shapes.py") == std::string::npos || e.find("<frozen") != std::string::npos) continue;
    EXPECT_TRUE(seen_by_cprofile.count(e)) << e << " is in wzvm's stacks, not a call cProfile saw";
  }
  for (const std::string& e : heavy) EXPECT_TRUE(ours.count(e)) << e << " (cProfile) is in no wzvm stack";
}

// Allocations are charged to Python lines: through PyObject_Malloc and
// PyMem_* (each object, not pymalloc's arenas), with the Python frames in
// the stack. allocs.py keeps what it allocates, so tracemalloc's snapshot
// at its end, run natively, sees the same blocks: the same two lines
// allocate most, and the bytearrays' line within 1% of the same bytes.
TEST_F(PythonProfile, AllocationsByPythonLineMatchTracemalloc) {
  if (!std::filesystem::exists("/usr/bin/python3.11"))
    GTEST_SKIP() << "no /usr/bin/python3.11 (apt-get install python3.11)";
  Output r = python("--profile=mem --profile-out mem.pb.gz", "allocs.py");
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_THAT(r.out, HasSubstr("kept 1500 20000\n"));
  Output native = sh("/usr/bin/python3.11 -X tracemalloc '" + script_dir() + "/allocs.py' --tracemalloc");
  ASSERT_EQ(native.status, 0) << native.err;
  std::vector<std::pair<std::string, double>> theirs;  // "allocs.py:7", bytes; largest first
  std::istringstream in(native.out);
  for (std::string where, bytes; in >> where >> bytes;)
    if (where.rfind("allocs.py:", 0) == 0) theirs.push_back({where, std::stod(bytes)});
  ASSERT_GE(theirs.size(), 2u) << native.out;
  // wzvm's alloc_space by Python line, Python frames only, largest first.
  std::string top = pprof("-sample_index=alloc_space -unit=B -top -lines -show='^allocs\\.' mem.pb.gz");
  std::vector<std::pair<std::string, double>> ours;
  const std::regex row(R"(^\s*(\d+)B\s+\S+\s+\S+\s+\S+\s+\S+\s+allocs\.\S+ /src/(allocs\.py:\d+)$)");
  std::istringstream lines(top);
  std::smatch m;
  for (std::string line; std::getline(lines, line);)
    if (std::regex_match(line, m, row)) ours.push_back({m[2].str(), std::stod(m[1].str())});
  ASSERT_GE(ours.size(), 2u) << top;
  EXPECT_EQ(ours[0].first, theirs[0].first) << top << native.out;
  EXPECT_EQ(ours[1].first, theirs[1].first) << top << native.out;
  EXPECT_EQ(theirs[0].first, "allocs.py:7") << "the bytearrays";
  EXPECT_NEAR(ours[0].second / theirs[0].second, 1.0, 0.01) << top << native.out;
  // The Python frames sit above the C frame that called the allocator.
  // (A regular expression over the whole -traces text would print megabytes when it fails.)
  std::string traces = pprof("-sample_index=alloc_space -traces -focus=PyByteArray_Resize mem.pb.gz");
  const size_t at = traces.find("PyByteArray_Resize\n");
  ASSERT_NE(at, std::string::npos);
  const std::string stack = traces.substr(at, traces.find("-----", at) - at);
  EXPECT_THAT(stack,
              testing::ContainsRegex("bytearray___init__\n(.*\n)* +allocs.buffers.<locals>.<listcomp>\n "
                                     "+allocs.buffers\n +allocs.<module>\n"))
      << stack;
  // The heap's growth (memory.grow under malloc's sbrk) is charged to Python lines too.
  std::string grows = pprof("-sample_index=grow_space -unit=B -top -lines -show='^allocs\\.' mem.pb.gz");
  EXPECT_THAT(grows, testing::ContainsRegex("allocs.buffers.<locals>.<listcomp> /src/allocs.py:7\n"))
      << grows;
}

// The self count `COUNT NAME` that --profile-text printed for `name`, or 0.
uint64_t text_count(const std::string& err, const std::string& name) {
  std::smatch m;
  const std::regex row("(^|\n)([0-9]+) " + std::regex_replace(name, std::regex(R"([.<>])"), R"(\$&)") + "\n");
  return std::regex_search(err, m, row) ? std::stoull(m[2].str()) : 0;
}

// An instruction profile read from the protobuf itself: CPython's (its C
// start-up and imports included) has a hundred thousand samples, millions
// with every C frame kept, too many for `pprof -raw` in a test. Frames are
// made only for the samples asked for.
struct CountProfile {
  perftools::profiles::Profile p;
  std::vector<std::vector<Frame>> locations;  // by Location id - 1, innermost line first
  explicit CountProfile(const std::string& path) : p(test::read_profile(path)) {
    auto text = [&](int64_t i) { return p.string_table(static_cast<int>(i)); };
    for (const auto& loc : p.location()) {
      std::vector<Frame>& frames = locations.emplace_back();
      for (const auto& l : loc.line()) {
        const auto& fn = p.function(static_cast<int>(l.function_id() - 1));
        frames.push_back({text(fn.name()), text(fn.filename()), static_cast<uint32_t>(l.line()),
                          static_cast<uint32_t>(fn.start_line()), loc.mapping_id() != 0});
      }
    }
  }
  const Frame& leaf(const perftools::profiles::Sample& s) const { return locations[s.location_id(0) - 1][0]; }
  Sample sample(const perftools::profiles::Sample& s) const {
    Sample out;
    out.count = s.value(0);
    for (uint64_t id : s.location_id())
      out.frames.insert(out.frames.end(), locations[id - 1].begin(), locations[id - 1].end());
    return out;
  }
};

// Instruction counts by Python function and line (profiler/python_counts.cc):
// exact (the total is the C-level profile's), deterministic, and charged to
// the Python frame running, with C frames kept between Python ones.
TEST_F(PythonProfile, InstructionCountsArePython) {
  Output a = python("--profile=instructions --profile-text --profile-out a.pb.gz", "counts.py");
  ASSERT_EQ(a.status, 0) << a.err;
  EXPECT_EQ(a.out, "8997000\n499\n") << "what python3.11 prints for it";
  const uint64_t leaf = text_count(a.err, "counts.leaf"), negate = text_count(a.err, "counts.negate");
  EXPECT_GT(leaf, 100000u) << a.err;
  EXPECT_GT(negate, 1000u) << a.err;
  for (const char* f : {"counts.twice", "counts.main", "counts.<module>"})
    EXPECT_GT(text_count(a.err, f), 0u) << f;
  // Byte for byte the same on another run.
  ASSERT_EQ(sh("mkdir again").status, 0);
  Output b = wzvm_in("again", "--profile=instructions --profile-text --profile-out a.pb.gz", "counts.py");
  ASSERT_EQ(b.status, 0) << b.err;
  EXPECT_TRUE(a.err == b.err) << "the text differs";
  EXPECT_TRUE(cli_test::slurp(path("a.pb.gz")) == cli_test::slurp(path("again/a.pb.gz")))
      << "profiles differ";
  // And with every function run as its wasm body: wasi-libc's allocator and
  // string functions, which counted code runs natively (counting the blocks
  // of their translations), count what their bodies count.
  ASSERT_EQ(sh("mkdir bodies").status, 0);
  Output d = wzvm_in(
      "bodies", "--no-known-bodies --profile=instructions --profile-text --profile-out a.pb.gz", "counts.py");
  ASSERT_EQ(d.status, 0) << d.err;
  EXPECT_TRUE(a.err == d.err) << "the text differs";
  EXPECT_TRUE(cli_test::slurp(path("a.pb.gz")) == cli_test::slurp(path("bodies/a.pb.gz")))
      << "profiles differ";
  // Moving the count from node to node loses and adds nothing: the same
  // total as counting at the C level (with a CPU profile the loop is not probed).
  Output c = python("--profile=instructions,cpu --profile-text --profile-out c", "counts.py");
  ASSERT_EQ(c.status, 0) << c.err;
  EXPECT_EQ(text_count(c.err, "total"), text_count(a.err, "total"));
  EXPECT_EQ(text_count(c.err, "counts.leaf"), 0u) << "C level: no Python functions";
  EXPECT_GT(text_count(c.err, "_PyEval_EvalFrameDefault"),
            text_count(a.err, "_PyEval_EvalFrameDefault") + leaf);

  const CountProfile prof(path("a.pb.gz"));
  uint64_t leaf_self = 0, leaf_hot = 0, negate_self = 0;
  for (const auto& ps : prof.p.sample()) {
    ASSERT_GT(ps.location_id_size(), 0);
    const Frame& top = prof.leaf(ps);
    if (top.name == "counts.leaf") {
      const Sample s = prof.sample(ps);
      leaf_self += s.count;
      EXPECT_GE(top.line, 3u);
      EXPECT_LE(top.line, 7u);
      if (top.line == 6) leaf_hot += s.count;  // total += i
      // Called from twice() at line 11, from main() at 19, from the module at 23.
      EXPECT_THAT(names(s), testing::StartsWith("counts.leaf:" + std::to_string(top.line) +
                                                "\ncounts.twice:11\ncounts.main:19\ncounts.<module>:23\n"));
    }
    if (top.name == "counts.negate") {
      const Sample s = prof.sample(ps);
      negate_self += s.count;
      EXPECT_TRUE(top.line == 14 || top.line == 15) << top.line;  // its `def` (RESUME) or its body
      // Python -> C -> Python: sorted() calls the key function.
      EXPECT_THAT(names(s),
                  testing::ContainsRegex("^counts.negate:1[45]\n(.*\n)*list_sort_impl\n(.*\n)*builtin_"
                                         "sorted\n(.*\n)*counts.main:20\ncounts.<module>:23\n"));
    }
    // No frame of the evaluation loop stands above a Python frame: the
    // Python frames replace it. (A Python Location has one line.)
    for (int i = 0; i + 1 < ps.location_id_size(); ++i) {
      const std::vector<Frame>& callee = prof.locations[ps.location_id(i) - 1];
      const std::vector<Frame>& caller = prof.locations[ps.location_id(i + 1) - 1];
      if (callee[0].python()) {
        EXPECT_NE(caller[0].name, "_PyEval_EvalFrameDefault") << names(prof.sample(ps));
      }
    }
  }
  EXPECT_EQ(leaf_self, leaf) << "the profile's and the text's self counts";
  EXPECT_EQ(negate_self, negate);
  EXPECT_GT(leaf_hot * 10, leaf_self * 6) << "the loop's body line has most of leaf's instructions";
}

// The C below each Python frame is cut to --profile-c-frames frames (an
// exact tree of it was millions of samples, docs/RATIONALE.md): the
// function that ran, "[frames-elided]" if any are, then at most that many
// C frames up to the Python frame. Each function's count stays exact: the
// same as --profile-text's, and as the profile's with every frame kept.
TEST_F(PythonProfile, InstructionStacksCutTheCBelowPython) {
  Output a =
      python("--profile=instructions --profile-c-frames 1 --profile-text --profile-out a.pb.gz", "counts.py");
  ASSERT_EQ(a.status, 0) << a.err;
  Output all = python("--profile=instructions --profile-c-frames 0 --profile-out all.pb.gz", "counts.py");
  ASSERT_EQ(all.status, 0) << all.err;
  const CountProfile cut(path("a.pb.gz")), whole(path("all.pb.gz"));
  std::map<std::string, uint64_t> self;  // by the leaf's function (one leaf per C function)
  uint64_t total = 0, elided = 0;
  size_t most_c = 0;  // C frames below a Python frame, the leaf's included
  for (const auto& ps : cut.p.sample()) {
    const Sample s = cut.sample(ps);
    self[s.frames[0].name] += s.count;
    total += s.count;
    size_t c = 0;  // Locations: one may hold several frames, those inlined into its function
    for (int i = 0; i < ps.location_id_size(); ++i) {
      const Frame& f = cut.locations[ps.location_id(i) - 1][0];
      if (f.python()) {
        most_c = std::max(most_c, c);
        break;
      }
      if (f.name != "[frames-elided]") {
        ++c;
        continue;
      }
      EXPECT_EQ(i, 1) << "only the function that ran is below the elided frames:\n" << names(s);
      elided += s.count;
    }
  }
  EXPECT_EQ(most_c, 2u) << "the leaf and one C frame kept below the innermost Python frame";
  EXPECT_GT(elided, 0u) << "CPython's C calls go deeper than one frame";
  uint64_t whole_total = 0;
  for (const auto& ps : whole.p.sample()) whole_total += static_cast<uint64_t>(ps.value(0));
  EXPECT_EQ(total, whole_total);
  EXPECT_EQ(total, text_count(a.err, "total"));
  EXPECT_GT(whole.p.sample_size(), 4 * cut.p.sample_size()) << "cutting is what keeps the profile small";
  // Every function's self count as the text has it (wasm functions: the
  // names of both are DWARF's here).
  size_t checked = 0;
  for (const auto& [name, count] : self) {
    if (name == "[frames-elided]") continue;
    EXPECT_EQ(count, text_count(a.err, name)) << name;
    ++checked;
  }
  EXPECT_GT(checked, 100u);
}

// The same counts through the C++ API a user's test would assert on
// (profiler/testing.h, README "Python"): exactly the command's.
TEST_F(PythonProfile, InstructionCountsInAUsersTest) {
  Output cli = python("--profile-text", "counts.py");
  ASSERT_EQ(cli.status, 0) << cli.err;
  wasi::Config cfg;
  cfg.args = {cpython() + "/python.wasm", "/src/counts.py"};  // argv[0] as the command gives it
  cfg.env = {"PYTHONHOME=/", "PYTHONDONTWRITEBYTECODE=1", "PYTHONHASHSEED=0"};
  cfg.preopens = {wasi::Preopen::dir(cpython() + "/lib", "/lib"), wasi::Preopen::dir(script_dir(), "/src")};
  // Its output to a file, as the command's is (CPython buffers by file type).
  const int out = open(path("api.out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(out, 0);
  cfg.stdout_fd = out;
  auto w = wasi::Wasi::create(cfg);
  ASSERT_TRUE(w) << w.error().to_string();
  auto p = profiler::InstructionProfile::run_and_count_file(
      cpython() + "/python.wasm", "_start", {},
      [&](vm::Store& s, const vm::Module& m) { return (*w)->imports_for(s, m); });
  ASSERT_TRUE(p) << p.error().to_string();
  for (const char* f : {"counts.leaf", "counts.negate", "counts.twice"}) {
    ASSERT_GT(text_count(cli.err, f), 0u) << f;
    EXPECT_INSTRUCTIONS(*p, f, text_count(cli.err, f), 0);
  }
  close(out);
  EXPECT_EQ(cli_test::slurp(path("api.out")), cli.out);
}

// Without DWARF the layout is unknown: C-level stacks, and a note saying why.
TEST_F(PythonProfile, WithoutDwarfTheProfileStaysC) {
  std::string bytes = cli_test::slurp(cpython() + "/python.wasm");
  auto loaded = vm::decode_module(std::vector<uint8_t>(bytes.begin(), bytes.end()));
  ASSERT_TRUE(loaded) << loaded.error().to_string();
  vm::Module& m = **loaded;
  profiler::Symbolizer with(m);
  ASSERT_TRUE(with.python()) << with.python_note();
  EXPECT_EQ(with.python()->version() >> 16, 0x030Bu);
  std::erase_if(m.customs, [](const vm::CustomSection& c) { return c.name.rfind(".debug_", 0) == 0; });
  profiler::Symbolizer without(m);
  EXPECT_FALSE(without.python());
  EXPECT_THAT(without.python_note(), HasSubstr("no DWARF"));
  EXPECT_THAT(without.python_note(), HasSubstr("profiled at the C level"));
}

}  // namespace
}  // namespace wzvm
