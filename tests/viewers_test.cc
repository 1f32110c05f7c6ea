// Viewers: --profile-format (folded, speedscope, html), `wzvm report`,
// --profile-summary and the live --pprof-addr endpoint, end to end through
// the built wzvm and the real clients (go tool pprof, curl, headless
// Chromium when installed). Instruction counts of testdata/prof_counts.wat
// are exact, so the expected texts are too.

#include "profiler/viewers.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/cli_fixture.h"

extern char** environ;

namespace wzvm::profiler {
namespace {

namespace fs = std::filesystem;
using namespace wzvm::cli_test;
namespace pb = perftools::profiles;
using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

bool have(const char* tool) {
  return std::system(("command -v " + std::string(tool) + " >/dev/null 2>&1").c_str()) == 0;
}

class Viewers : public CliFixture {};

const std::string kTree = "--invoke tree '" + testdata("prof_counts.wasm") + "'";

TEST_F(Viewers, FoldedLinesAndTheirSumMatchPprof) {
  Output r = wzvm("--profile=instructions --profile-format=pprof,folded --profile-out p " + kTree);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("instructions profile written to p/wzvm-instructions.folded"));
  // tree (5 own) calls leaf once and mid once; mid (6 own) calls leaf (4 per call) three times.
  const std::string folded = slurp(path("p/wzvm-instructions.folded"));
  EXPECT_EQ(folded, "tree 5\ntree;leaf 3\ntree;mid 6\ntree;mid;leaf 12\n");
  // Each line parses as "frames count", and the counts add up to pprof's total.
  std::istringstream in(folded);
  std::string line;
  long sum = 0;
  while (std::getline(in, line)) {
    auto space = line.rfind(' ');
    ASSERT_NE(space, std::string::npos) << line;
    sum += std::stol(line.substr(space + 1));
  }
  EXPECT_EQ(sum, 26);
  EXPECT_THAT(pprof("-top p/wzvm-instructions.pb.gz"), HasSubstr("of 26 total"));
}

TEST_F(Viewers, FormatFromTheOutputFileName) {
  ASSERT_EQ(wzvm("--profile=instructions --profile-out t.folded " + kTree).status, 0);
  EXPECT_EQ(slurp(path("t.folded")), "tree 5\ntree;leaf 3\ntree;mid 6\ntree;mid;leaf 12\n");
  ASSERT_EQ(wzvm("--profile=instructions --profile-out t.html " + kTree).status, 0);
  EXPECT_THAT(slurp(path("t.html")), HasSubstr("<!DOCTYPE html>"));
  Output bad = wzvm("--profile=instructions --profile-format=svg " + kTree);
  EXPECT_EQ(bad.status, 2);
  EXPECT_THAT(bad.err, HasSubstr("--profile-format"));
}

// A profile made by hand: names with the folded separator, and a location
// with an inlined frame (Line entries innermost first).
pb::Profile hand_profile() {
  pb::Profile p;
  for (const char* s : {"", "instructions", "count", "main", "a;b%c", "inl", "f.c"}) p.add_string_table(s);
  auto* st = p.add_sample_type();
  st->set_type(1);
  st->set_unit(2);
  for (int i = 0; i < 3; ++i) {
    auto* f = p.add_function();
    f->set_id(i + 1);
    f->set_name(3 + i);
    f->set_filename(6);
    f->set_start_line(10 * (i + 1));
  }
  auto* l1 = p.add_location();  // main
  l1->set_id(1);
  l1->add_line()->set_function_id(1);
  auto* l2 = p.add_location();  // inl (inlined) in a;b%c at line 21
  l2->set_id(2);
  auto* in = l2->add_line();
  in->set_function_id(3);
  in->set_line(33);
  auto* out = l2->add_line();
  out->set_function_id(2);
  out->set_line(21);
  auto* s = p.add_sample();
  s->add_location_id(2);
  s->add_location_id(1);
  s->add_value(7);
  return p;
}

TEST(ViewersUnit, FoldedEscapesSeparatorsAndExpandsInlinedFrames) {
  EXPECT_EQ(folded_text(hand_profile()), "main;a%3Bb%25c;inl 7\n");
  std::vector<StackFrame> st = sample_stack(hand_profile(), hand_profile().sample(0));
  ASSERT_EQ(st.size(), 3u);
  EXPECT_FALSE(st[1].inlined);
  EXPECT_TRUE(st[2].inlined);
  EXPECT_EQ(st[2].line, 33);
  EXPECT_EQ(st[2].file, "f.c");
}

// The facts of speedscope's file format (its file-format-spec.ts and
// file-format-schema.json) that its importer relies on.
void expect_speedscope_schema(const json& j) {
  EXPECT_EQ(j.at("$schema"), "https://www.speedscope.app/file-format-schema.json");
  const json& frames = j.at("shared").at("frames");
  ASSERT_TRUE(frames.is_array());
  for (const json& f : frames) {
    EXPECT_TRUE(f.at("name").is_string());
    if (f.contains("file")) {
      EXPECT_TRUE(f["file"].is_string());
    }
    if (f.contains("line")) {
      EXPECT_TRUE(f["line"].is_number());
    }
  }
  ASSERT_TRUE(j.at("profiles").is_array());
  ASSERT_FALSE(j["profiles"].empty());
  EXPECT_LT(j.at("activeProfileIndex").get<size_t>(), j["profiles"].size());
  for (const json& p : j["profiles"]) {
    EXPECT_EQ(p.at("type"), "sampled");
    EXPECT_TRUE(p.at("name").is_string());
    const std::string unit = p.at("unit");
    EXPECT_THAT(
        (std::vector<std::string>{"none", "nanoseconds", "microseconds", "milliseconds", "seconds", "bytes"}),
        ::testing::Contains(unit));
    const json &samples = p.at("samples"), &weights = p.at("weights");
    ASSERT_EQ(samples.size(), weights.size());
    double sum = 0;
    for (const json& w : weights) sum += w.get<double>();
    EXPECT_EQ(p.at("startValue").get<double>(), 0);
    EXPECT_EQ(p.at("endValue").get<double>(), sum);
    for (const json& s : samples)
      for (const json& i : s) EXPECT_LT(i.get<size_t>(), frames.size());
  }
}

TEST_F(Viewers, SpeedscopeJsonFollowsTheSchema) {
  ASSERT_EQ(
      wzvm("--profile=instructions --profile-format=speedscope --profile-out s.speedscope.json " + kTree)
          .status,
      0);
  json j = json::parse(slurp(path("s.speedscope.json")));
  expect_speedscope_schema(j);
  ASSERT_EQ(j["profiles"].size(), 1u);
  // Stacks root first: the sample of mid's leaf calls is [tree, mid, leaf].
  const json& frames = j["shared"]["frames"];
  const json& p = j["profiles"][0];
  EXPECT_EQ(p["unit"], "none");
  EXPECT_EQ(p["endValue"], 26);
  bool found = false;
  for (size_t i = 0; i < p["samples"].size(); ++i) {
    std::vector<std::string> names;
    for (const json& f : p["samples"][i]) names.push_back(frames[f.get<size_t>()]["name"]);
    if (names == std::vector<std::string>{"tree", "mid", "leaf"}) {
      found = true;
      EXPECT_EQ(p["weights"][i], 12);
    }
  }
  EXPECT_TRUE(found) << j.dump();

  // A CPU profile: one sampled profile per sample type with weight, the default active.
  ASSERT_EQ(wzvm("--profile=cpu --cpu-hz 10000 --profile-format=speedscope --profile-out c.speedscope.json "
                 "--invoke loop '" +
                 testdata("prof_counts.wasm") + "' 3000000")
                .status,
            0);
  json c = json::parse(slurp(path("c.speedscope.json")));
  expect_speedscope_schema(c);
  EXPECT_EQ(c["profiles"][c["activeProfileIndex"].get<size_t>()]["unit"], "nanoseconds");
}

// The page's embedded profile, as its script reads it.
json html_data(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"profile\">";
  auto b = html.find(open);
  auto e = html.find("</script>", b);
  if (b == std::string::npos || e == std::string::npos) return json();
  return json::parse(html.substr(b + open.size(), e - b - open.size()));
}

int64_t total(const json& node, size_t type) {
  int64_t t = node[1][type].get<int64_t>();
  for (const json& c : node[2]) t += total(c, type);
  return t;
}

TEST_F(Viewers, HtmlIsSelfContainedWithTheProfileEmbedded) {
  ASSERT_EQ(wzvm("--profile=instructions --profile-format=html --profile-out f.html " + kTree).status, 0);
  const std::string html = slurp(path("f.html"));
  // Nothing to fetch: no external scripts, styles or images.
  EXPECT_THAT(html, Not(HasSubstr("src=")));
  EXPECT_THAT(html, Not(HasSubstr("<link")));
  EXPECT_THAT(html, Not(HasSubstr("{{")));
  json d = html_data(html);
  ASSERT_TRUE(d.is_object());
  EXPECT_EQ(d["types"][0][0], "instructions");
  EXPECT_EQ(total(d["root"], 0), 26);
  // root -> tree -> {leaf, mid -> leaf}
  ASSERT_EQ(d["root"][2].size(), 1u);
  const json& tree = d["root"][2][0];
  EXPECT_EQ(d["frames"][tree[0].get<size_t>()][0], "tree");
  EXPECT_EQ(tree[1][0], 5);
  EXPECT_EQ(tree[2].size(), 2u);
}

TEST(ViewersUnit, HtmlEscapesScriptEndInNames) {
  pb::Profile p = hand_profile();
  p.set_string_table(4, "</script><b>");
  const std::string html = flamegraph_html(p, "t <&>");
  EXPECT_THAT(html, HasSubstr("<title>t &lt;&amp;&gt;</title>"));
  EXPECT_THAT(html, Not(HasSubstr("</script><b>")));
  EXPECT_EQ(html_data(html)["frames"][1][0], "</script><b>");
}

// The page in a real browser: the flame graph is drawn with the expected
// frames, and a click on a frame zooms it to the full width. A small script
// appended to the page does the clicking (element.click() runs the page's
// own handler) and writes what it saw into the DOM that Chromium dumps.
TEST_F(Viewers, HtmlRendersAndZoomsInHeadlessChromium) {
  if (!have("chromium")) GTEST_SKIP() << "chromium not installed (scripts/install-deps.sh installs it)";
  ASSERT_EQ(wzvm("--profile=instructions --profile-format=html --profile-out f.html " + kTree).status, 0);
  std::string html = slurp(path("f.html"));
  const std::string probe = R"(<script>
    const boxes = () => [...document.querySelectorAll('#graph .f')];
    const mid = () => boxes().find(e => e.textContent === 'mid');
    const out = [];
    out.push('frames=' + boxes().map(e => e.textContent).sort().join(','));
    out.push('before=' + mid().style.width);
    mid().click();
    out.push('after=' + mid().style.width + ' left=' + mid().style.left);
    out.push('status=' + document.getElementById('status').textContent);
    const pre = document.createElement('pre');
    pre.id = 'probe';
    pre.textContent = out.join('\n');
    document.body.appendChild(pre);
  </script>)";
  html.insert(html.rfind("</body>"), probe);
  std::ofstream(path("probe.html")) << html;
  Output r =
      sh("timeout 60 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
         "--disable-background-networking --disable-component-update --disable-sync "
         "--user-data-dir='" +
         dir_ + "/.chromium' --virtual-time-budget=3000 --dump-dom 'file://" + path("probe.html") + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("frames=all,leaf,leaf,mid,tree"));
  // mid is 18 of 26 instructions wide before the click, everything after.
  EXPECT_THAT(r.out, HasSubstr("before=69.23"));
  EXPECT_THAT(r.out, HasSubstr("after=100% left=0%"));
  EXPECT_THAT(r.out, HasSubstr("zoomed on mid 18 (69.23%)"));
}

