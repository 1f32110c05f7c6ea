// Go programs profiled as Go (profiler/golang.h): names, files and lines from
// Go's pclntab, inlined calls as frames of their own, checked through
// `go tool pprof` against what the sources say.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "profiler/golang.h"
#include "profiler/symbolize.h"
#include "tests/cli_fixture.h"
#include "vm/module.h"

namespace wzvm {
namespace {

using cli_test::Output;
using cli_test::testdata;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;

class GoProfile : public cli_test::CliFixture {
 protected:
  void SetUp() override {
    CliFixture::SetUp();
    if (!std::filesystem::exists(testdata("go/determinism.wasm")))
      GTEST_SKIP() << "Go test programs not built (install golang-1.23-go from bookworm-backports)";
  }
  // The instructions profile of testdata/go/NAME.go, deterministic.
  std::string profile(const std::string& name) {
    Output r = wzvm("--deterministic --profile=instructions --profile-out p.pb.gz '" +
                    testdata("go/" + name + ".wasm") + "'");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_THAT(r.err, Not(HasSubstr("note:"))) << "a Go module needs no DWARF note, nor a fallback";
    return "p.pb.gz";
  }
};

TEST_F(GoProfile, FunctionsHaveGoNamesFilesAndLines) {
  std::string p = profile("determinism");
  std::string top = pprof("-top -nodecount=400 " + p);
  // Go's names, not the name section's (`fmt.__pp_.doPrintf`, `runtime_internal_math.Mul64`).
  EXPECT_THAT(top, HasSubstr(" main.worker\n"));
  EXPECT_THAT(top, HasSubstr(" main.main.func1\n"));
  EXPECT_THAT(top, HasSubstr(" fmt.(*pp).doPrintf\n"));
  EXPECT_THAT(top, HasSubstr(" runtime/internal/math.Mul64\n"));
  EXPECT_THAT(top, Not(HasSubstr("__pp_")));
  // Inlined calls are frames of their own, as pprof shows them for native Go.
  EXPECT_THAT(top, ContainsRegex(" runtime\\.[a-zA-Z]+ \\(inline\\)\n"));

  // worker (testdata/go/determinism.go, lines 14-21): the loop header, the
  // modulo test, the sleep and the send execute; the closing braces of the
  // if and of the loop are no code of their own.
  std::string list = pprof("-list '^main.worker$' " + p);
  EXPECT_THAT(list, HasSubstr("ROUTINE ======================== main.worker in " +
                              std::string(WZVM_SOURCE_DIR) + "/testdata/go/determinism.go"));
  for (const char* line :
       {"15:\tfor j := range jobs {", "16:\t\tif j%10 == 0 {", "17:\t\t\ttime.Sleep(time.Millisecond)",
        "19:\t\tresults <- [3]int{j, j*j%97 + 1, id}"})
    EXPECT_THAT(list, ContainsRegex("[0-9]+ +[0-9]+ +" + std::string(line).substr(0, 3))) << line;
  EXPECT_THAT(list, ContainsRegex("\\. +\\. +18:\t\t\\}"));
  EXPECT_THAT(list, ContainsRegex("\\. +\\. +20:\t\\}"));
}

// CPU samples carry the running goroutine's id: determinism.go's four
// workers and its producer are goroutines other than main's (1), and no
// sample of main.worker is labelled as goroutine 1. Sampling is by time, so
// a run too short to sample the workers is repeated (up to three times).
TEST_F(GoProfile, CpuSamplesCarryTheirGoroutine) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    Output r = wzvm("--profile=cpu --cpu-hz 20000 --profile-out cpu.pb.gz '" +
                    testdata("go/determinism.wasm") + "'");
    ASSERT_EQ(r.status, 0) << r.err;
    std::string tags = pprof("-tags cpu.pb.gz");
    std::string workers = pprof("-tagfocus='goroutine=^([2-9]|[1-9][0-9]+)$' -top -nodefraction=0 cpu.pb.gz");
    if (workers.find(" main.worker\n") == std::string::npos && attempt < 2) continue;
    EXPECT_THAT(tags, ContainsRegex("goroutine: Total"));
    EXPECT_THAT(tags, ContainsRegex("\\): 1\n")) << "main's goroutine";
    EXPECT_THAT(workers, HasSubstr(" main.worker\n")) << tags;
    EXPECT_THAT(pprof("-tagfocus='goroutine=^1$' -top -nodefraction=0 cpu.pb.gz"),
                Not(HasSubstr(" main.worker\n")));
    break;
  }
}

