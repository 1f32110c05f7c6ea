#pragma once
// Go programs (GOOS=wasip1 GOARCH=wasm, Go 1.21 and later) read as Go: the
// runtime's own tables, found in the module's data and checked, give each
// wasm function its Go name, file and lines, with inlined calls, and the
// frame sizes that walk a goroutine's stack in linear memory.
//
// What Go's linker and compiler do that this relies on (cmd/link's wasm
// backend, cmd/internal/obj/wasm):
//  - every Go function is one wasm function; defined function k has the Go
//    entry PC (0x1000 + k) << 16 (PC_F in the high bits, PC_B = 0);
//  - a function's code is cut into resume points: `block` x (N+1),
//    `local.get 0` (PC_B), `br_table` at its start, and one `end` where each
//    resume point begins. Resume points are where a basic block or a call's
//    return starts; the br_table maps each PC_B to its resume point, so the
//    first PC of each is known. Inside one, PC_B also advances where no wasm
//    instruction marks it (inlining boundaries, frame adjustments): a wasm
//    offset is resolved to the first PC of its resume point (a basic block's
//    start), a call instruction exactly (the PC before the next resume point,
//    which is the call's return address minus one, as Go's tracebacks use);
//  - a call stores its return PC (PC_F << 16 | PC_B after the call) at the
//    Go stack pointer (global 0) before calling, and frames are walked with
//    pclntab's pcsp table: fp = sp + spdelta(pc) + 8, return PC at fp - 8.
// pclntab (Go 1.20+, magic 0xFFFFFFF1) is found in the data segments
// through a consistent moduledata pointing at it (the last in the image:
// the search runs from the end, where Go's linker puts it); any mismatch
// (pointer size, instruction size, function count, entry PCs) means the
// module is not read as Go: wasm-level profiles, and one note says why.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "vm/module.h"

namespace wzvm::profiler {

struct GoFrame {
  std::string_view function;  // "fmt.(*pp).doPrintf"
  std::string_view file;      // absolute path as the Go toolchain recorded it
  uint32_t line = 0;
  uint32_t start_line = 0;  // of the function's `func` line
  bool inlined = false;     // an inlined call, not the physical function
};

class GoModule {
 public:
  // A Go module (it has a `go:buildid` custom section) whose tables were
  // read and checked; null when `module` is not Go. When it is Go but its
  // tables cannot be read, null too, and `note` says why.
  static std::unique_ptr<GoModule> read(const vm::Module& module, std::string& note);
  ~GoModule();

  const std::string& version() const { return version_; }  // "go1.23.5", or "" if not found

  // The Go PC of the wasm instruction at module byte offset `offset` in
  // defined function `func` (an index among defined functions, imports
  // excluded), as the file comment says.
  uint64_t pc_at(uint32_t func, uint32_t offset) const;
  // The one offset that stands for every instruction of `func` whose Go PC
  // is that of the instruction at `offset` (pc_at): its resume point's start,
  // or the call itself.
  uint32_t representative_offset(uint32_t func, uint32_t offset) const;
  // representative_offset of a run of instructions, [first, last) of their
  // offsets (ascending), that each ran `count` times: appends (offset,
  // count times the instructions it stands for) per resume point the run
  // crosses and per call in it, unordered. A search per resume
  // point, not per instruction: runs are counted code's unit.
  void representative_counts(uint32_t func, const uint32_t* first, const uint32_t* last, uint64_t count,
                             std::vector<std::pair<uint32_t, uint64_t>>& out) const;
  // The frames at `pc`, innermost (inlined) first, the physical function
  // last. For a return PC (a caller on the stack) pass pc - 1. Empty when
  // `pc` is in no function.
  std::vector<GoFrame> frames(uint64_t pc) const;
  // The physical function containing `pc`: defined-function index.
  bool func_of(uint64_t pc, uint32_t& func) const;
  // The whole function, no line of execution.
  GoFrame function(uint32_t func) const;