TEST_F(Viewers, ReportOfAKnownProfile) {
  ASSERT_EQ(wzvm("--profile=instructions --profile-out i.pb.gz " + kTree).status, 0);
  Output r = wzvm("report --top 2 i.pb.gz");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out,
            "Profile: i.pb.gz\n"
            "Sample types: instructions/count (default)\n"
            "\n"
            "instructions/count: total 26\n"
            "  top 2 by self:\n"
            "          self    self%         cum     cum%  function\n"
            "            15   57.69%          15   57.69%  leaf\n"
            "             6   23.08%          18   69.23%  mid\n"
            "  top 2 by cumulative:\n"
            "          self    self%         cum     cum%  function\n"
            "             5   19.23%          26  100.00%  tree\n"
            "             6   23.08%          18   69.23%  mid\n");
  Output bad = wzvm("report missing.pb.gz");
  EXPECT_EQ(bad.status, 1);
  EXPECT_THAT(bad.err, HasSubstr("missing.pb.gz: cannot open file"));
  std::ofstream(path("junk.pb.gz")) << "\x1f\x8bjunk";
  EXPECT_THAT(wzvm("report junk.pb.gz").err, HasSubstr("not a valid gzip file"));
}

TEST_F(Viewers, SummaryAfterTheRunOnStderr) {
  Output r = wzvm("--profile=instructions --profile-summary --profile-out i.pb.gz " + kTree);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "5\n");
  EXPECT_THAT(r.err, HasSubstr("Profile: instructions profile (i.pb.gz)"));
  EXPECT_THAT(r.err, HasSubstr("            15   57.69%          15   57.69%  leaf\n"));
  // Not a terminal: no progress line.
  EXPECT_THAT(r.err, Not(HasSubstr("profiling:")));
}

