// profiler/: the pprof writers and the aggregation behind them, driven by
// hand (calls into the ProfileSink as the interpreter makes them) so every
// number in the written profile is known; the profiles are read back with
// protobuf (a round trip through the wire format and gzip).

#include "profiler/profiler.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "profiler/instruction_profile.h"
#include "profiler/output.h"
#include "profiler/pprof.h"
#include "profiler/text.h"
#include "tests/pprof_read.h"
#include "vm/interp.h"
#include "vm/module.h"
#include "vm/runtime.h"
#include "vm/span_table.h"

namespace wzvm::profiler {
namespace {

namespace fs = std::filesystem;
namespace pb = perftools::profiles;

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

using test::gunzip;
using test::read_profile;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/wzvm-prof-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path_)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  std::string path_;
};

// The prof_counts module, instantiated, plus one host function standing in
// for a WASI import; the profiler is fed by hand.
struct Fixture {
  std::shared_ptr<const vm::Module> module;
  vm::Store store;
  vm::Instance* inst = nullptr;
  vm::FuncInst* host = nullptr;
  Fixture() {
    auto m = vm::load_module(read_bytes(std::string(WZVM_TESTDATA_DIR) + "/prof_counts.wasm"));
    EXPECT_TRUE(m) << m.error().to_string();
    module = m.value();
    auto i = store.instantiate(module, {});
    EXPECT_TRUE(i);
    inst = i.value();
    host = store.add_host_func("wasi_snapshot_preview1", "fd_read", {},
                               [](vm::HostContext&, auto, auto) { return vm::Trap{}; });
  }
  vm::FuncInst* func(const char* export_name) { return inst->exported_func(export_name); }
  uint32_t body_offset(const vm::FuncInst* f) const {
    return module->functions[f->func_index - module->num_imported_funcs].body_offset;
  }
};

std::string str(const pb::Profile& p, int64_t i) { return p.string_table(static_cast<int>(i)); }

// "leaf;...;root" of a sample, by function names.
std::string stack_of(const pb::Profile& p, const pb::Sample& s) {
  std::string out;
  for (uint64_t id : s.location_id()) {
    const pb::Location& loc = p.location(static_cast<int>(id - 1));
    EXPECT_EQ(loc.id(), id);
    const pb::Function& f = p.function(static_cast<int>(loc.line(0).function_id() - 1));
    if (!out.empty()) out += ";";
    out += str(p, f.name());
  }
  return out;
}

