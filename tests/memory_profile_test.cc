// Memory profiling (profiler/memory.h): allocator calls found by name and
// hooked by the VM, outermost call only, in-use data from matched frees.
//  - Through the C++ API on testdata/mem_hooks.wat, a bump allocator under
//    the C/C++ names whose every case is worked out by hand: nesting,
//    realloc, calloc overflow, posix_memalign's result through memory (and
//    an out-of-bounds one), call_indirect, a trap inside malloc, signatures
//    that do not fit, --alloc-fn, sampling by bytes.
//  - End to end through `wzvm --profile=mem` and `go tool pprof`:
//    tests/memory_cli_test.cc.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "profiler/memory.h"
#include "profiler/pprof.h"
#include "profiler/profiler.h"
#include "vm/module.h"
#include "vm/runtime.h"

namespace wzvm::profiler {
namespace {

using ::testing::HasSubstr;

std::string testdata(const std::string& name) { return std::string(WZVM_TESTDATA_DIR) + "/" + name; }

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// ---- Classification by name.

TEST(AllocatorNames, CAndCxxAndRustNamesMangledOrDemangled) {
  EXPECT_EQ(allocator_kind("malloc", {}), AllocKind::Malloc);
  EXPECT_EQ(allocator_kind("posix_memalign", {}), AllocKind::PosixMemalign);
  EXPECT_EQ(allocator_kind("_Znwm", {}), AllocKind::Malloc);
  // wasm-ld 14 writes the demangled form into the name section.
  EXPECT_EQ(allocator_kind("operator new(unsigned long)", {}), AllocKind::Malloc);
  EXPECT_EQ(allocator_kind("operator new[](unsigned long, std::align_val_t)", {}), AllocKind::Malloc);
  EXPECT_EQ(allocator_kind("operator delete(void*, unsigned long)", {}), AllocKind::Free);
  EXPECT_EQ(allocator_kind("_ZdaPvSt11align_val_t", {}), AllocKind::Free);
  EXPECT_EQ(allocator_kind("__rust_realloc", {}), AllocKind::RustRealloc);
  EXPECT_EQ(allocator_kind("__rust_alloc_zeroed", {}), AllocKind::Malloc);
  EXPECT_EQ(allocator_kind("dlmalloc", {}), AllocKind::None);  // the inner layer is reached through malloc
  EXPECT_EQ(allocator_kind("my_alloc", {}), AllocKind::None);
  std::vector<CustomAllocator> extra(1);
  std::string why;
  ASSERT_TRUE(parse_alloc_fn("my_alloc=malloc", extra[0], why));
  EXPECT_EQ(allocator_kind("my_alloc", extra), AllocKind::Malloc);
  EXPECT_FALSE(parse_alloc_fn("my_alloc=new", extra[0], why));
  EXPECT_THAT(why, HasSubstr("'new' is not one of malloc, calloc, realloc, free"));
  EXPECT_FALSE(parse_alloc_fn("=free", extra[0], why));
}

// ---- The hooks, on a hand-made allocator.

class MemHooks : public ::testing::Test {
 protected:
  void load(std::vector<CustomAllocator> extra = {}, uint64_t sample_bytes = 0) {
    vm::LoadOptions lo;
    lo.call_hook = allocator_hook(std::move(extra));
    auto m = vm::load_module(read_bytes(testdata("mem_hooks.wasm")), lo);
    ASSERT_TRUE(m) << m.error().to_string();
    module_ = *m;
    prof_ = std::make_unique<Profiler>(Options{.mem = true, .mem_sample_bytes = sample_bytes});
    std::string why;
    ASSERT_TRUE(prof_->start(store_, why)) << why;
    auto inst = store_.instantiate(module_, {});
    ASSERT_TRUE(inst) << inst.error().to_string();
    inst_ = *inst;
  }
  // Calls export `name`; its i32 result, or -1 for none, -2 for a trap.
  int64_t call(const std::string& name, std::vector<uint32_t> args = {}) {
    std::vector<vm::Value> params, results;
    for (uint32_t a : args) params.push_back(vm::Value::from_i32(a));
    vm::Trap t = store_.invoke(inst_->exported_func(name), params, results);
    if (t) return -2;
    return results.empty() ? -1 : static_cast<int64_t>(results[0].i32);
  }
  std::map<std::string, FunctionMemory> by_function() {
    std::map<std::string, FunctionMemory> out;
    for (FunctionMemory& f : memory_by_function(*prof_)) out[f.function] = f;
    return out;
  }
  uint32_t load_u32(uint32_t addr) {
    uint32_t v;
    std::memcpy(&v, inst_->memories[0]->data + addr, 4);
    return v;
  }