// testdata/go/determinism.wasm decoded, and its Go tables read.
class GoModuleRead : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path = testdata("go/determinism.wasm");
    if (!std::filesystem::exists(path)) GTEST_SKIP() << "Go test programs not built";
    std::string bytes = cli_test::slurp(path);
    auto loaded = vm::decode_module(std::vector<uint8_t>(bytes.begin(), bytes.end()));
    ASSERT_TRUE(loaded) << loaded.error().to_string();
    module = std::move(*loaded);
    std::string note;
    go = profiler::GoModule::read(*module, note);
    ASSERT_TRUE(go) << note;
  }
  std::unique_ptr<vm::Module> module;
  std::unique_ptr<profiler::GoModule> go;
};

// A Go module whose tables cannot be read is profiled at the wasm level, and
// says why: here the data segment holding pclntab is left out of the
// module the profiler reads (the program would not run without it, so this
// is done to the decoded module, not through the command).
TEST_F(GoModuleRead, UnreadableTablesFallBackWithANote) {
  vm::Module& m = *module;
  EXPECT_THAT(go->version(), ::testing::StartsWith("go1."));
  const uint8_t magic[] = {0xF1, 0xFF, 0xFF, 0xFF, 0x00, 0x00};
  size_t dropped = 0;
  std::erase_if(m.datas, [&](const vm::DataSegment& d) {
    const uint8_t* p = m.bytes.data() + d.data_offset;
    bool has = std::search(p, p + d.size, magic, magic + sizeof magic) != p + d.size;
    dropped += has;
    return has;
  });
  ASSERT_EQ(dropped, 1u);
  profiler::Symbolizer sym(m);
  EXPECT_EQ(sym.go(), nullptr);
  EXPECT_TRUE(sym.built_by_go());
  EXPECT_THAT(sym.go_note(), HasSubstr("could not be read (no pclntab"));
  EXPECT_THAT(sym.go_note(), HasSubstr("profiled at the wasm level"));
  // Names from the name section, as before Go was read.
  uint32_t worker = 0;
  for (uint32_t f = m.num_imported_funcs; f < m.func_type_indices.size(); ++f)
    if (m.function_name(f) == "main.worker") worker = f;
  ASSERT_NE(worker, 0u);
  EXPECT_EQ(sym.function(worker).function, "main.worker");
  EXPECT_EQ(sym.function(worker).function_file, "");
}

// The image Go's tables are read from is built from the data segments in
// module order. Go writes them rising and disjoint, and only the gaps are
// zeroed then; in any other order the image is zeroed first and a later
// segment overwrites an earlier one, as instantiation would.
TEST_F(GoModuleRead, SegmentsInAnyOrderBuildTheSameImage) {
  vm::Module& m = *module;
  std::reverse(m.datas.begin(), m.datas.end());
  std::string note;
  auto reversed = profiler::GoModule::read(m, note);
  ASSERT_TRUE(reversed) << note;
  EXPECT_EQ(reversed->version(), go->version());
  ASSERT_EQ(reversed->num_functions(), go->num_functions());
  for (uint32_t k = 0; k < go->num_functions(); k += 97) {  // defined-function indices
    ASSERT_FALSE(go->function(k).function.empty()) << k;
    EXPECT_EQ(reversed->function(k).function, go->function(k).function) << k;
    EXPECT_EQ(reversed->function(k).file, go->function(k).file) << k;
    EXPECT_EQ(reversed->function(k).start_line, go->function(k).start_line) << k;
  }
}

