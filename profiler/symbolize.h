#pragma once
// Source-level symbols of a wasm module: function names (demangled), file,
// line and column of every instruction, and the chain of inlined calls at it,
// from the module's DWARF custom sections (.debug_info, .debug_line, ...),
// read with libdwarf; from Go's own runtime tables for a module built by Go
// (profiler/golang.h), which writes no DWARF for wasm; function-level names
// when the module has neither.
//
//   profiler::Symbolizer sym(module);            // reads the DWARF once
//   for (const SourceFrame& f : sym.lookup(addr)) // innermost frame first
//     ... f.function, f.file, f.line ...
//
// Addresses are byte offsets in the module (Module::bytes), as everywhere in
// wzvm (source maps, backtraces, pprof Location.address). DWARF for wasm
// counts addresses from the start of the code section's payload; the
// conversion happens once, here. See docs/RATIONALE.md ("Symbols (DWARF)").
//
// A lookup is a binary search in one sorted table of address ranges (one
// entry per change of line or inlined scope), built from the compile units
// read so far: a unit is read the first time a lookup needs it.
// Not thread-safe: fallback names are demangled lazily, on first use.
// Constructing one is safe on any thread: the libdwarf part is serialized
// process-wide (libdwarf is not thread-safe; profiler/symbolize.cc).

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vm/module.h"

namespace wzvm::profiler {

class GoModule;
class CPythonModule;
struct UnitLineRows;
namespace dwarf {
struct UnitScopes;
std::vector<UnitScopes> scopes_both_ways(const vm::Module& module);
}  // namespace dwarf

// One frame of source: a function and where in it execution is. Views point
// into the Symbolizer (or the Module) and live as long as they do.
struct SourceFrame {
  std::string_view function;       // display name, demangled ("geo::norm2(geo::Vec<int> const&)")
  std::string_view system_name;    // linkage (mangled) name, or `function` when there is none
  std::string_view function_file;  // file that defines the function (DW_AT_decl_file), "" if unknown
  uint32_t start_line = 0;         // line of its definition (DW_AT_decl_line), 0 if unknown
  std::string_view file;           // file of `line`, "" if unknown
  uint32_t line = 0;               // 0: unknown, or code the compiler tied to no line
  uint32_t column = 0;             // 0: unknown
  bool inlined = false;            // an inlined call (not the physical wasm function)
};

class Symbolizer {
 public:
  // Reads `module`'s DWARF if it has any. Never fails: a module without
  // DWARF, or with DWARF libdwarf rejects, gets function-level symbols
  // (names from the name section, exports, or wasm-function[N]), and
  // warning() says what was wrong with the DWARF. `module` must outlive this.
  explicit Symbolizer(const vm::Module& module);
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // The frames at the instruction at module byte offset `address`, innermost
  // first and the physical wasm function last (pprof's order for a
  // Location's Line entries). Each inlined frame carries its own line; each
  // frame further out carries the line of the call to the frame inside it
  // (DW_AT_call_line). Without line information, one frame with the function
  // name only. Empty when `address` is in no function's code.
  std::vector<SourceFrame> lookup(uint32_t address) const;
  // The same, for an address the caller knows to be in function `func_index`
  // (the VM's frame says which function runs): where DWARF has no function
  // at `address`, the fallback frame names that function.
  std::vector<SourceFrame> lookup(uint32_t address, uint32_t func_index) const;

  // The function with index `func_index` (imports first, as in the wasm
  // index space) as a whole: name, file and start line, no line of
  // execution. Imports and out-of-range indices get their fallback names.
  SourceFrame function(uint32_t func_index) const;

  // Index of the defined function whose body contains `address` (in the
  // function index space), if any.
  std::optional<uint32_t> function_at(uint32_t address) const;

  // Reads at once the compile units that lookups at these module offsets
  // will need. Optional: lookups read what they need themselves, one address
  // at a time, but each read rebuilds the whole table, so a profile writer
  // that knows its addresses up front (CPython's: ~100 units) saves that.
  void prefetch(const std::vector<uint32_t>& addresses) const;

  // What the DWARF provides, for pprof's Mapping flags.
  // These four read every compile unit not read yet (see load()).
  bool has_line_numbers() const;
  bool has_inline_frames() const;
  // True if functions got their names from DWARF subprograms (else they come
  // from the name section, exports or indices).
  bool has_dwarf_functions() const;