TEST(ProfilerWriter, CpuProfileHasStacksHostFramesAndTimes) {
  Fixture fx;
  Profiler prof({.cpu = true, .cpu_hz = 250});
  prof.add_module(fx.module.get(), "dir/prof_counts.wasm");
  std::string why;
  ASSERT_TRUE(prof.start(fx.store, why)) << why;  // sets the start time
  prof.stop();
  vm::Profiling& p = prof.profiling();
  vm::FuncInst* tree = fx.func("tree");
  vm::FuncInst* loop = fx.func("loop");
  uint32_t n_tree = p.enter(vm::CallTree::kRoot, tree);
  uint32_t n_loop = p.enter(n_tree, loop);
  uint32_t n_host = p.enter(n_tree, fx.host);
  // Three samples in loop at two offsets, one in tree; a host call twice.
  prof.on_cpu_sample(n_loop, loop, 0x40, 1000);
  prof.on_cpu_sample(n_loop, loop, 0x40, 3000);
  prof.on_cpu_sample(n_loop, loop, 0x44, 500);
  prof.on_cpu_sample(n_tree, tree, 0x60, 700);
  prof.on_host_call(n_host, 2000000);
  prof.on_host_call(n_host, 1000000);

  TempDir dir;
  std::string path = dir.path() + "/cpu.pb.gz";
  ASSERT_TRUE(write_profile(build_cpu_profile(prof), path, why)) << why;
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"cpu.pb.gz"});  // no temporary left
  pb::Profile pr = read_profile(path);

  ASSERT_EQ(pr.string_table(0), "");
  ASSERT_EQ(pr.sample_type_size(), 3);
  EXPECT_EQ(str(pr, pr.sample_type(0).type()) + "/" + str(pr, pr.sample_type(0).unit()), "samples/count");
  EXPECT_EQ(str(pr, pr.sample_type(1).type()) + "/" + str(pr, pr.sample_type(1).unit()), "cpu/nanoseconds");
  EXPECT_EQ(str(pr, pr.sample_type(2).type()) + "/" + str(pr, pr.sample_type(2).unit()), "host/nanoseconds");
  EXPECT_EQ(str(pr, pr.default_sample_type()), "cpu");
  EXPECT_EQ(str(pr, pr.period_type().type()), "cpu");
  EXPECT_EQ(pr.period(), 4000000);  // 1e9 / 250 Hz

  ASSERT_EQ(pr.mapping_size(), 1);
  EXPECT_EQ(pr.mapping(0).id(), 1u);
  EXPECT_EQ(str(pr, pr.mapping(0).filename()), "dir/prof_counts.wasm");
  EXPECT_TRUE(pr.mapping(0).has_functions());
  EXPECT_FALSE(pr.mapping(0).has_filenames());
  EXPECT_FALSE(pr.mapping(0).has_line_numbers());
  EXPECT_EQ(pr.mapping(0).memory_limit(), fx.module->bytes.size());

  // Samples: sorted by (node, offset), then host calls.
  ASSERT_EQ(pr.sample_size(), 4);
  EXPECT_EQ(stack_of(pr, pr.sample(0)), "tree");
  EXPECT_EQ(pr.sample(0).value(0), 1);
  EXPECT_EQ(pr.sample(0).value(1), 700);
  EXPECT_EQ(stack_of(pr, pr.sample(1)), "loop;tree");
  EXPECT_EQ(pr.sample(1).value(0), 2);
  EXPECT_EQ(pr.sample(1).value(1), 4000);
  EXPECT_EQ(pr.sample(1).value(2), 0);
  EXPECT_EQ(stack_of(pr, pr.sample(2)), "loop;tree");
  EXPECT_EQ(pr.sample(2).value(1), 500);
  EXPECT_EQ(stack_of(pr, pr.sample(3)), "wasi_snapshot_preview1.fd_read;tree");
  EXPECT_EQ(pr.sample(3).value(0), 0);
  EXPECT_EQ(pr.sample(3).value(1), 0);
  EXPECT_EQ(pr.sample(3).value(2), 3000000);
  ASSERT_EQ(pr.sample(3).label_size(), 1);
  EXPECT_EQ(str(pr, pr.sample(3).label(0).key()), "calls");
  EXPECT_EQ(pr.sample(3).label(0).num(), 2);

  // Leaf addresses are the sampled offsets; callers entered with no call
  // site (enter() without a return point) are function-level (the
  // function's first instruction); the host function has no mapping.
  auto loc = [&](uint64_t id) { return pr.location(static_cast<int>(id - 1)); };
  EXPECT_EQ(loc(pr.sample(1).location_id(0)).address(), 0x40u);
  EXPECT_EQ(loc(pr.sample(2).location_id(0)).address(), 0x44u);
  EXPECT_EQ(loc(pr.sample(1).location_id(1)).address(), fx.body_offset(tree));
  EXPECT_EQ(loc(pr.sample(1).location_id(1)).mapping_id(), 1u);
  EXPECT_EQ(loc(pr.sample(3).location_id(0)).mapping_id(), 0u);
  // The same function-level location is shared by every stack that needs it.
  EXPECT_EQ(pr.sample(1).location_id(1), pr.sample(3).location_id(1));

  EXPECT_GT(pr.time_nanos(), 1600000000000000000);  // after 2020
  EXPECT_GE(pr.duration_nanos(), 0);
}

// Nodes are keyed by call site: the same callee called from two places is
// two nodes, and each caller's Location is its call instruction. A
// recursive call (the callee already on the path) is keyed by function only,
// so its caller is function-level.
TEST(ProfilerWriter, CallersAreAtTheirCallSites) {
  Fixture fx;
  Profiler prof({.cpu = true});
  vm::CallTree& t = prof.profiling().tree;
  vm::FuncInst *tree = fx.func("tree"), *loop = fx.func("loop"), *pick = fx.func("pick");
  const uint32_t a = fx.body_offset(tree) + 2, b = fx.body_offset(tree) + 6, c = fx.body_offset(loop) + 4;
  uint32_t n_tree = prof.profiling().enter(vm::CallTree::kRoot, tree);
  uint32_t n_loop_a = t.call(n_tree, loop, a), n_loop_b = t.call(n_tree, loop, b);
  EXPECT_NE(n_loop_a, n_loop_b);
  EXPECT_EQ(t.call(n_tree, loop, a), n_loop_a);
  EXPECT_EQ(t.node(n_loop_a).site, a);
  uint32_t n_pick = t.call(n_loop_a, pick, c);
  // loop -> loop: recursive, whatever the site.
  uint32_t n_rec = t.call(n_loop_a, loop, c + 7);
  EXPECT_EQ(t.node(n_rec).site, vm::CallTree::kNoSite);
  EXPECT_EQ(t.call(n_loop_a, loop, c + 9), n_rec);
  // Under the recursion, a call that is not recursive has its site again.
  EXPECT_EQ(t.node(t.call(n_rec, pick, c)).site, c);

  prof.on_cpu_sample(n_loop_a, loop, 0x40, 100);
  prof.on_cpu_sample(n_loop_b, loop, 0x40, 200);
  prof.on_cpu_sample(n_pick, pick, 0x50, 300);
  prof.on_cpu_sample(n_rec, loop, 0x44, 400);
  pb::Profile pr = build_cpu_profile(prof);
  auto addresses = [&](const pb::Sample& s) {
    std::vector<uint64_t> out;
    for (uint64_t id : s.location_id()) out.push_back(pr.location(static_cast<int>(id - 1)).address());
    return out;
  };
  ASSERT_EQ(pr.sample_size(), 4);  // in node order
  EXPECT_EQ(addresses(pr.sample(0)), (std::vector<uint64_t>{0x40, a}));
  EXPECT_EQ(addresses(pr.sample(1)), (std::vector<uint64_t>{0x40, b}));
  EXPECT_EQ(addresses(pr.sample(2)), (std::vector<uint64_t>{0x50, c, a}));
  EXPECT_EQ(addresses(pr.sample(3)), (std::vector<uint64_t>{0x44, fx.body_offset(loop), a}));
  EXPECT_EQ(stack_of(pr, pr.sample(3)), "loop;loop;tree");
}