// wzvm running a long guest in the background with --pprof-addr on a free
// loopback port; killed at the end of the test.
class LiveGuest {
 public:
  // prof_counts.wasm's `loop` export, n iterations.
  LiveGuest(const std::string& dir, const std::vector<std::string>& flags, const std::string& n)
      : LiveGuest(dir, flags, {"--invoke", "loop", testdata("prof_counts.wasm"), n}) {}
  // Any guest (`guest`: the module and its arguments). With `stdin_pipe`
  // its stdin is a pipe this object holds open, so a guest reading it
  // blocks until the end of the test.
  LiveGuest(const std::string& dir, const std::vector<std::string>& flags,
            const std::vector<std::string>& guest, bool stdin_pipe = false) {
    err_ = dir + "/guest.err";
    std::vector<std::string> args = {WZVM_BINARY, "--pprof-addr", "127.0.0.1:0"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), guest.begin(), guest.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    int in[2] = {-1, -1};
    if (stdin_pipe && pipe2(in, O_CLOEXEC) == 0) {
      posix_spawn_file_actions_adddup2(&fa, in[0], 0);
      stdin_ = in[1];
    }
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (posix_spawn(&pid_, WZVM_BINARY, &fa, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
    if (in[0] >= 0) close(in[0]);
    // The URL is printed before the guest starts.
    for (int i = 0; i < 500 && url_.empty(); ++i) {
      std::string e = slurp(err_);
      if (auto at = e.find("serving pprof at ");
          at != std::string::npos && e.find('\n', at) != std::string::npos) {
        url_ = e.substr(at + 17, e.find("/debug/pprof/", at) - at - 17);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  ~LiveGuest() {
    if (stdin_ >= 0) close(stdin_);
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  const std::string& url() const { return url_; }
  std::string err() const { return slurp(err_); }

 private:
  pid_t pid_ = -1;
  int stdin_ = -1;  // write end of the guest's stdin pipe
  std::string err_, url_;
};

// A loop export that runs far longer than any test: about 13 instructions per
// iteration, 2^31 iterations.
// A guest that runs until the test ends: live_forever.wasm's `forever`,
// which calls its `loop` again and again.
std::vector<std::string> forever() { return {"--invoke", "forever", testdata("live_forever.wasm")}; }

TEST_F(Viewers, LiveCpuProfileThroughGoToolPprof) {
  LiveGuest g(dir_, {}, forever());
  ASSERT_THAT(g.url(), HasSubstr("http://127.0.0.1:")) << g.err();
  std::string raw = pprof("-raw '" + g.url() + "/debug/pprof/profile?seconds=1'");
  EXPECT_THAT(raw, HasSubstr("samples/count cpu/nanoseconds[dflt] host/nanoseconds"));
  EXPECT_THAT(raw, HasSubstr(" loop "));
  EXPECT_THAT(raw, HasSubstr("live_forever.wasm"));
  std::string top = pprof("-top '" + g.url() + "/debug/pprof/profile?seconds=1'");
  EXPECT_THAT(top, HasSubstr("loop"));
}

TEST_F(Viewers, LiveIndexConflictAndUnavailable) {
  if (!have("curl")) GTEST_SKIP() << "curl not installed";
  LiveGuest g(dir_, {}, forever());
  ASSERT_FALSE(g.url().empty()) << g.err();
  auto curl = [&](const std::string& p) {
    return sh("curl -s -w ' HTTP%{http_code}' '" + g.url() + p + "'").out;
  };
  EXPECT_THAT(curl("/debug/pprof/"), HasSubstr("HTTP200"));
  EXPECT_THAT(curl("/debug/pprof/"), HasSubstr("profile?seconds=30"));
  // A second CPU profile while one is being taken is refused, not mixed in.
  std::thread first([&] { sh("curl -s -o first.pb.gz '" + g.url() + "/debug/pprof/profile?seconds=2'"); });
  std::string second;
  for (int i = 0; i < 50; ++i) {  // until the first request has opened its window
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
    second = curl("/debug/pprof/profile?seconds=1");
    if (second.find("HTTP409") != std::string::npos) break;
  }
  first.join();
  EXPECT_THAT(second, HasSubstr("HTTP409"));
  EXPECT_THAT(second, HasSubstr("one at a time"));
  EXPECT_THAT(pprof("-top first.pb.gz"), HasSubstr("loop"));
  EXPECT_THAT(curl("/debug/pprof/profile?seconds=abc"), HasSubstr("HTTP400"));
  EXPECT_THAT(curl("/debug/pprof/heap"), HasSubstr("HTTP501"));
  EXPECT_THAT(curl("/debug/pprof/allocs"), HasSubstr("start wzvm with --profile=mem"));
  EXPECT_THAT(curl("/debug/pprof/instructions?seconds=1"), HasSubstr("--profile=instructions"));
  EXPECT_THAT(curl("/debug/pprof/nope"), HasSubstr("HTTP404"));
}

TEST_F(Viewers, LiveInstructionsWindow) {
  LiveGuest g(dir_, {"--profile=instructions", "--profile-out", path("end.pb.gz")}, forever());
  ASSERT_FALSE(g.url().empty()) << g.err();
  Output r = sh("curl -s '" + g.url() + "/debug/pprof/instructions?seconds=0.5&debug=1'");
  EXPECT_THAT(r.out, HasSubstr("instructions/count: total "));
  EXPECT_THAT(r.out, HasSubstr("100.00%  loop"));
}

// /debug/pprof/heap and /allocs while a C guest allocates in a loop: the
// profile so far, through go tool pprof, with Go's default sample types.
TEST_F(Viewers, LiveHeapAndAllocsWhileTheGuestAllocates) {
  LiveGuest g(dir_, {"--profile=mem", "--profile-out", path("end.pb.gz")},
              {testdata("mem/live_c.wasm"), "spin"});
  ASSERT_THAT(g.url(), HasSubstr("http://127.0.0.1:")) << g.err();
  // `hold` keeps 100 blocks of 1000 bytes; `churn` frees each of its own.
  std::string heap = pprof("-top -unit=b '" + g.url() + "/debug/pprof/heap'");
  EXPECT_THAT(heap, HasSubstr("Type: inuse_space"));
  EXPECT_THAT(heap, ::testing::ContainsRegex("100000B +[0-9.]+% +[0-9.]+% +100000B +[0-9.]+% +hold"));
  std::string objects = pprof("-top -sample_index=inuse_objects '" + g.url() + "/debug/pprof/heap'");
  EXPECT_THAT(objects, ::testing::ContainsRegex("\\b100 +[0-9.]+% +[0-9.]+% +100 +[0-9.]+% +hold"));
  // allocs: the same profile, alloc_space by default, where churn's
  // millions of blocks show although none of them is still in use.
  std::string allocs = pprof("-top '" + g.url() + "/debug/pprof/allocs'");
  EXPECT_THAT(allocs, HasSubstr("Type: alloc_space"));
  EXPECT_THAT(allocs, HasSubstr("churn"));
  EXPECT_THAT(pprof("-raw '" + g.url() + "/debug/pprof/allocs'"), HasSubstr("allocator:[malloc]"));
  // Many requests at once share snapshots and all get an answer, round
  // after round. Each builds its profile, and reads the module's DWARF, on a
  // server thread of its own, and a CPU profile is being built meanwhile:
  // readers that ran together inside libdwarf corrupted the heap and killed
  // the guest within a few rounds (profiler/symbolize.cc).
  auto curl_to = [&](const std::string& file, const std::string& what) {
    std::system(("curl -s --max-time 20 -o '" + path(file) + "' '" + g.url() + what + "'").c_str());
  };
  std::thread cpu([&] { curl_to("cpu.txt", "/debug/pprof/profile?seconds=2&debug=1"); });
  constexpr int kRounds = 5, kClients = 8;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<std::thread> clients;
    for (int i = 0; i < kClients; ++i)
      clients.emplace_back([&, i] {
        curl_to("mem" + std::to_string(i) + ".txt",
                i % 2 ? "/debug/pprof/allocs?debug=1" : "/debug/pprof/heap?debug=1");
      });
    for (std::thread& t : clients) t.join();
    for (int i = 0; i < kClients; ++i) {
      std::string text = slurp(path("mem" + std::to_string(i) + ".txt"));
      EXPECT_THAT(text, HasSubstr(i % 2 ? "Profile: allocs\n" : "Profile: heap\n"))
          << "round " << round << "\n"
          << g.err();
      EXPECT_THAT(text,
                  ::testing::ContainsRegex("inuse_objects/count: total [0-9]+\n.*\n.*\n +100 +[0-9.]+% +100 "
                                           "+[0-9.]+% +hold\n"))
          << "round " << round;
      std::filesystem::remove(path("mem" + std::to_string(i) + ".txt"));
    }
  }
  cpu.join();
  EXPECT_THAT(slurp(path("cpu.txt")), HasSubstr("Profile: profile\n"));
  EXPECT_THAT(slurp(path("cpu.txt")), HasSubstr("churn"));
  Output bad = sh("curl -s -w ' HTTP%{http_code}' '" + g.url() + "/debug/pprof/heap?seconds=5'");
  EXPECT_THAT(bad.out, HasSubstr("HTTP400"));
  EXPECT_THAT(bad.out, HasSubstr("-diff_base"));
}

// A guest blocked in a host call (reading a stdin that never ends) reaches
// no safe point: the heap profile is read while it waits, not after.
TEST_F(Viewers, LiveHeapWhileTheGuestIsBlockedInAHostCall) {
  LiveGuest g(dir_, {"--profile=mem", "--profile-out", path("end.pb.gz")},
              {testdata("mem/live_c.wasm"), "block"}, true);
  ASSERT_THAT(g.url(), HasSubstr("http://127.0.0.1:")) << g.err();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // well inside fd_read by now
  Output r = sh("curl -s --max-time 10 -o heap.pb.gz -w '%{http_code}' '" + g.url() + "/debug/pprof/heap'");
  ASSERT_EQ(r.out, "200") << g.err();
  std::string top = pprof("-top -unit=b heap.pb.gz");
  EXPECT_THAT(top, ::testing::ContainsRegex("100000B +[0-9.]+% +[0-9.]+% +100000B +[0-9.]+% +hold"));
  EXPECT_THAT(top, Not(HasSubstr("churn")));
}

TEST_F(Viewers, LiveEndpointEndsWithTheGuest) {
  // A short guest: wzvm serves while it runs, then exits normally and writes
  // its profile as usual.
  Output r = wzvm("--pprof-addr 127.0.0.1:0 --profile=instructions --profile-out i.pb.gz " + kTree);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("serving pprof at http://127.0.0.1:"));
  EXPECT_TRUE(fs::exists(path("i.pb.gz")));
  Output bad = wzvm("--pprof-addr nonsense " + kTree);
  EXPECT_EQ(bad.status, 1);
  EXPECT_THAT(bad.err, HasSubstr("--pprof-addr nonsense: expected HOST:PORT"));
}

TEST_F(Viewers, LiveEndpointWithoutItsPlugin) {
  // The HTTP server is a plugin beside the binary (profiler/http.h): a wzvm
  // copied without it still runs everything else, and --pprof-addr says
  // which file it could not load, before the guest starts.
  fs::copy_file(WZVM_BINARY, path("wzvm"));
  Output r = sh("./wzvm --pprof-addr 127.0.0.1:0 " + kTree);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err,
              HasSubstr("--pprof-addr: cannot load the HTTP server plugin: neither " + path("wzvm-http.so") +
                        " nor " + path("../lib/wzvm/wzvm-http.so") + " exists"));
  Output plain = sh("./wzvm --profile=instructions --profile-out i.pb.gz " + kTree);
  EXPECT_EQ(plain.status, 0) << plain.err;
  EXPECT_TRUE(fs::exists(path("i.pb.gz")));
}

}  // namespace
}  // namespace wzvm::profiler
