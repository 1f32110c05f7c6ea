#pragma once
// Memory profiling: allocator calls seen at their call sites (vm/profiling.h
// call hooks) and turned into a heap profile like Go's: per call stack,
// objects and bytes allocated over the run, and those still in use.
//
//   vm::LoadOptions lo;
//   lo.call_hook = profiler::allocator_hook();   // marks malloc, operator new, __rust_alloc, ...
//   profiler::Profiler prof({.mem = true});       // its sink feeds a MemoryProfiler
//
// Allocators are found by name (profiler/allocators.def, plus --alloc-fn).
// When one hooked function calls another (operator new -> malloc,
// __rust_alloc -> malloc), only the outermost call counts: the profiler keeps
// the hooked calls in progress, by call-tree depth, and ignores any hooked
// call made under one. An allocation and its free are always matched, also
// when sampling by bytes (the sampled pointers are kept), so in-use numbers
// are right. A free of a pointer never seen allocated, a NULL result, or a
// pointer out of the memory's bounds is ignored, never a crash.

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "vm/module.h"
#include "vm/profiling.h"
#include "vm/span_table.h"

namespace wzvm::vm {
struct MemInst;
}

namespace wzvm::profiler {

class Profiler;  // profiler/profiler.h

// What a hooked function does, by where its size and pointer are. The VM's
// hook id is the kind, plus kWide for a module whose pointers are i64.
enum class AllocKind : uint8_t {
  None = 0,
  Malloc,         // (size, ...) -> ptr: malloc, operator new*, __rust_alloc(_zeroed)
  AlignedAlloc,   // (align, size) -> ptr: aligned_alloc, memalign
  Calloc,         // (n, size) -> ptr, n * size checked for overflow
  Realloc,        // (ptr, size) -> ptr: a free of ptr plus an allocation
  RustRealloc,    // (ptr, old_size, align, new_size) -> ptr
  Free,           // (ptr, ...): free, operator delete*, __rust_dealloc
  PosixMemalign,  // (void** out, align, size) -> 0 and *out on success
  GcAlloc,        // (size, ...) -> ptr, freed by a collector we cannot see (TinyGo)
  // Go's runtime.mallocgc(size, typ, needzero) -> ptr: its arguments and
  // result are on Go's stack, read when it returns (GoModule::allocation).
  // Freed by Go's collector, which no call shows: alloc_* only.
  GoMallocgc,
};
constexpr uint8_t kWide = 0x80;  // hook id flag: i64 pointers and sizes (memory64)

// A user-named allocator (--alloc-fn NAME=malloc|calloc|realloc|free).
struct CustomAllocator {
  std::string name;
  AllocKind kind = AllocKind::None;
};
// Parses "NAME=KIND"; false with `why` on a bad spec.
bool parse_alloc_fn(const std::string& spec, CustomAllocator& out, std::string& why);

// The allocator a function name denotes (allocators.def, mangled or as
// wasm-ld demangles it, or `extra`), and the parameter count it must have
// (0: any, at least one); None if it is not one.
AllocKind allocator_kind(const std::string& name, const std::vector<CustomAllocator>& extra,
                         int* params = nullptr);

// A LoadOptions::call_hook for memory profiling: the hook id of every
// function named as an allocator whose type fits its kind.
std::function<uint8_t(const vm::Module&, uint32_t)> allocator_hook(std::vector<CustomAllocator> extra = {});

// Aggregated allocations at one allocator call site: `node` is the hooked
// allocator's own call-tree node, so its parent is the calling stack. Values
// are estimates (weights) when sampling by bytes, exact integers otherwise.
struct MemSite {
  uint32_t node = 0;
  uint32_t python = 0;  // CPython: the Python stack (Profiler::python_stack), 0: none
  double alloc_objects = 0, alloc_bytes = 0;
  double inuse_objects = 0, inuse_bytes = 0;
};

// One memory.grow that made a memory larger (the wasm memory's size over
// time): `node` is the stack of the function that ran it (its leaf), not an
// allocator's caller.
struct GrowEvent {
  uint32_t node = 0;
  int64_t offset = -1;  // module byte offset of the memory.grow instruction
  const vm::MemInst* memory = nullptr;
  uint64_t old_bytes = 0, new_bytes = 0;
  uint64_t elapsed_ns = 0;  // since the profiling session started
  uint32_t python = 0;      // CPython: the Python stack (Profiler::python_stack), 0: none
};

class MemoryProfiler {
 public:
  // sample_bytes 0: record every allocation. Otherwise sample by bytes, one
  // sample every sample_bytes on average (exponentially distributed
  // distances from a fixed seed, so runs are repeatable), each sampled
  // allocation of size s weighted 1 / (1 - exp(-s / sample_bytes)).
  MemoryProfiler(const vm::CallTree& tree, uint64_t sample_bytes);

  void on_call(uint8_t hook, uint32_t node, const uint64_t* args, vm::MemInst* memory,
               const vm::FuncInst* func = nullptr);
  void on_return(uint8_t hook, uint32_t node, const uint64_t* results, vm::MemInst* memory,
                 const vm::FuncInst* func = nullptr);
  void on_grow(const GrowEvent& e) { grows_.push_back(e); }
  // Called for each allocation recorded, with its allocator's node: the
  // Python stack to charge it to as well (MemSite::python), or 0.
  void set_python(std::function<uint32_t(uint32_t node)> f) { python_ = std::move(f); }
  // An allocation a garbage collector frees unseen (Go's mallocgc, read by
  // the Profiler): alloc_* only.
  void gc_allocated(uint32_t node, const vm::MemInst* memory, uint64_t ptr, uint64_t size);
  // For replays (the live endpoint, profiler/live.h): figures of a site
  // measured elsewhere, added to this profiler's site of `s.node`.
  void add_site(const MemSite& s);