TEST(ProfilerWriter, InstructionsProfileIsDeterministic) {
  auto make = [](std::string& bytes) {
    Fixture fx;
    Profiler prof({.instructions = true});
    prof.add_module(fx.module.get(), "prof_counts.wasm");
    vm::Profiling& p = prof.profiling();
    uint32_t n_tree = p.enter(vm::CallTree::kRoot, fx.func("tree"));
    uint32_t n_loop = p.enter(n_tree, fx.func("loop"));
    uint32_t n_host = p.enter(n_loop, fx.host);
    // One sample per stack and instruction (offsets as the VM reports them).
    const uint32_t tree_at = fx.func("tree")->code->source_map.front().second;
    const uint32_t loop_at = fx.func("loop")->code->source_map.front().second;
    prof.set_instruction_counts({{n_tree, tree_at, 5}, {n_loop, loop_at, 13000}, {n_loop, loop_at + 2, 5}});
    (void)n_host;  // host functions execute no wasm instructions: no sample
    pb::Profile pr = build_instructions_profile(prof);
    EXPECT_EQ(pr.time_nanos(), 0);
    EXPECT_EQ(pr.duration_nanos(), 0);
    EXPECT_TRUE(pr.SerializeToString(&bytes));
    EXPECT_EQ(serialize_instructions_profile(prof), bytes);  // what the CLI writes
    return pr;
  };
  std::string a, b;
  pb::Profile pr = make(a);
  make(b);
  EXPECT_EQ(a, b);

  ASSERT_EQ(pr.sample_type_size(), 1);
  EXPECT_EQ(str(pr, pr.sample_type(0).type()), "instructions");
  EXPECT_EQ(str(pr, pr.sample_type(0).unit()), "count");
  EXPECT_EQ(str(pr, pr.default_sample_type()), "instructions");
  EXPECT_EQ(pr.period(), 1);
  ASSERT_EQ(pr.sample_size(), 3);
  EXPECT_EQ(stack_of(pr, pr.sample(0)), "tree");
  EXPECT_EQ(pr.sample(0).value(0), 5);
  EXPECT_EQ(stack_of(pr, pr.sample(1)), "loop;tree");
  EXPECT_EQ(pr.sample(1).value(0), 13000);
  EXPECT_EQ(stack_of(pr, pr.sample(2)), "loop;tree");
  EXPECT_EQ(pr.sample(2).value(0), 5);
  // Each instruction has its own location, at its own address.
  EXPECT_NE(pr.sample(1).location_id(0), pr.sample(2).location_id(0));
  EXPECT_EQ(pr.location(static_cast<int>(pr.sample(2).location_id(0)) - 1).address(),
            pr.location(static_cast<int>(pr.sample(1).location_id(0)) - 1).address() + 2);
}

// The CLI writes instruction profiles serialized sample by sample
// (serialize_instructions_profile): the bytes must be those of the message,
// also for deep stacks where consecutive samples share a node or do not,
// nodes that return to an earlier depth, and modules without lines.
TEST(ProfilerWriter, StreamedInstructionsProfileIsTheMessagesBytes) {
  Fixture fx;
  Profiler prof({.instructions = true});
  prof.add_module(fx.module.get(), "prof_counts.wasm");
  vm::Profiling& p = prof.profiling();
  vm::CallTree& t = p.tree;
  const uint32_t loop_at = fx.func("loop")->code->source_map.front().second;
  const uint32_t tree_at = fx.func("tree")->code->source_map.front().second;
  std::vector<vm::Profiling::InstructionCount> counts;
  uint32_t node = p.enter(vm::CallTree::kRoot, fx.func("tree"));
  counts.push_back({node, tree_at, 1});
  std::vector<uint32_t> chain;
  for (uint32_t depth = 0; depth < 300; ++depth) {
    node = t.call(node, fx.func(depth % 3 ? "loop" : "tree"), depth % 5 ? loop_at + 1 : tree_at + 1);
    chain.push_back(node);
    for (uint32_t i = 0; i < depth % 4 + 1; ++i)
      counts.push_back({node, (depth % 3 ? loop_at : tree_at) + i, depth + i + 1});
  }
  // A sibling branch from the middle of the chain: the next sample's node
  // is shallower than the last one's.
  uint32_t side = t.call(chain[150], fx.func("pick"), loop_at + 2);
  counts.push_back({side, fx.func("pick")->code->source_map.front().second, 7});
  counts.push_back({chain[10], loop_at + 3, 2});
  prof.set_instruction_counts(counts);

  pb::Profile message = build_instructions_profile(prof);
  std::string bytes;
  ASSERT_TRUE(message.SerializeToString(&bytes));
  std::vector<std::string> without;
  EXPECT_EQ(serialize_instructions_profile(prof, &without), bytes);
  EXPECT_EQ(without, modules_without_lines(message));
  EXPECT_EQ(message.sample_size(), static_cast<int>(counts.size()));
  // The deepest stack, 301 frames: its innermost and outermost 128 and one
  // "[frames-elided]" between them (pprof.cc, kStackEnd).
  EXPECT_EQ(message.sample(static_cast<int>(counts.size()) - 3).location_id_size(), 257);
}