TEST_F(GoModuleRead, ALaterSegmentOverwritesAnEarlierOne) {
  vm::Module& m = *module;
  const std::string version = go->version();
  ASSERT_THAT(version, ::testing::StartsWith("go1."));
  // A copy of the segment that holds the version's text, with the text's
  // digits changed, placed at the same address after every other segment.
  auto holds = [&](const vm::DataSegment& d) {
    const uint8_t* p = m.bytes.data() + d.data_offset;
    return std::search(p, p + d.size, version.begin(), version.end()) != p + d.size;
  };
  auto it = std::find_if(m.datas.begin(), m.datas.end(), holds);
  ASSERT_NE(it, m.datas.end());
  vm::DataSegment copy = *it;
  std::vector<uint8_t> text(m.bytes.begin() + copy.data_offset,
                            m.bytes.begin() + copy.data_offset + copy.size);
  auto at = std::search(text.begin(), text.end(), version.begin(), version.end());
  std::string changed = version;
  for (size_t i = 4; i < changed.size(); ++i)
    if (changed[i] != '.') changed[i] = '9';
  std::copy(changed.begin(), changed.end(), at);
  copy.data_offset = static_cast<uint32_t>(m.bytes.size());
  m.bytes.insert(m.bytes.end(), text.begin(), text.end());
  m.datas.push_back(copy);
  std::string note;
  auto overwritten = profiler::GoModule::read(m, note);
  ASSERT_TRUE(overwritten) << note;
  EXPECT_EQ(overwritten->version(), changed);
}

// The scan for Go's moduledata tries each word of the data as the address
// of a pcHeader. Words near 2^64 are common (-8 is one): the bounds check
// once wrapped on them and read before the image, which a mapped image
// (no heap before it) turned into a crash on strconv's tests. A segment of
// such words near the image's end, where the scan starts, is read past.
TEST_F(GoModuleRead, WordsNearTheTopOfTheAddressSpaceAreNoAddresses) {
  vm::Module& m = *module;
  uint64_t end = 0;
  for (const vm::DataSegment& d : m.datas)
    if (d.mode == vm::SegmentMode::Active && !d.offset.code.empty())
      end = std::max<uint64_t>(end, static_cast<uint32_t>(d.offset.code[0].value) + uint64_t{d.size});
  vm::DataSegment words = m.datas.back();
  words.offset.code[0].value = (end + 7) / 8 * 8;
  words.data_offset = static_cast<uint32_t>(m.bytes.size());
  // -8, -16, ..., -64, then zeros: each of those words is tried with room
  // for a moduledata after it.
  words.size = 64 + 1024;
  for (uint64_t k = 0; k < 8; ++k) {
    const uint64_t w = ~uint64_t{0} - 8 * k + 1 - 8;
    for (int b = 0; b < 8; ++b) m.bytes.push_back(static_cast<uint8_t>(w >> (8 * b)));
  }
  m.bytes.insert(m.bytes.end(), 1024, 0);
  m.datas.push_back(words);
  std::string note;
  auto read = profiler::GoModule::read(m, note);
  ASSERT_TRUE(read) << note;
  EXPECT_EQ(read->version(), go->version());
  EXPECT_EQ(read->num_functions(), go->num_functions());
}

// representative_counts (one search per resume point a run of instructions
// crosses) sums to what representative_offset gives instruction by
// instruction, over every defined function of a real Go module: every byte
// offset of its body stands for an instruction here, in runs of 1 to 9
// with different counts, so runs start and end inside resume points, at
// them and at calls.
TEST_F(GoModuleRead, RunsSumAsTheirInstructions) {
  const vm::Module& m = *module;
  size_t instructions = 0, merged = 0;
  std::vector<std::pair<uint32_t, uint64_t>> out;
  for (uint32_t k = 0; k < m.functions.size(); ++k) {
    std::vector<uint32_t> offsets;
    for (uint32_t o = m.functions[k].body_offset; o < m.functions[k].body_end; ++o) offsets.push_back(o);
    std::map<uint32_t, uint64_t> expected, got;
    out.clear();
    for (size_t i = 0, len = 1; i < offsets.size(); i += len, len = len % 9 + 1) {
      const size_t end = std::min(offsets.size(), i + len);
      const uint64_t count = 3 + i % 7;
      for (size_t j = i; j < end; ++j) expected[go->representative_offset(k, offsets[j])] += count;
      go->representative_counts(k, offsets.data() + i, offsets.data() + end, count, out);
    }
    for (const auto& [offset, count] : out) got[offset] += count;
    ASSERT_EQ(got, expected) << m.function_name(k + m.num_imported_funcs);
    instructions += offsets.size();
    merged += expected.size();
  }
  // Most instructions share their resume point's offset.
  EXPECT_LT(merged * 4, instructions);
}