  // Data layout from DWARF, for runtimes whose state the profiler reads
  // from linear memory (profiler/cpython.h). `fields` maps "Type.a.b" to
  // where member a.b lies in Type (a struct, union or typedef name), and
  // "Type" to its size; `variables` maps a global variable's name to its
  // address. False with `why` naming the first one DWARF does not give.
  struct Field {
    uint64_t offset = 0;      // bytes from the start of the type
    uint32_t bit_offset = 0;  // a bit field: its first bit in the byte at `offset`
    uint32_t bit_size = 0;    // a bit field: its width; 0 otherwise
    uint64_t size = 0;        // the member's (or the type's) size in bytes
  };
  bool layout(std::map<std::string, Field>& fields, std::map<std::string, uint64_t>& variables,
              std::string& why) const;

  // Why DWARF sections present in the module were not used, or "".
  const std::string& warning() const;

  // Offset in the module of the code section's payload: DWARF address 0.
  uint32_t code_base() const { return code_base_; }

  // The module's Go runtime tables when it was built by Go and they could
  // be read (then lookups come from them), else null.
  const GoModule* go() const { return go_.get(); }
  // The module was built by Go (go:buildid), whether or not its tables
  // could be read; go_note() says why not, or is empty.
  bool built_by_go() const { return built_by_go_; }
  const std::string& go_note() const { return go_note_; }
  // The module is CPython and its frames can be read (profiler/cpython.h),
  // else null; python_note() says why a CPython module's cannot. Read on
  // first call (it looks up DWARF types).
  const CPythonModule* python() const;
  const std::string& python_note() const;

  // Internal tables, public so the DWARF reader (symbolize.cc) can fill them.
  static constexpr uint32_t kNone = UINT32_MAX;
  // A function or an inlined call of one, found in .debug_info.
  struct Scope {
    uint32_t name = kNone;         // display name (string index)
    uint32_t system_name = kNone;  // linkage name (string index)
    uint32_t decl_file = kNone;
    uint32_t decl_line = 0;
    uint32_t parent = kNone;     // enclosing scope; kNone for the physical function
    uint32_t call_file = kNone;  // inlined calls: where the parent calls this one
    uint32_t call_line = 0;
    uint32_t call_column = 0;
  };
  // From `start` (module offset) to the next entry's start: innermost scope
  // and line-table row there.
  struct Entry {
    uint32_t start = 0;
    uint32_t scope = kNone;
    uint32_t file = kNone;
    uint32_t line = 0;
    uint32_t column = 0;
    bool operator==(const Entry&) const = default;
  };

 private:
  friend class DwarfReader;
  friend std::vector<UnitLineRows> line_rows_both_ways(const vm::Module& module);  // profiler/dwarf_lines.h
  friend std::vector<dwarf::UnitScopes> dwarf::scopes_both_ways(const vm::Module& module);  // dwarf_info.h
  SourceFrame scope_frame(uint32_t scope) const;
  std::vector<SourceFrame> lookup(uint32_t address, std::optional<uint32_t> func_index) const;
  std::string_view str(uint32_t index) const { return index == kNone ? std::string_view() : strings_[index]; }
  std::pair<uint32_t, uint32_t> fallback_names(uint32_t func_index) const;
  // Compile units are read when first needed: load() reads those covering
  // module offset `address` (symbolize.cc), load_all() the rest. They add
  // to the tables below through the reader, which holds this non-const.
  struct Lazy;
  void load(uint32_t address) const;
  // The unread units covering `address` into `wanted`; false when no unit's
  // ranges cover it (then the units without ranges are the candidates).
  bool unread_units_at(uint32_t address, std::vector<uint32_t>& wanted) const;
  void load_all() const;
  template <class Pred>
  void read_units(Pred wanted) const;

  const vm::Module& module_;
  uint32_t code_base_ = 0;
  bool has_lines_ = false;
  bool has_inlines_ = false;
  std::string warning_;
  std::vector<Scope> scopes_;
  std::vector<Entry> entries_;  // sorted by start
  // Interned strings, a deque so that views of them stay valid while it
  // grows (fallback_names adds to it lazily, hence mutable).
  mutable std::deque<std::string> strings_;
  // Per function index: {display, system} string indices once computed.
  mutable std::vector<std::pair<uint32_t, uint32_t>> fallback_;
  std::unique_ptr<Lazy> lazy_;  // null without DWARF
  std::unique_ptr<GoModule> go_;
  bool built_by_go_ = false;
  std::string go_note_;
  mutable bool python_read_ = false;
  mutable std::unique_ptr<CPythonModule> python_;
  mutable std::string python_note_;
  std::vector<SourceFrame> go_lookup(uint32_t address, std::optional<uint32_t> func_index) const;
};

}  // namespace wzvm::profiler