// Caller Locations are numbered by how many samples' stacks hold them
// (pprof.cc, intern_callers_by_weight): 200 call sites used by one sample
// each are made first, then a chain of 60 calls whose sites every deeper
// sample repeats. In order of first use the chain's sites would have ids
// above 200 (two bytes each); by weight they take the ids below 128. The
// stacks must be what the tree says, whatever the ids.
TEST(ProfilerWriter, CallerLocationsAreNumberedByWeight) {
  Fixture fx;
  Profiler prof({.instructions = true});
  prof.add_module(fx.module.get(), "prof_counts.wasm");
  vm::Profiling& p = prof.profiling();
  vm::CallTree& t = p.tree;
  vm::FuncInst *tree = fx.func("tree"), *loop = fx.func("loop");
  const uint32_t loop_at = loop->code->source_map.front().second;
  const uint32_t base = fx.body_offset(tree);
  std::vector<vm::Profiling::InstructionCount> counts;
  const uint32_t root = p.enter(vm::CallTree::kRoot, tree);
  for (uint32_t i = 0; i < 200; ++i) counts.push_back({t.call(root, loop, base + 1000 + i), loop_at, i + 1});
  uint32_t node = root;
  for (uint32_t depth = 0; depth < 60; ++depth) {
    node = t.child(node, depth % 2 ? tree : loop, base + 2000 + depth);  // a site each, recursive or not
    counts.push_back({node, loop_at + depth % 3, depth + 7});
  }
  prof.set_instruction_counts(counts);
  pb::Profile pr = build_instructions_profile(prof);
  std::string bytes;
  ASSERT_TRUE(pr.SerializeToString(&bytes));
  EXPECT_EQ(serialize_instructions_profile(prof), bytes);
  for (int i = 0; i < pr.location_size(); ++i) ASSERT_EQ(pr.location(i).id(), static_cast<uint64_t>(i + 1));
  // Each sample's stack by address: its leaf, then each caller's call site.
  ASSERT_EQ(pr.sample_size(), static_cast<int>(counts.size()));
  for (int i = 0; i < pr.sample_size(); ++i) {
    const pb::Sample& s = pr.sample(i);
    std::vector<uint64_t> got, want{counts[i].offset};
    for (uint64_t id : s.location_id()) got.push_back(pr.location(static_cast<int>(id - 1)).address());
    for (uint32_t c = counts[i].node; t.node(c).parent != vm::CallTree::kRoot; c = t.node(c).parent) {
      ASSERT_NE(t.node(c).site, vm::CallTree::kNoSite);
      want.push_back(t.node(c).site);
    }
    EXPECT_EQ(got, want) << "sample " << i;
    EXPECT_EQ(s.value(0), static_cast<int64_t>(counts[i].count));
  }
  // The deepest stack's callers: the chain's sites, each in the stacks of
  // the samples below it; all but the innermost (in one stack, as each of
  // the 200 is) in one byte.
  const pb::Sample& deepest = pr.sample(pr.sample_size() - 1);
  ASSERT_EQ(deepest.location_id_size(), 61);
  for (int i = 2; i < deepest.location_id_size(); ++i) EXPECT_LT(deepest.location_id(i), 128u) << i;
  // The chain's outermost site is in every chain sample's stack: id 1.
  EXPECT_EQ(deepest.location_id(60), 1u);
}