// The samples of `go tool pprof -traces`: each one's frames, leaf first,
// " (inline)" kept on inlined frames.
std::vector<std::vector<std::string>> traces(const std::string& text) {
  std::vector<std::vector<std::string>> out;
  std::istringstream in(text);
  std::string line;
  bool in_sample = false;
  while (std::getline(in, line)) {
    if (line.rfind("-----------+", 0) == 0) {
      out.emplace_back();
      in_sample = true;
      continue;
    }
    if (!in_sample || line.find_first_not_of(' ') == std::string::npos) continue;
    // "     count   frame" or "             frame"; labels ("thread:...") are not frames.
    std::string rest = line.substr(line.find_first_not_of(' '));
    if (std::isdigit(static_cast<unsigned char>(rest[0]))) rest = rest.substr(rest.find_first_of(' '));
    rest = rest.substr(rest.find_first_not_of(' '));
    if (rest.find(':') != std::string::npos && rest.find('[') == std::string::npos &&
        rest.find('.') == std::string::npos)
      continue;
    out.back().push_back(rest);
  }
  std::erase_if(out, [](const auto& s) { return s.empty(); });
  return out;
}

std::string strip_inline(std::string f) {
  if (auto at = f.find(" (inline)"); at != std::string::npos) f.erase(at);
  return f;
}

std::string show(const std::vector<std::string>& frames) {
  std::string s;
  for (const std::string& f : frames) s += "\n    " + f;
  return s;
}

// testdata/go/stacks.go by every Go installed (1.21 to 1.23, plain and with
// GOWASM=satconv,signext): the whole goroutine stack of each shape.
class GoStacks : public GoProfile, public ::testing::WithParamInterface<std::string> {};

TEST_P(GoStacks, WholeGoroutineStacks) {
  const std::string wasm = testdata("go/" + GetParam() + ".wasm");
  if (!std::filesystem::exists(wasm)) GTEST_SKIP() << wasm << " not built (that Go is not installed)";
  Output r = wzvm("--deterministic --profile=instructions --profile-out p.pb.gz '" + wasm + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("total 1003448 depth 40198 closure 9999 kept 100\n"));
  auto samples = traces(pprof("-traces p.pb.gz"));
  ASSERT_FALSE(samples.empty());

  // Every stack ends where a Go stack ends: runtime.goexit for goroutines
  // (runtime.main's is one too), or the scheduler's own (g0) stack, which
  // starts at wasm's entry. Never at wasm_pc_f_loop, where the wasm stack
  // was cut by a goroutine switch.
  for (const auto& s : samples) {
    const std::string& root = s.back();
    if (root == "wasm_pc_f_loop" && s.size() == 2) continue;  // the loop's own instructions
    EXPECT_TRUE(root == "runtime.goexit" || root == "_rt0_wasm_wasip1") << "a stack cut short:" << show(s);
  }

  // consume, started by `go consume(ch, done)`, handles each value after a
  // switch to it (it blocked on the channel): add <- process <- consume
  // (maybe inlined into the go statement's wrapper) <- ... <- goexit.
  bool consumer = false;
  for (const auto& s : samples) {
    if (s.size() < 4 || s[0] != "main.(*acc).add" || s[1] != "main.process") continue;
    consumer = true;
    EXPECT_EQ(strip_inline(s[2]), "main.consume") << show(s);
    EXPECT_EQ(s.back(), "runtime.goexit") << show(s);
  }
  EXPECT_TRUE(consumer) << "no sample of main.(*acc).add";

  // depth(200) recurses 201 frames deep with 1 KiB frames, so its goroutine
  // stack is copied to a larger one several times on the way down (each
  // time the wasm stack is unwound): spin <- 201 x depth <- main.main <-
  // runtime.main <- runtime.goexit, whole.
  bool deep = false;
  for (const auto& s : samples) {
    if (s.size() < 2 || s[0] != "main.spin" || s[1] != "main.depth") continue;
    deep = true;
    std::vector<std::string> want{"main.spin"};
    want.insert(want.end(), 201, "main.depth");
    for (const char* f : {"main.main", "runtime.main", "runtime.goexit"}) want.push_back(f);
    EXPECT_EQ(s, want) << show(s);
  }
  EXPECT_TRUE(deep) << "no sample of main.spin under main.depth";

  // The closure passed to apply: spin <- main.main.func2 (maybe inlined
  // into apply, main.main.func1, itself inlined into main.main) <- main.main.
  bool closure = false;
  for (const auto& s : samples) {
    if (s.size() < 3 || s[0] != "main.spin" || s[1] == "main.depth") continue;
    closure = true;
    std::vector<std::string> names;
    for (const std::string& f : s) names.push_back(strip_inline(f));
    EXPECT_THAT(names, ::testing::Contains("main.main.func2")) << show(s);
    EXPECT_EQ(names.back(), "runtime.goexit") << show(s);
  }
  EXPECT_TRUE(closure) << "no sample of main.spin under the closure";
}