  // Sites that allocated, sorted by node (the order calls first happened).
  std::vector<MemSite> sites() const;
  // Every memory.grow that made a memory larger, in the order they happened.
  // At most one per page added, so bounded by the memory's maximum.
  const std::vector<GrowEvent>& grows() const { return grows_; }
  uint64_t sample_bytes() const { return sample_bytes_; }
  // Whole-run figures (estimates when sampling).
  double total_objects() const { return total_objects_; }
  double total_bytes() const { return total_bytes_; }
  double inuse_objects() const { return inuse_objects_; }
  double inuse_bytes() const { return inuse_bytes_; }
  double peak_inuse_bytes() const { return peak_inuse_bytes_; }
  // Allocations made by a garbage-collected runtime (GcAlloc): never freed here.
  bool saw_gc_allocations() const { return saw_gc_; }

 private:
  // A hooked call in progress: what its result will need.
  struct Pending {
    uint64_t ptr;   // the pointer freed or reallocated; PosixMemalign: the out address
    uint64_t size;  // bytes requested
    uint32_t node;
    uint32_t depth;
    uint8_t hook;
    bool size_ok;  // false: calloc's n * size overflowed (it must fail)
  };
  // The blocks in use (sampled ones only, when sampling): an open-addressing
  // table (linear probing, backward-shift deletion), because an allocator
  // hook pays one insert and one erase per block and std::unordered_map's
  // node allocation and pointer chasing were most of that cost.
  struct Live {
    uint64_t ptr = 0;
    const vm::MemInst* memory = nullptr;
    uint64_t size = 0;
    double weight = 0;  // objects this allocation stands for (1 unless sampling)
    uint32_t site = 0;
    bool used = false;
  };
  class LiveTable {
   public:
    LiveTable() : slots_(1024) {}
    Live* find(const vm::MemInst* memory, uint64_t ptr);
    // The slot for (memory, ptr), taken (`used`) or free for a new block.
    Live* slot(const vm::MemInst* memory, uint64_t ptr);
    void erase(Live* l);
    void added();  // after filling a free slot: grows the table when full enough

   private:
    // A 4 KiB page's 8-byte granules go to consecutive slots from a place
    // hashed from the page: an allocator hands out neighbouring blocks
    // (CPython's pymalloc carves each 4 KiB pool into equal blocks) and
    // frees them soon, so their slots share cache lines; a hash of the whole
    // address cost a cache miss per allocation and per free (10% of a
    // memory-profiled text.py). The page hash keeps strided addresses
    // (page-aligned blocks) from piling up on one home.
    size_t home(uint64_t ptr) const {
      return (((ptr >> 12) * 0x9E3779B97F4A7C15ull >> 32) + (ptr >> 3 & 511)) & (slots_.size() - 1);
    }
    std::vector<Live> slots_;  // size a power of two
    size_t count_ = 0;
  };

  void allocated(uint32_t node, const vm::MemInst* memory, uint64_t ptr, uint64_t size, bool gc);

  void freed(const vm::MemInst* memory, uint64_t ptr);
  void retire(const Live& l);           // takes a block's weight out of the in-use figures
  double sample_weight(uint64_t size);  // 0: not sampled
  double next_distance();

  const vm::CallTree& tree_;
  uint64_t sample_bytes_;
  std::vector<Pending> pending_;
  std::vector<MemSite> sites_;
  std::vector<GrowEvent> grows_;
  std::vector<uint32_t> site_of_node_;  // node -> index in sites_ + 1, 0 if none
  vm::SpanTable site_of_python_;        // {node, python} -> index in sites_
  std::function<uint32_t(uint32_t)> python_;
  uint32_t site_index(uint32_t node, uint32_t python);  // creates the site
  LiveTable live_;
  double total_objects_ = 0, total_bytes_ = 0;
  double inuse_objects_ = 0, inuse_bytes_ = 0, peak_inuse_bytes_ = 0;
  bool saw_gc_ = false;
  // Sampling by bytes: bytes left until the next sample.
  double until_sample_ = 0;
  std::mt19937_64 rng_{0x77a7'6d65'6d00'0001ull};
};

// Memory figures per allocating function (the allocator's caller, the leaf
// of the memory profile's stacks), merged by name; sorted by name. For tests
// and embedders: `EXPECT_EQ(by_function["f"].alloc_objects, 100)`.
struct FunctionMemory {
  std::string function;
  double alloc_objects = 0, alloc_bytes = 0;
  double inuse_objects = 0, inuse_bytes = 0;
  // memory.grow run by this function itself (not by an allocator's caller).
  uint64_t grows = 0, grow_bytes = 0;
};
std::vector<FunctionMemory> memory_by_function(const Profiler& profiler);

// The leak-checker style report printed after a run with --profile=mem:
// totals, peak in use, what is still in use at exit and its `top` largest
// stacks, one "wzvm: ..." line each.
std::string memory_summary(const Profiler& profiler, size_t top);

}  // namespace wzvm::profiler