// The CLI gzips the instructions profile into its file as it is made
// (write_instructions_profile): the file must hold the bytes that gzipping
// the whole serialization gives, also past the writer's 1 MiB buffer (6000
// samples of 257 frames).
TEST(ProfilerWriter, WrittenInstructionsProfileIsTheWholeGzipped) {
  Fixture fx;
  Profiler prof({.instructions = true});
  prof.add_module(fx.module.get(), "prof_counts.wasm");
  vm::Profiling& p = prof.profiling();
  const uint32_t loop_at = fx.func("loop")->code->source_map.front().second;
  std::vector<vm::Profiling::InstructionCount> counts;
  uint32_t node = p.enter(vm::CallTree::kRoot, fx.func("tree"));
  for (uint32_t depth = 0; depth < 6000; ++depth) {
    node = p.tree.call(node, fx.func("loop"), loop_at + 1 + depth % 2);
    counts.push_back({node, loop_at + depth % 3, depth + 1});
  }
  prof.set_instruction_counts(counts);
  const std::string raw = serialize_instructions_profile(prof);
  ASSERT_GT(raw.size(), size_t{1} << 20);
  pb::Profile message = build_instructions_profile(prof);
  std::string bytes, gz, why;
  ASSERT_TRUE(message.SerializeToString(&bytes));
  EXPECT_EQ(raw, bytes);
  ASSERT_TRUE(gzip(raw, gz, why)) << why;
  TempDir dir;
  std::vector<std::string> without;
  ASSERT_TRUE(write_instructions_profile(prof, dir.path() + "/i.pb.gz", why, &without)) << why;
  const std::vector<uint8_t> file = read_bytes(dir.path() + "/i.pb.gz");
  EXPECT_TRUE(std::string(file.begin(), file.end()) == gz) << "not gzip()'s bytes";
  EXPECT_EQ(without, modules_without_lines(message));
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"i.pb.gz"});
  // A directory that does not exist: an error naming the file, nothing left.
  EXPECT_FALSE(write_instructions_profile(prof, dir.path() + "/missing/i.pb.gz", why));
  EXPECT_NE(why.find("missing/i.pb.gz"), std::string::npos) << why;
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"i.pb.gz"});
}

TEST(ProfilerWriter, InstructionTextIsSortedWithATotal) {
  Fixture fx;
  Profiler prof({.instructions = true});
  vm::Profiling& p = prof.profiling();
  uint32_t n_tree = p.enter(vm::CallTree::kRoot, fx.func("tree"));
  uint32_t n_mid = p.enter(n_tree, fx.func("loop"));
  uint32_t n_pick = p.enter(n_tree, fx.func("pick"));
  uint32_t n_pick2 = p.enter(n_mid, fx.func("pick"));
  prof.set_instruction_counts(
      {{n_tree, 10, 5}, {n_mid, 20, 7}, {n_pick, 30, 1}, {n_pick, 31, 2}, {n_pick2, 30, 3}});
  // pick is counted once per stack but totals are per function: 6; ties by name.
  EXPECT_EQ(instruction_text(prof), "7 loop\n6 pick\n5 tree\n18 total\n");
}

TEST(ProfilerOutput, AtomicWriteReplacesWholeOrLeavesNothing) {
  TempDir dir;
  std::string path = dir.path() + "/x.pb.gz", why;
  ASSERT_TRUE(write_file_atomic(path, "first", why)) << why;
  ASSERT_TRUE(write_file_atomic(path, "second", why)) << why;
  std::vector<uint8_t> got = read_bytes(path);
  EXPECT_EQ(std::string(got.begin(), got.end()), "second");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"x.pb.gz"});
  // A directory that does not exist: an error naming it, no file anywhere.
  EXPECT_FALSE(write_file_atomic(dir.path() + "/missing/x.pb.gz", "data", why));
  EXPECT_NE(why.find("missing"), std::string::npos) << why;
  // The target is a directory: rename fails, the temporary is removed.
  fs::create_directory(dir.path() + "/d");
  EXPECT_FALSE(write_file_atomic(dir.path() + "/d", "data", why));
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"d", "x.pb.gz"}));
}

TEST(ProfilerOutput, GzipIsReproducible) {
  std::string a, b, why;
  std::string data(10000, 'x');
  ASSERT_TRUE(gzip(data, a, why));
  ASSERT_TRUE(gzip(data, b, why));
  EXPECT_EQ(a, b);
  EXPECT_EQ(gunzip(a), data);
}