  vm::Store store_;
  std::shared_ptr<const vm::Module> module_;
  vm::Instance* inst_ = nullptr;
  std::unique_ptr<Profiler> prof_;
};

MATCHER_P4(Mem, alloc_objects, alloc_bytes, inuse_objects, inuse_bytes, "") {
  *result_listener << "alloc " << arg.alloc_objects << "/" << arg.alloc_bytes << ", inuse "
                   << arg.inuse_objects << "/" << arg.inuse_bytes;
  return arg.alloc_objects == alloc_objects && arg.alloc_bytes == alloc_bytes &&
         arg.inuse_objects == inuse_objects && arg.inuse_bytes == inuse_bytes;
}

TEST_F(MemHooks, ModuleWithoutAllocatorsHasNoHooks) {
  auto m = vm::load_module(read_bytes(testdata("prof_counts.wasm")),
                           vm::LoadOptions{.call_hook = allocator_hook()});
  ASSERT_TRUE(m);
  EXPECT_TRUE((*m)->call_hooks.empty());
}

TEST_F(MemHooks, MallocAndFreeMatchedAndFailuresNotCounted) {
  load();
  uint32_t a = static_cast<uint32_t>(call("alloc", {64}));
  uint32_t b = static_cast<uint32_t>(call("alloc", {100}));
  call("alloc", {0});                      // a unique block of 0 bytes: one object
  EXPECT_EQ(call("alloc", {0x20000}), 0);  // failed: not counted
  call("release", {a});
  call("release", {a});           // a double free changes nothing
  call("release", {0});           // free(NULL)
  call("release", {0x12345670});  // never allocated: ignored
  (void)b;
  auto f = by_function();
  EXPECT_THAT(f["alloc"], Mem(3, 164, 2, 100));
  EXPECT_EQ(prof_->memory()->peak_inuse_bytes(), 164);
}

TEST_F(MemHooks, NestedHookedCallsCountOnce) {
  load();
  uint32_t p = static_cast<uint32_t>(call("new", {40}));  // _Znwm -> malloc
  call("zeroed", {10, 6});                                // calloc -> malloc
  call("delete", {p});                                    // _ZdlPv -> free
  auto f = by_function();
  EXPECT_THAT(f["new"], Mem(1, 40, 0, 0));
  EXPECT_THAT(f["zeroed"], Mem(1, 60, 1, 60));
  EXPECT_EQ(f.count("_Znwm"), 0u);  // malloc under operator new is not a second allocation
  EXPECT_EQ(f.count("calloc"), 0u);
  EXPECT_EQ(prof_->memory()->total_objects(), 2);
}

TEST_F(MemHooks, CallocOverflowFails) {
  load();
  EXPECT_EQ(call("zeroed", {0x10000, 0x10001}), 0);
  EXPECT_EQ(by_function().count("zeroed"), 0u);
}

TEST_F(MemHooks, ReallocIsAFreeAndAnAllocation) {
  load();
  uint32_t p = static_cast<uint32_t>(call("alloc", {10}));
  uint32_t q = static_cast<uint32_t>(call("resize", {p, 30}));  // moves
  EXPECT_NE(p, q);
  uint32_t r = static_cast<uint32_t>(call("resize", {0, 20}));  // realloc(NULL, n): an allocation
  EXPECT_EQ(call("resize", {r, 0x20000}), 0);                   // fails: r stays
  EXPECT_EQ(call("resize", {q, 0}), 0);                         // size 0, NULL: q freed
  auto f = by_function();
  EXPECT_THAT(f["alloc"], Mem(1, 10, 0, 0));
  EXPECT_THAT(f["resize"], Mem(2, 50, 1, 20));
}

TEST_F(MemHooks, PosixMemalignReadsTheResultThroughMemory) {
  load();
  EXPECT_EQ(call("memalign", {512, 48}), 0);
  uint32_t p = load_u32(512);
  EXPECT_NE(p, 0u);
  // Success with *out outside the memory: ignored, no crash.
  EXPECT_EQ(call("memalign", {0xFFFFFFF0u, 16}), 0);
  EXPECT_EQ(call("memalign", {65534, 16}), 0);      // straddles the end
  EXPECT_EQ(call("memalign", {512, 0x20000}), 12);  // failed
  call("release", {p});
  EXPECT_THAT(by_function()["memalign"], Mem(1, 48, 0, 0));
}

TEST_F(MemHooks, IndirectCallsAndWrappersAndTraps) {
  load();
  call("indirect", {32});       // call_indirect to malloc, caught at run time
  call("wrapped", {16});        // the stack's leaf is the wrapper
  EXPECT_EQ(call("boom"), -2);  // malloc traps: a hooked call that never returns
  call("alloc", {8});           // and the next one still counts
  auto f = by_function();
  EXPECT_THAT(f["indirect"], Mem(1, 32, 1, 32));
  EXPECT_THAT(f["xmalloc"], Mem(1, 16, 1, 16));
  EXPECT_THAT(f["alloc"], Mem(1, 8, 1, 8));
}

TEST_F(MemHooks, SignatureMustFitAndCustomAllocators) {
  load();
  call("wrong", {24});  // aligned_alloc(i32) -> i32 is not aligned_alloc: its malloc counts
  call("mine", {24});
  auto f = by_function();
  EXPECT_THAT(f["aligned_alloc"], Mem(1, 24, 1, 24));
  EXPECT_THAT(f["my_alloc"], Mem(1, 24, 1, 24));
  EXPECT_EQ(f.count("wrong"), 0u);
}

TEST_F(MemHooks, AllocFnNamesAnAllocator) {
  std::vector<CustomAllocator> extra(1);
  std::string why;
  ASSERT_TRUE(parse_alloc_fn("my_alloc=malloc", extra[0], why));
  load(extra);
  call("mine", {24});
  auto f = by_function();
  EXPECT_THAT(f["mine"], Mem(1, 24, 1, 24));
  EXPECT_EQ(f.count("my_alloc"), 0u);
}

TEST_F(MemHooks, PprofProfileHasHeapSampleTypes) {
  load();
  call("alloc", {64});
  call("new", {32});
  prof_->stop();
  perftools::profiles::Profile p = build_memory_profile(*prof_);
  auto str = [&](int64_t i) { return p.string_table(static_cast<int>(i)); };
  // Go's four heap types first (pprof's defaults), then memory.grow's two.
  ASSERT_EQ(p.sample_type_size(), 6);
  EXPECT_EQ(str(p.sample_type(0).type()) + "/" + str(p.sample_type(0).unit()), "alloc_objects/count");
  EXPECT_EQ(str(p.sample_type(1).type()) + "/" + str(p.sample_type(1).unit()), "alloc_space/bytes");
  EXPECT_EQ(str(p.sample_type(2).type()) + "/" + str(p.sample_type(2).unit()), "inuse_objects/count");
  EXPECT_EQ(str(p.sample_type(3).type()) + "/" + str(p.sample_type(3).unit()), "inuse_space/bytes");
  EXPECT_EQ(str(p.sample_type(4).type()) + "/" + str(p.sample_type(4).unit()), "grows/count");
  EXPECT_EQ(str(p.sample_type(5).type()) + "/" + str(p.sample_type(5).unit()), "grow_space/bytes");
  EXPECT_EQ(str(p.default_sample_type()), "inuse_space");
  EXPECT_EQ(str(build_memory_profile(*prof_, "alloc_space").default_sample_type()), "alloc_space");
  EXPECT_EQ(str(p.period_type().type()), "space");
  EXPECT_EQ(p.period(), 1);
  ASSERT_EQ(p.sample_size(), 2);
  // Leaf = the allocator's caller; the allocator in a label.
  EXPECT_EQ(p.sample(0).location_id_size(), 1);
  EXPECT_EQ(p.sample(0).value(1), 64);
  EXPECT_EQ(p.sample(0).value(5), 0);  // no memory.grow here
  EXPECT_EQ(str(p.sample(0).label(0).key()), "allocator");
  EXPECT_EQ(str(p.sample(0).label(0).str()), "malloc");
  EXPECT_EQ(str(p.sample(1).label(0).str()), "_Znwm");
}

// Sampling by bytes: unbiased on average, and frees of sampled blocks match.
TEST_F(MemHooks, SamplingByBytesIsUnbiased) {
  load({}, 4096);
  std::vector<uint32_t> ptrs;
  for (int i = 0; i < 2000; ++i) ptrs.push_back(static_cast<uint32_t>(call("alloc", {24})));
  for (int i = 0; i < 2000; i += 2) call("release", {ptrs[i]});
  auto f = by_function()["alloc"];
  // 2000 x 24 = 48000 bytes at one sample per 4096: about 12 samples of
  // weight 1/(1-exp(-24/4096)) = 171.2 each. Loose bounds, fixed seed.
  EXPECT_GT(f.alloc_objects, 500);
  EXPECT_LT(f.alloc_objects, 4000);
  EXPECT_NEAR(f.alloc_bytes / f.alloc_objects, 24, 1e-9);
  EXPECT_LE(f.inuse_objects, f.alloc_objects);
  // Every sampled block freed: nothing left (no drift from unmatched frees).
  for (int i = 1; i < 2000; i += 2) call("release", {ptrs[i]});
  EXPECT_NEAR(by_function()["alloc"].inuse_bytes, 0, 1e-6);
  EXPECT_EQ(prof_->memory()->sample_bytes(), 4096u);
}

// The sampling loop finds a frame's call-tree node when a hook needs it and
// keeps it in the frame; a new call in the same frame slot must find its own.
TEST_F(MemHooks, NodeCachedInAFrameIsNotReusedByTheNextCall) {
  load();
  EXPECT_GT(call("both", {16}), 0);
  EXPECT_GT(call("both", {16}), 0);
  auto f = by_function();
  EXPECT_THAT(f["xmalloc"], Mem(2, 32, 2, 32));
  EXPECT_THAT(f["both"], Mem(2, 32, 2, 32));
  // Two sites, both malloc's own node (a stale node would be xmalloc's:
  // the site's allocator would then read xmalloc).
  std::vector<MemSite> sites = prof_->memory()->sites();
  ASSERT_EQ(sites.size(), 2u);
  for (const MemSite& s : sites) EXPECT_EQ(function_name(prof_->tree().node(s.node).func), "malloc");
}

// memory.grow with no allocator in sight: who grew the memory, by how much,
// and its size after each grow, in both profiling loops (sampled, counted).
class MemoryGrow : public ::testing::TestWithParam<bool> {};

TEST_P(MemoryGrow, ReportedWithTheGrowingStack) {
  vm::LoadOptions lo;
  lo.call_hook = allocator_hook();
  lo.count_instructions = GetParam();
  auto m = vm::load_module(read_bytes(testdata("mem_grow.wasm")), lo);
  ASSERT_TRUE(m) << m.error().to_string();
  vm::Store store;
  Profiler prof(Options{.instructions = GetParam(), .mem = true});
  std::string why;
  ASSERT_TRUE(prof.start(store, why)) << why;
  auto inst = store.instantiate(*m, {});
  ASSERT_TRUE(inst) << inst.error().to_string();
  std::vector<vm::Value> results;
  ASSERT_FALSE(store.invoke((*inst)->exported_func("run"), {}, results));
  EXPECT_EQ(results[0].i32, 8u);
  prof.stop();

  // Four grows: bump three times by a page, big once by four; the grow by 0
  // and the failed one are not there.
  const auto& grows = prof.memory()->grows();
  ASSERT_EQ(grows.size(), 4u);
  const uint64_t page = 65536;
  EXPECT_EQ(grows[0].old_bytes, 1 * page);
  EXPECT_EQ(grows[0].new_bytes, 2 * page);
  EXPECT_EQ(grows[2].new_bytes, 4 * page);
  EXPECT_EQ(grows[3].old_bytes, 4 * page);
  EXPECT_EQ(grows[3].new_bytes, 8 * page);
  EXPECT_LE(grows[0].elapsed_ns, grows[3].elapsed_ns);
  std::map<std::string, FunctionMemory> f;
  for (FunctionMemory& fm : memory_by_function(prof)) f[fm.function] = fm;
  EXPECT_EQ(f["bump"].grows, 3u);
  EXPECT_EQ(f["bump"].grow_bytes, 3 * page);
  EXPECT_EQ(f["big"].grows, 1u);
  EXPECT_EQ(f["big"].grow_bytes, 4 * page);
  EXPECT_EQ(f.count("run"), 0u);  // its size query and failed grow are not reported
  EXPECT_EQ(function_name(prof.tree().node(prof.tree().node(grows[3].node).parent).func), "run");

  // In the pprof profile: one sample per grow, at the memory.grow
  // instruction (not the function's start), with the size after it.
  perftools::profiles::Profile p = build_memory_profile(prof);
  auto str = [&](int64_t i) { return p.string_table(static_cast<int>(i)); };
  ASSERT_EQ(p.sample_size(), 4);
  std::vector<int64_t> sizes;
  for (const auto& s : p.sample()) {
    EXPECT_EQ(s.value(2), 0);
    EXPECT_EQ(s.value(4), 1);
    EXPECT_EQ(s.location_id_size(), 2);
    for (const auto& l : s.label())
      if (str(l.key()) == "memory_size") sizes.push_back(l.num());
  }
  EXPECT_EQ(sizes, (std::vector<int64_t>{2 * 65536, 3 * 65536, 4 * 65536, 8 * 65536}));
  EXPECT_EQ(p.sample(3).value(5), 4 * 65536);
  EXPECT_THAT(
      memory_summary(prof, 3),
      HasSubstr(
          "wzvm: memory: memory.grow 4 times: 64.0 KiB -> 512.0 KiB; most (256.0 KiB) by big <- run\n"));
}

INSTANTIATE_TEST_SUITE_P(Loops, MemoryGrow, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Counted" : "Sampled"; });

// Without memory profiling, memory.grow is not reported (and costs nothing).
TEST(MemoryGrowOff, NotReportedWithoutMemoryProfiling) {
  auto m = vm::load_module(read_bytes(testdata("mem_grow.wasm")), {});
  ASSERT_TRUE(m);
  vm::Store store;
  Profiler prof(Options{.cpu = true});
  std::string why;
  ASSERT_TRUE(prof.start(store, why)) << why;
  EXPECT_FALSE(prof.profiling().memory_grow);
  auto inst = store.instantiate(*m, {});
  ASSERT_TRUE(inst);
  std::vector<vm::Value> results;
  ASSERT_FALSE(store.invoke((*inst)->exported_func("run"), {}, results));
  EXPECT_EQ(results[0].i32, 8u);
  prof.stop();
  EXPECT_EQ(prof.memory(), nullptr);
}

// A large allocation is always sampled, with weight about 1.
TEST_F(MemHooks, SamplingKeepsLargeAllocationsExactly) {
  load({}, 512);
  call("alloc", {40000});
  auto f = by_function()["alloc"];
  EXPECT_NEAR(f.alloc_objects, 1, 1e-9);
  EXPECT_NEAR(f.alloc_bytes, 40000, 1e-6);
}

}  // namespace
}  // namespace wzvm::profiler