// Go's allocations, hooked at runtime.mallocgc: exact counts and bytes per
// function, equal to what the program measures with runtime.MemStats and to
// Go's own heap profile of the same program run natively (MemProfileRate =
// 1), and to the sizes worked out from testdata/go/allocs.go.
TEST_F(GoProfile, AllocationsMatchGoItself) {
  const std::string wasm = testdata("go/allocs.wasm"), native = testdata("go/allocs.native");
  Output r = wzvm("--deterministic --profile=mem --profile-out mem.pb.gz '" + wasm + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  // newNodes: 1000 x 64 B; buffers: 50 x 1024 B + one 1280 B slice of 50
  // headers; big: 80,000 B in 10 pages of 8 KiB.
  EXPECT_EQ(r.out, "mallocs 1052 bytes 198400\n");
  Output n = sh("HEAPPROFILE=native.pprof '" + native + "'");
  ASSERT_EQ(n.status, 0) << n.err;
  EXPECT_EQ(n.out, r.out) << "the same allocations natively";

  struct Want {
    const char* function;
    double objects, bytes;
  };
  const Want want[] = {{"main.newNodes", 1000, 64000}, {"main.buffers", 51, 52480}, {"main.big", 1, 81920}};
  for (const std::string& file : {std::string("mem.pb.gz"), std::string("native.pprof")}) {
    auto o = cli_test::pprof_top_rows(
        pprof("-sample_index=alloc_objects -top -nodefraction=0 -nodecount=100000 " + file));
    auto b = cli_test::pprof_top_rows(
        pprof("-sample_index=alloc_space -unit=B -top -nodefraction=0 -nodecount=100000 " + file));
    for (const Want& w : want) {
      EXPECT_EQ(o[w.function].second, w.objects) << file << ": " << w.function;
      EXPECT_EQ(b[w.function].second, w.bytes) << file << ": " << w.function;
    }
  }
  // Go frees in its collector: in-use figures are not claimed.
  auto inuse =
      cli_test::pprof_top_rows(pprof("-sample_index=inuse_space -unit=B -top -nodefraction=0 mem.pb.gz"));
  EXPECT_EQ(inuse["main.newNodes"].second, 0);
}

INSTANTIATE_TEST_SUITE_P(Versions, GoStacks,
                         ::testing::Values("stacks-go1.21", "stacks-go1.21-satconv", "stacks-go1.22",
                                           "stacks-go1.22-satconv", "stacks-go1.23", "stacks-go1.23-satconv"),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '.', '_');
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
}  // namespace wzvm