// zlib's output does not depend on how its input was split: a file written
// in pieces holds gzip()'s bytes for the whole.
TEST(ProfilerOutput, GzipFileWriterWritesGzipsBytesOrNothing) {
  std::string data;
  uint32_t x = 1;
  for (int i = 0; i < 3'000'000; ++i) {
    x = x * 1103515245u + 12345u;
    data += static_cast<char>(i % 1000 < 700 ? 'a' + i % 7 : static_cast<char>(x >> 24));
  }
  std::string gz, why;
  ASSERT_TRUE(gzip(data, gz, why)) << why;
  TempDir dir;
  const std::string path = dir.path() + "/x.gz";
  {
    GzipFileWriter w(path);
    size_t at = 0;
    for (size_t piece : {size_t{1}, size_t{7}, size_t{65536}, size_t{1} << 20, size_t{0}, size_t{3}}) {
      w.write(std::string_view(data).substr(at, piece));
      at += piece;
    }
    w.write(std::string_view(data).substr(at));
    const std::vector<std::string> during = dir.entries();
    EXPECT_EQ(std::count(during.begin(), during.end(), "x.gz"), 0) << "visible before finish()";
    ASSERT_TRUE(w.finish(why)) << why;
  }
  const std::vector<uint8_t> file = read_bytes(path);
  EXPECT_TRUE(std::string(file.begin(), file.end()) == gz) << "not gzip()'s bytes";
  // Nothing written at all: an empty member, as gzip("") gives.
  ASSERT_TRUE(gzip("", gz, why)) << why;
  {
    GzipFileWriter w(dir.path() + "/empty.gz");
    ASSERT_TRUE(w.finish(why)) << why;
  }
  const std::vector<uint8_t> empty = read_bytes(dir.path() + "/empty.gz");
  EXPECT_TRUE(std::string(empty.begin(), empty.end()) == gz);
  // Not finished (an error elsewhere): the temporary file goes.
  {
    GzipFileWriter w(dir.path() + "/y.gz");
    w.write(data);
  }
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"empty.gz", "x.gz"}));
  // A directory that does not exist: the error names the file.
  GzipFileWriter w(dir.path() + "/missing/z.gz");
  w.write(data);
  EXPECT_FALSE(w.finish(why));
  EXPECT_NE(why.find("missing/z.gz"), std::string::npos) << why;
}

// --- exact counts through the interpreter (InstructionProfile) --------------

std::string counts_path() { return std::string(WZVM_TESTDATA_DIR) + "/prof_counts.wasm"; }

TEST(InstructionCounts, LoopOfNIterationsOf13) {
  for (uint32_t n : {0u, 1u, 1000u}) {
    auto p = InstructionProfile::run_and_count_file(counts_path(), "loop", {vm::Value::from_i32(n)});
    ASSERT_TRUE(p) << p.error().to_string();
    ASSERT_FALSE(p->trap()) << p->trap().message;
    EXPECT_EQ(p->results().at(0).i32, n * (n - 1) / 2 * (n > 0));
    EXPECT_EQ(p->total(), 13u * n + 5) << "n = " << n;
    EXPECT_EQ(p->count("loop"), 13u * n + 5);
    EXPECT_EQ(p->counts().size(), 1u);
  }
}

TEST(InstructionCounts, CallTreePerFunctionAndPerStack) {
  auto p = InstructionProfile::run_and_count_file(counts_path(), "tree");
  ASSERT_TRUE(p) << p.error().to_string();
  EXPECT_EQ(p->results().at(0).i32, 5u);
  EXPECT_EQ(p->total(), 26u);
  EXPECT_EQ(p->counts(), (std::map<std::string, uint64_t>{{"leaf", 15}, {"mid", 6}, {"tree", 5}}));
  EXPECT_EQ(p->text(), "15 leaf\n6 mid\n5 tree\n26 total\n");

  // Per stack, in the pprof profile.
  TempDir dir;
  std::string path = dir.path() + "/i.pb.gz", why;
  ASSERT_TRUE(p->write_pprof(path, why)) << why;
  pb::Profile pr = read_profile(path);
  std::map<std::string, int64_t> stacks;
  for (const pb::Sample& s : pr.sample()) stacks[stack_of(pr, s)] += s.value(0);
  EXPECT_EQ(stacks, (std::map<std::string, int64_t>{
                        {"tree", 5}, {"mid;tree", 6}, {"leaf;mid;tree", 12}, {"leaf;tree", 3}}));
}

// Callees entered with call_local.counted, which counts their first segment
// at the call: one that starts with a loop, one with an empty body, and a
// trap in a loop that the entry's segment does not cover.
TEST(InstructionCounts, CalleesThatStartWithALoopOrAreEmpty) {
  for (uint32_t n : {1u, 7u}) {
    auto p = InstructionProfile::run_and_count_file(counts_path(), "entry_loops", {vm::Value::from_i32(n)});
    ASSERT_TRUE(p) << p.error().to_string();
    ASSERT_FALSE(p->trap()) << p->trap().message;
    EXPECT_EQ(p->total(), 5u * n + 4) << "n = " << n;
    EXPECT_EQ(p->counts(), (std::map<std::string, uint64_t>{{"spin", 5 * n}, {"entry_loops", 4}}))
        << "n = " << n;

    auto t =
        InstructionProfile::run_and_count_file(counts_path(), "entry_loops_trap", {vm::Value::from_i32(n)});
    ASSERT_TRUE(t) << t.error().to_string();
    EXPECT_EQ(t->trap().code, vm::TrapCode::IntegerDivideByZero);
    EXPECT_EQ(t->total(), 9u * n + 5) << "n = " << n;
    EXPECT_EQ(t->counts(),
              (std::map<std::string, uint64_t>{{"spin_trap", 9 * n + 3}, {"entry_loops_trap", 2}}))
        << "n = " << n;
  }
}

