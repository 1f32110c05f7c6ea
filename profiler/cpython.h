#pragma once
// CPython programs (python.wasm built for wasm32-wasi, CPython 3.11) read as
// Python: at a sample, the running thread's chain of Python frames is read
// from linear memory, so a profile shows Python functions, files and lines
// in place of the C evaluation loop that runs them.
//
// What CPython 3.11 does that this relies on:
//  - `_PyRuntime.gilstate.tstate_current` is the running thread's state (or
//    NULL while it has released the GIL around a blocking call: then the
//    main interpreter's only thread), and its `cframe` the innermost `_PyCFrame`: every call of the
//    evaluation loop (`_PyEval_EvalFrameDefault`) pushes one on the C stack and links it to the one before
//    (`previous`); the thread's own `root_cframe` is the outermost and belongs to no evaluation.
//  - a `_PyCFrame`'s `current_frame` is the innermost Python frame that
//    evaluation runs; Python-to-Python calls stay in the same C call, and
//    the frames it runs are linked by `previous` down to the one it was
//    entered with (`is_entry`).
//  - a frame's `prev_instr` points into its code object's
//    `co_code_adaptive`; `co_linetable` (the 3.11 location table) maps the
//    instruction to a line, `co_qualname` and `co_filename` name it.
// Every offset comes from the module's DWARF (Symbolizer::layout), none is
// written here; the version is `Py_Version`'s value. A module without
// DWARF, or of another version, is profiled at the C level, with one note.
// Every pointer read is checked (inside memory, code objects have
// PyCode_Type, strings PyUnicode_Type), and a chain that does not check out
// gives no Python frames rather than wrong ones.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vm/module.h"

namespace wzvm::profiler {

class Symbolizer;

// One Python frame: the code object it runs and its current line.
struct PyFrame {
  std::string function;     // "module.Class.method": the file's module name, then co_qualname
  std::string qualname;     // co_qualname
  std::string file;         // co_filename, as the guest sees it
  uint32_t start_line = 0;  // co_firstlineno
  uint32_t line = 0;        // 0: unknown
};

class CPythonModule {
 public:
  // CPython, recognised by its `_PyRuntime` and `Py_Version` variables and
  // its `_PyEval_EvalFrameDefault` function; null when `module` is not.
  // When it is CPython but cannot be walked (no DWARF, another version, a
  // layout DWARF does not give), null too, and `note` says why.
  static std::unique_ptr<CPythonModule> read(const vm::Module& module, const Symbolizer& sym,
                                             std::string& note);
  ~CPythonModule();

  uint32_t version() const { return version_; }  // PY_VERSION_HEX, e.g. 0x030B02F0
  // Index (imports included) of the evaluation loop's wasm function.
  uint32_t eval_function() const { return eval_function_; }

  // The running thread's Python frames, one group per call of the
  // evaluation loop, innermost call first; within a group, innermost frame
  // first. False (and `groups` empty) when the chain does not check out.
  bool walk(const uint8_t* mem, uint64_t mem_size, std::vector<std::vector<PyFrame>>& groups) const;

  // The same chain as words, without reading a name or a line: per frame
  // its code object, instruction pointer, co_qualname and co_filename (a
  // code object freed and another made at its address has other strings),
  // and kGroupEnd after each group. Cheap enough for every allocation: a
  // profiler keys its cache of describe()d stacks by it.
  static constexpr uint32_t kGroupEnd = 0;
  bool walk_words(const uint8_t* mem, uint64_t mem_size, std::vector<uint32_t>& words) const;
  // What walk() gives for the chain walk_words() gave, read now.
  bool describe(const uint8_t* mem, uint64_t mem_size, const std::vector<uint32_t>& words,
                std::vector<std::vector<PyFrame>>& groups) const;
  // One frame of it: the kFrameWords words from `words` on.
  static constexpr size_t kFrameWords = 4;
  bool frame(const uint8_t* mem, uint64_t mem_size, const uint32_t* words, PyFrame& out) const;

  // The line of code-unit `index` in the code object at `code` from its
  // location table (exposed for tests); 0 when it has none.
  uint32_t line_of(const uint8_t* mem, uint64_t mem_size, uint32_t code, int64_t index) const;

  // For instruction counts by Python line (Profiler::probe), which look at
  // the running frame at every bytecode the loop dispatches:
  // The name of the evaluation loop's function, which the counting lowering
  // probes (LoadOptions::probe_dispatch): its opcode switch is its only
  // br_table of 128 targets or more.
  static uint32_t dispatch_probe(const vm::Module& module, uint32_t func_index);
  // The running thread's innermost frame and the code object it runs.
  bool running(const uint8_t* mem, uint64_t mem_size, uint32_t& frame, uint32_t& code) const;
  // The code object of `frame` (non-zero), as running() reads it.
  bool code_of(const uint8_t* mem, uint64_t mem_size, uint32_t frame, uint32_t& code) const;
  // Where code_of reads: the code object's address is the i32 at frame + this.
  uint32_t code_field() const;
  // A frame's links: its code, instruction pointer (prev_instr), the frame
  // it returns to and whether it was the entry of its evaluation.
  struct FrameLinks {
    uint32_t code = 0, prev_instr = 0, previous = 0;
    bool entry = false;
  };
  bool links(const uint8_t* mem, uint64_t mem_size, uint32_t frame, FrameLinks& out) const;
  // A code object's bytecode and lines: the address of its first code unit,
  // the line of every unit (location table; an instruction with no line
  // takes the next one's, as line_of), the words that identify it (its
  // location table, co_qualname, co_filename: a code object freed and
  // another made at its address has others).
  struct CodeLines {
    uint32_t start = 0;
    uint32_t first_line = 0;
    uint32_t linetable = 0, qualname = 0, filename = 0;
    std::vector<uint32_t> lines;
    // Per unit, the run of units around it on its line, [run_lo, run_hi):
    // the range a line's count stays in (Profiler::probe), without a scan.
    std::vector<uint32_t> run_lo, run_hi;
  };
  bool code_lines(const uint8_t* mem, uint64_t mem_size, uint32_t code, CodeLines& out) const;
  // Whether `out` (from code_lines) still describes the code object at `code`.
  bool same_code(const uint8_t* mem, uint64_t mem_size, uint32_t code, const CodeLines& c) const;
  // The frame a code object's names and a line describe.
  bool describe_code(const uint8_t* mem, uint64_t mem_size, const CodeLines& c, uint32_t line,
                     PyFrame& out) const;

 private:
  CPythonModule() = default;
  struct Layout;
  bool text(const uint8_t* mem, uint64_t mem_size, uint32_t object, std::string& out) const;
  // The location table of the code object at `code`, entry by entry:
  // entry(units, line) (kNoLine: none) until it returns false; `head` gets
  // the rest of CodeLines. False when the object or its table does not
  // check out.
  static constexpr uint32_t kNoLine = UINT32_MAX;
  template <class Entry>
  bool decode_lines(const uint8_t* mem, uint64_t mem_size, uint32_t code, CodeLines& head,
                    Entry&& entry) const;

  std::unique_ptr<Layout> l_;
  uint32_t version_ = 0;
  uint32_t eval_function_ = 0;
};

}  // namespace wzvm::profiler