  // Unwinding: the frame size at `pc` (bytes between the frame's SP and its
  // return PC slot), false if unknown.
  bool sp_delta(uint64_t pc, int32_t& out) const;
  // Module byte offset of the call instruction that returns to `ret_pc`
  // (a caller's location, for profiles that key frames by wasm offset).
  bool call_offset(uint64_t ret_pc, uint32_t& offset) const;
  // Module byte offset where the resume point holding `pc` starts.
  bool region_offset(uint64_t pc, uint32_t& offset) const;
  // Go's special functions where a stack ends (runtime.goexit, mstart,
  // rt0_go, ...): funcID != normal per the runtime's FuncID enum, read from
  // _func, so no enum is copied here except `normal` = 0.
  bool is_top_of_stack(uint32_t func) const;
  // The Go callers of defined function `func` as Go's wasm_pc_f_loop calls
  // it, with the SP global `sp` and linear memory `mem`: outermost first,
  // each as (defined function, module offset of its call to the next one;
  // the last one's calls `func`). False when the memory at SP does not hold
  // a resume PC of `func`.
  bool walk(const uint8_t* mem, uint64_t mem_size, uint64_t sp, uint32_t func,
            std::vector<std::pair<uint32_t, uint32_t>>& callers) const;
  // The PC at SP - 8 that wasm_pc_f_loop resumes `func` at; false if it is
  // not one of `func`'s.
  bool resume_pc(const uint8_t* mem, uint64_t mem_size, uint64_t sp, uint32_t func, uint64_t& pc) const;
  // One step of the walk: the caller of the frame at (sp, pc), as the SP it
  // resumes with and its return PC; false at a stack's top or on anything
  // that does not check out.
  bool caller(const uint8_t* mem, uint64_t mem_size, uint64_t sp, uint64_t pc, uint64_t& caller_sp,
              uint64_t& caller_pc) const;
  // runtime.mallocgc(size, typ, needzero) just returned `ret` (its wasm
  // result: 0, or 1 when it unwound to switch goroutines and will go on
  // later) with the SP global `sp`: the object as Go's own heap profile
  // records it (MemProfileRate = 1), false for none. mallocgc's arguments
  // are on Go's stack, and on return SP points just past its return
  // address: size at SP, typ at SP + 8, the result at SP + 24. Bytes are the
  // object's size class (read from the module's runtime.class_to_size) or,
  // above 32 KiB, whole 8 KiB pages; an allocation under 16 bytes without
  // pointers shares a 16-byte block with others and counts when it opens one
  // (16 bytes), as in Go, whose heap profile sees the blocks only.
  bool allocation(const uint8_t* mem, uint64_t mem_size, uint64_t sp, uint32_t ret, uint64_t& ptr,
                  uint64_t& bytes) const;
  // The id (goid) of the goroutine whose g struct is at `g` (Go's global 2),
  // false for g0 (the scheduler's own stack, id 0) or when this Go
  // version's g layout is not known here (1.21 to 1.23 are).
  bool goroutine_id(const uint8_t* mem, uint64_t mem_size, uint64_t g, uint64_t& id) const;
  // Go's goroutine scheduler loop: calls from it are grafted (vm::LoadOptions::graft_calls).
  static bool resumes_goroutines(const vm::Module& module, uint32_t func_index);

  size_t num_functions() const;

 private:
  GoModule() = default;
  struct Func;
  struct Image;
  bool load(const vm::Module& module, std::string& why);
  // Function k's resume points (Func::region_*), found from its code the
  // first time a lookup needs them (regions()).
  void map_regions(uint32_t k) const;
  const Func& regions(uint32_t k) const;
  int32_t pcvalue(uint32_t table_off, uint64_t entry, uint64_t pc) const;
  std::string_view cstring(uint64_t addr) const;
  std::string_view file_name(const Func& f, int32_t fileno) const;

  std::unique_ptr<Image> image_;
  std::string version_;
  std::vector<Func> funcs_;  // per defined function
  const vm::Module* module_ = nullptr;
  // funcs_[k]'s regions are mapped once mapped_[k] is set (release); the
  // mutex orders two threads mapping one (a live profile's reader and the
  // interpreter's samples).
  std::unique_ptr<std::atomic<bool>[]> mapped_;
  mutable std::mutex map_mu_;
  uint64_t ph_ = 0;  // address of pcHeader in linear memory
  uint64_t funcnametab_ = 0, cutab_ = 0, filetab_ = 0, pctab_ = 0, pclntab_ = 0, gofunc_ = 0;
  uint64_t pctab_size_ = 0;
  std::vector<uint16_t> size_classes_;  // runtime.class_to_size; empty if not found
  uint32_t goid_offset_ = 0;            // of g.goid for this version; 0: unknown
};

}  // namespace wzvm::profiler