// Counted code's jumps count their edges (vm/counted_ops.def): br_table's
// targets, returns that leave the rest of the body, tail calls.
TEST(InstructionCounts, BrTableEarlyReturnsAndTailCalls) {
  for (uint32_t x : {0u, 1u, 2u, 9u}) {
    auto p = InstructionProfile::run_and_count_file(counts_path(), "classify", {vm::Value::from_i32(x)});
    ASSERT_TRUE(p) << p.error().to_string();
    EXPECT_EQ(p->results().at(0).i32, x == 0 ? 10u : x == 1 ? 20u : 30u);
    EXPECT_EQ(p->total(), x < 2 ? 4u : 3u) << "x = " << x;
  }
  auto nested = InstructionProfile::run_and_count_file(counts_path(), "nested");
  ASSERT_TRUE(nested) << nested.error().to_string();
  EXPECT_EQ(nested->total(), 37u) << "a back-edge counted the nop before its loop";
  for (uint32_t n : {0u, 1u, 25u}) {
    auto p = InstructionProfile::run_and_count_file(counts_path(), "countdown", {vm::Value::from_i32(n)});
    ASSERT_TRUE(p) << p.error().to_string();
    EXPECT_EQ(p->total(), 7u * n + 4) << "n = " << n;
    EXPECT_EQ(p->counts(), (std::map<std::string, uint64_t>{{"countdown", 7 * n + 4}})) << "n = " << n;
  }
}

TEST(InstructionCounts, StructureMarkersDoNotCount) {
  for (uint32_t arg : {0u, 1u}) {
    auto p = InstructionProfile::run_and_count_file(counts_path(), "pick", {vm::Value::from_i32(arg)});
    ASSERT_TRUE(p) << p.error().to_string();
    EXPECT_EQ(p->results().at(0).i32, arg ? 10u : 20u);
    EXPECT_EQ(p->total(), 3u) << "pick(" << arg << ")";
  }
}

// A sink that answers every probe with "stay" and, when `promise`, promises
// so (vm::Profiling::ProbeStay) for the decade of `next` that the probe
// saw, the frame local and the record's code as they were. It notes each
// `next` it was asked at.
struct PromisingSink : vm::ProfileSink {
  bool promise = true;
  std::vector<uint32_t> asked;
  uint32_t probe(vm::Profiling& p, uint32_t node, const vm::FuncInst* func, const void* frame, uint32_t index,
                 const uint64_t* fp, const uint32_t* slots, uint32_t n) override {
    (void)index;
    EXPECT_EQ(n, 4u) << "probe_stay.wat's i32 locals: n, frame, next, acc";
    const uint32_t f = static_cast<uint32_t>(fp[slots[1]]), next = static_cast<uint32_t>(fp[slots[2]]);
    asked.push_back(next);
    uint32_t code;
    std::memcpy(&code, func->instance->memories[0]->data + f + 4, sizeof code);
    if (promise) p.probe_stay = {frame, nullptr, 1, f, 4, code, 2, next / 10 * 10, 10};
    return node;
  }
  void on_cpu_sample(uint32_t, const vm::FuncInst*, int64_t, uint64_t) override {}
  void on_host_call(uint32_t, uint64_t) override {}
};

// ProbeCounted skips the sink while its promise holds, and asks again when
// `next` leaves the range, the record's code changes or the frame local
// moves; the counts are those of a run that asked every time.
TEST(ProbeCounted, TheSinksPromiseSkipsItsCallsWhileItHolds) {
  std::vector<vm::Profiling::InstructionCount> counts[2];
  for (bool promise : {false, true}) {
    vm::LoadOptions lo;
    lo.count_instructions = true;
    lo.probe_dispatch = [](const vm::Module&, uint32_t) { return 3u; };
    auto m = vm::load_module(read_bytes(std::string(WZVM_TESTDATA_DIR) + "/probe_stay.wasm"), lo);
    ASSERT_TRUE(m) << m.error().to_string();
    vm::Store store;
    auto i = store.instantiate(m.value(), {});
    ASSERT_TRUE(i);
    PromisingSink sink;
    sink.promise = promise;
    vm::Profiling p;
    p.count_instructions = true;
    p.sink = &sink;
    store.thread()->profiling = &p;
    std::vector<vm::Value> r, args = {vm::Value::from_i32(30)};
    vm::Trap t = store.invoke(i.value()->exported_func("interp"), args, r);
    ASSERT_FALSE(t) << t.message;
    EXPECT_EQ(r.at(0).i32, 15u * 1 + 15u * 100);
    if (promise) {
      EXPECT_EQ(sink.asked, (std::vector<uint32_t>{0, 10, 16, 20, 26}));
    } else {
      ASSERT_EQ(sink.asked.size(), 30u);
      for (uint32_t k = 0; k < 30; ++k) EXPECT_EQ(sink.asked[k], k);
    }
    counts[promise] = p.instruction_counts();
  }
  ASSERT_FALSE(counts[0].empty());
  EXPECT_TRUE(counts[0] == counts[1])
      << "node for node and instruction for instruction, as a run that asked every time";
}

TEST(InstructionCounts, TrapKeepsCountsUpToIt) {
  auto p = InstructionProfile::run_and_count_file(counts_path(), "boom");
  ASSERT_TRUE(p) << p.error().to_string();
  EXPECT_EQ(p->trap().code, vm::TrapCode::IntegerDivideByZero);
  EXPECT_EQ(p->total(), 3u);
}

TEST(InstructionCounts, TwoRunsGiveIdenticalBytes) {
  TempDir dir;
  std::string why;
  for (const char* name : {"a", "b"}) {
    auto p = InstructionProfile::run_and_count_file(counts_path(), "tree");
    ASSERT_TRUE(p);
    ASSERT_TRUE(p->write_pprof(dir.path() + "/" + name, why)) << why;
  }
  EXPECT_EQ(read_bytes(dir.path() + "/a"), read_bytes(dir.path() + "/b"));
}

// The README's example, verbatim but for the path: keeps the docs true.
TEST(InstructionCounts, ReadmeExample) {
  using vm::Value;
  auto p = InstructionProfile::run_and_count_file(std::string(WZVM_TESTDATA_DIR) + "/example.wasm", "fib",
                                                  {Value::from_i32(20)});
  ASSERT_TRUE(p) << p.error().to_string();  // load or link errors
  ASSERT_FALSE(p->trap());                  // a trap keeps the counts up to it
  EXPECT_EQ(p->results().at(0).i32, 6765u);
  EXPECT_EQ(p->total(), 291343u);             // every function, every stack
  EXPECT_EQ(p->counts().at("fib"), 291343u);  // per function (self)
}

// The table behind CPython stacks on every allocation: sequences that share
// prefixes, differ in length only, or are empty stay apart, through the
// growths from 1,024 slots to 32,768.
TEST(SpanTable, KeepsEverySequenceApartThroughGrowth) {
  vm::SpanTable t;
  std::vector<std::vector<uint32_t>> keys{{}, {0, 0, 0}};
  for (uint32_t i = 0; i < 5000; ++i) {  // 7a+b: a, a+1, ..., a+b (prefixes of each other)
    std::vector<uint32_t> k;
    for (uint32_t j = 0; j <= i % 7; ++j) k.push_back(i / 7 + j);
    keys.push_back(k);
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_EQ(t.find(keys[i].data(), keys[i].size()), nullptr) << "key " << i << " found before it was put";
    t.insert(keys[i].data(), keys[i].size(), static_cast<uint32_t>(i) + 100);
  }
  EXPECT_EQ(t.size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    const uint32_t* found = t.find(keys[i].data(), keys[i].size());
    ASSERT_NE(found, nullptr) << "key " << i;
    EXPECT_EQ(*found, i + 100) << "key " << i;
  }
  // Sequences whose 32-bit hashes are equal, of one length and of two
  // (found by the birthday bound among a few hundred thousand) stay apart.
  std::unordered_map<uint32_t, std::vector<uint32_t>> by_hash;
  std::vector<std::vector<uint32_t>> same_length, other_length;
  for (uint32_t i = 0; same_length.empty() || other_length.empty(); ++i) {
    ASSERT_LT(i, 4'000'000u);
    std::vector<uint32_t> k{i, 7};
    k.resize(1 + i % 2);
    auto [it, fresh] = by_hash.emplace(vm::SpanTable::hash(k.data(), k.size()), k);
    if (fresh) continue;
    auto& pair = it->second.size() == k.size() ? same_length : other_length;
    if (pair.empty()) pair = {it->second, k};
  }
  for (const auto* pair : {&same_length, &other_length}) {
    vm::SpanTable c;
    c.insert((*pair)[0].data(), (*pair)[0].size(), 1);
    EXPECT_EQ(c.find((*pair)[1].data(), (*pair)[1].size()), nullptr);
    c.insert((*pair)[1].data(), (*pair)[1].size(), 2);
    EXPECT_EQ(*c.find((*pair)[0].data(), (*pair)[0].size()), 1u);
    EXPECT_EQ(*c.find((*pair)[1].data(), (*pair)[1].size()), 2u);
  }
  const uint32_t absent[] = {9999, 1};
  EXPECT_EQ(t.find(absent, 2), nullptr);
  const uint32_t longer[] = {0, 1, 2, 3, 4, 5, 6, 7};  // one past the longest made from 0
  EXPECT_EQ(t.find(longer, 8), nullptr);
}

}  // namespace
}  // namespace wzvm::profiler
