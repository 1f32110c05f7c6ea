#include "profiler/cpython.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <string_view>

#include "profiler/symbolize.h"

namespace wzvm::profiler {

namespace {

// Deeper chains than these are not stacks a program has: memory that loops.
constexpr int kMaxGroups = 4096;
constexpr int kMaxFramesPerGroup = 65536;
constexpr uint32_t kMaxText = 4096;

bool u32(const uint8_t* mem, uint64_t size, uint64_t at, uint32_t& v) {
  if (at > size || size - at < 4) return false;
  std::memcpy(&v, mem + at, 4);
  return true;
}

void append_utf8(std::string& out, uint32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | c >> 6);
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | c >> 12);
    out += static_cast<char>(0x80 | (c >> 6 & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | c >> 18);
    out += static_cast<char>(0x80 | (c >> 12 & 0x3F));
    out += static_cast<char>(0x80 | (c >> 6 & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

// "json/encoder.py" -> "encoder", "pkg/__init__.py" -> "pkg",
// "<frozen importlib._bootstrap>" -> "importlib._bootstrap": the name a
// file's functions are shown under (a script's is its file name, as
// cProfile shows it, not "__main__").
std::string module_name(std::string_view file) {
  // Frozen modules (importlib's bootstrap, os, site, ...) are named by
  // their module: "<frozen importlib._bootstrap>".
  constexpr std::string_view kFrozen = "<frozen ";
  if (file.size() > kFrozen.size() + 1 && file.substr(0, kFrozen.size()) == kFrozen && file.back() == '>')
    return std::string(file.substr(kFrozen.size(), file.size() - kFrozen.size() - 1));
  auto base = [](std::string_view p) {
    size_t slash = p.find_last_of('/');
    return slash == std::string_view::npos ? p : p.substr(slash + 1);
  };
  std::string_view stem = base(file);
  if (stem.size() > 3 && stem.substr(stem.size() - 3) == ".py") stem.remove_suffix(3);
  if (stem == "__init__") {
    size_t slash = file.find_last_of('/');
    if (slash != std::string_view::npos) stem = base(file.substr(0, slash));
  }
  return std::string(stem);
}

}  // namespace

// Where each field the walk reads lies, from DWARF (names as in CPython's
// headers: struct tags, or the typedef of an anonymous struct).
struct CPythonModule::Layout {
  uint32_t runtime = 0, code_type = 0, unicode_type = 0, bytes_type = 0;
  using F = Symbolizer::Field;
  F tstate_current, interp_main, interp_threads, thread_next, cframe, root_cframe, current_frame,
      cframe_previous;
  F f_code, f_previous, prev_instr, is_entry;
  F ob_type, co_filename, co_qualname, co_linetable, co_firstlineno, co_code_adaptive;
  F bytes_size, bytes_data;
  F ascii_size, compact_size, length, kind, compact, ascii;

  bool ptr(const uint8_t* mem, uint64_t size, uint64_t base, const F& f, uint32_t& v) const {
    return u32(mem, size, base + f.offset, v);
  }
  uint32_t bits(const uint8_t* mem, uint64_t size, uint64_t base, const F& f) const {
    uint32_t v = 0;
    if (!u32(mem, size, base + f.offset, v)) return 0;
    return f.bit_size >= 32 ? v : (v >> f.bit_offset) & ((1u << f.bit_size) - 1);
  }
  bool has_type(const uint8_t* mem, uint64_t size, uint32_t object, uint32_t type) const {
    uint32_t t = 0;
    return object && ptr(mem, size, object, ob_type, t) && t == type;
  }
};

CPythonModule::~CPythonModule() = default;

std::unique_ptr<CPythonModule> CPythonModule::read(const vm::Module& module, const Symbolizer& sym,
                                                   std::string& note) {
  // The evaluation loop, by the name section: without it (a stripped
  // module, or not CPython) there is nothing to replace.
  uint32_t eval = UINT32_MAX;
  if (!module.names.functions.empty())
    for (uint32_t f = module.num_imported_funcs; f < module.func_type_indices.size(); ++f)
      if (module.function_name(f) == "_PyEval_EvalFrameDefault") {
        eval = f;
        break;
      }
  if (eval == UINT32_MAX) return nullptr;

  std::map<std::string, uint64_t> vars{
      {"_PyRuntime", 0}, {"Py_Version", 0}, {"PyCode_Type", 0}, {"PyUnicode_Type", 0}, {"PyBytes_Type", 0}};
  const char* paths[] = {
      "pyruntimestate.gilstate.tstate_current._value",
      "pyruntimestate.interpreters.main",
      "_is.threads.head",
      "_ts.next",
      "_ts.cframe",
      "_ts.root_cframe",
      "_PyCFrame.current_frame",
      "_PyCFrame.previous",
      "_PyInterpreterFrame.f_code",
      "_PyInterpreterFrame.previous",
      "_PyInterpreterFrame.prev_instr",
      "_PyInterpreterFrame.is_entry",
      "_object.ob_type",
      "PyCodeObject.co_filename",
      "PyCodeObject.co_qualname",
      "PyCodeObject.co_linetable",
      "PyCodeObject.co_firstlineno",
      "PyCodeObject.co_code_adaptive",
      "PyBytesObject.ob_base.ob_size",
      "PyBytesObject.ob_sval",
      "PyASCIIObject",
      "PyCompactUnicodeObject",
      "PyASCIIObject.length",
      "PyASCIIObject.state.kind",
      "PyASCIIObject.state.compact",
      "PyASCIIObject.state.ascii",
  };
  std::map<std::string, Symbolizer::Field> fields;
  for (const char* p : paths) fields[p];
  std::string why;
  if (!sym.layout(fields, vars, why)) {
    note = "CPython's frames cannot be read (" + why + "): profiled at the C level";
    return nullptr;
  }
  // Py_Version is a constant in the data segments.
  uint32_t version = 0;
  bool found = false;
  for (const vm::DataSegment& d : module.datas) {
    if (d.mode != vm::SegmentMode::Active || d.memory != 0 || d.offset.code.size() != 1 ||
        d.offset.code[0].op != vm::ConstInstr::Op::I32Const)
      continue;
    const uint64_t at = static_cast<uint32_t>(d.offset.code[0].value);
    if (vars["Py_Version"] >= at && vars["Py_Version"] + 4 <= at + d.size) {
      std::memcpy(&version, module.bytes.data() + d.data_offset + (vars["Py_Version"] - at), 4);
      found = true;
    }
  }
  if (!found) {
    note = "CPython's version (Py_Version) is not in the module's data: profiled at the C level";
    return nullptr;
  }
  if ((version >> 16) != 0x030B) {
    note = "CPython " + std::to_string(version >> 24) + "." + std::to_string(version >> 16 & 0xFF) +
           " is not one whose frames wzvm reads (3.11): profiled at the C level";
    return nullptr;
  }
  // wasm32: every pointer the walk follows is 4 bytes.
  for (const char* p :
       {"pyruntimestate.gilstate.tstate_current._value", "_ts.cframe", "_PyCFrame.current_frame",
        "_PyInterpreterFrame.f_code", "_PyInterpreterFrame.prev_instr", "PyCodeObject.co_linetable"})
    if (fields[p].size != 4) {
      note = std::string("CPython's ") + p + " is not a 4-byte pointer: profiled at the C level";
      return nullptr;
    }

  std::unique_ptr<CPythonModule> py(new CPythonModule);
  py->version_ = version;
  py->eval_function_ = eval;
  py->l_ = std::make_unique<Layout>();
  Layout& l = *py->l_;
  l.runtime = static_cast<uint32_t>(vars["_PyRuntime"]);
  l.code_type = static_cast<uint32_t>(vars["PyCode_Type"]);
  l.unicode_type = static_cast<uint32_t>(vars["PyUnicode_Type"]);
  l.bytes_type = static_cast<uint32_t>(vars["PyBytes_Type"]);
  l.tstate_current = fields["pyruntimestate.gilstate.tstate_current._value"];
  l.interp_main = fields["pyruntimestate.interpreters.main"];
  l.interp_threads = fields["_is.threads.head"];
  l.thread_next = fields["_ts.next"];
  l.cframe = fields["_ts.cframe"];
  l.root_cframe = fields["_ts.root_cframe"];
  l.current_frame = fields["_PyCFrame.current_frame"];
  l.cframe_previous = fields["_PyCFrame.previous"];
  l.f_code = fields["_PyInterpreterFrame.f_code"];
  l.f_previous = fields["_PyInterpreterFrame.previous"];
  l.prev_instr = fields["_PyInterpreterFrame.prev_instr"];
  l.is_entry = fields["_PyInterpreterFrame.is_entry"];
  l.is_entry.bit_size = static_cast<uint32_t>(8 * l.is_entry.size);
  l.ob_type = fields["_object.ob_type"];
  l.co_filename = fields["PyCodeObject.co_filename"];
  l.co_qualname = fields["PyCodeObject.co_qualname"];
  l.co_linetable = fields["PyCodeObject.co_linetable"];
  l.co_firstlineno = fields["PyCodeObject.co_firstlineno"];
  l.co_code_adaptive = fields["PyCodeObject.co_code_adaptive"];
  l.bytes_size = fields["PyBytesObject.ob_base.ob_size"];
  l.bytes_data = fields["PyBytesObject.ob_sval"];
  l.ascii_size = fields["PyASCIIObject"];
  l.compact_size = fields["PyCompactUnicodeObject"];
  l.length = fields["PyASCIIObject.length"];
  l.kind = fields["PyASCIIObject.state.kind"];
  l.compact = fields["PyASCIIObject.state.compact"];
  l.ascii = fields["PyASCIIObject.state.ascii"];
  return py;
}

bool CPythonModule::walk_words(const uint8_t* mem, uint64_t mem_size, std::vector<uint32_t>& words) const {
  words.clear();
  const Layout& l = *l_;
  uint32_t ts = 0, cf = 0;
  if (!l.ptr(mem, mem_size, l.runtime, l.tstate_current, ts)) return false;
  // No current thread state: the GIL is released around a blocking call
  // (os.stat, a read, time.sleep). The main interpreter's thread is then
  // the one running, if it is its only thread (WASI has no others).
  uint32_t interp = 0, next = 1;
  if (!ts && (!l.ptr(mem, mem_size, l.runtime, l.interp_main, interp) || !interp ||
              !l.ptr(mem, mem_size, interp, l.interp_threads, ts) || !ts ||
              !l.ptr(mem, mem_size, ts, l.thread_next, next) || next))
    return false;
  if (!ts || !l.ptr(mem, mem_size, ts, l.cframe, cf)) return false;
  const uint64_t root = uint64_t{ts} + l.root_cframe.offset;
  for (int depth = 0; cf && cf != root; ++depth) {
    uint32_t f = 0;
    if (depth == kMaxGroups || !l.ptr(mem, mem_size, cf, l.current_frame, f) || !f)
      return words.clear(), false;
    for (int n = 0; f; ++n) {
      uint32_t code = 0, prev = 0, qualname = 0, filename = 0;
      if (n == kMaxFramesPerGroup || !l.ptr(mem, mem_size, f, l.f_code, code) ||
          !l.has_type(mem, mem_size, code, l.code_type) || !l.ptr(mem, mem_size, f, l.prev_instr, prev) ||
          !l.ptr(mem, mem_size, code, l.co_qualname, qualname) ||
          !l.ptr(mem, mem_size, code, l.co_filename, filename))
        return words.clear(), false;
      words.insert(words.end(), {code, prev, qualname, filename});
      if (l.bits(mem, mem_size, f, l.is_entry) & 0xFF) break;
      if (!l.ptr(mem, mem_size, f, l.f_previous, f)) return words.clear(), false;
    }
    words.push_back(kGroupEnd);
    if (!l.ptr(mem, mem_size, cf, l.cframe_previous, cf)) return words.clear(), false;
  }
  return true;
}

bool CPythonModule::describe(const uint8_t* mem, uint64_t mem_size, const std::vector<uint32_t>& words,
                             std::vector<std::vector<PyFrame>>& groups) const {
  groups.clear();
  std::vector<PyFrame>* g = nullptr;
  for (size_t i = 0; i < words.size();) {
    if (words[i] == kGroupEnd) {
      g = nullptr;
      ++i;
      continue;
    }
    if (!g) g = &groups.emplace_back();
    if (i + kFrameWords > words.size() || !frame(mem, mem_size, &words[i], g->emplace_back()))
      return groups.clear(), false;
    i += kFrameWords;
  }
  return true;
}

bool CPythonModule::walk(const uint8_t* mem, uint64_t mem_size,
                         std::vector<std::vector<PyFrame>>& groups) const {
  std::vector<uint32_t> words;
  return walk_words(mem, mem_size, words) ? describe(mem, mem_size, words, groups) : (groups.clear(), false);
}

// `words`: code, prev_instr, co_qualname, co_filename (walk_words).
bool CPythonModule::frame(const uint8_t* mem, uint64_t mem_size, const uint32_t* words, PyFrame& out) const {
  const Layout& l = *l_;
  const uint32_t code = words[0], prev = words[1];
  uint32_t first = 0;
  if (!l.ptr(mem, mem_size, code, l.co_firstlineno, first) || !text(mem, mem_size, words[3], out.file) ||
      !text(mem, mem_size, words[2], out.qualname))
    return false;
  out.start_line = static_cast<int32_t>(first) > 0 ? first : 0;
  out.function = module_name(out.file) + "." + out.qualname;
  // prev_instr is the instruction being executed (or, before the first, the
  // code unit before it): code units are 2 bytes.
  const int64_t index = (int64_t{prev} - int64_t{code} - int64_t(l.co_code_adaptive.offset)) / 2;
  out.line = line_of(mem, mem_size, code, index);
  return true;
}

bool CPythonModule::text(const uint8_t* mem, uint64_t mem_size, uint32_t object, std::string& out) const {
  const Layout& l = *l_;
  out.clear();
  uint32_t length = 0;
  if (!l.has_type(mem, mem_size, object, l.unicode_type) || !l.bits(mem, mem_size, object, l.compact) ||
      !l.ptr(mem, mem_size, object, l.length, length) || length > kMaxText)
    return false;
  const bool ascii = l.bits(mem, mem_size, object, l.ascii);
  const uint32_t kind = ascii ? 1 : l.bits(mem, mem_size, object, l.kind);
  if (kind != 1 && kind != 2 && kind != 4) return false;
  const uint64_t data = uint64_t{object} + (ascii ? l.ascii_size.size : l.compact_size.size);
  if (data > mem_size || mem_size - data < uint64_t{length} * kind) return false;
  for (uint32_t i = 0; i < length; ++i) {
    uint32_t c = 0;
    std::memcpy(&c, mem + data + uint64_t{i} * kind, kind);
    append_utf8(out, c);
  }
  return true;
}

// The 3.11 location table: entries of one header byte (1 CCCC LLL: code C,
// L + 1 code units) and its operands; codes 0-9 keep the line (one column
// byte), 10-12 add C - 10 (two column bytes), 13 adds a signed varint,
// 14 a signed varint then three varints (end line, columns), 15 says the
// instructions have no line. Varints are 6 bits a byte, bit 6 continuing.
// Lines start at co_firstlineno; an index before the first instruction
// (a frame about to start) is at that line.
template <class Entry>
bool CPythonModule::decode_lines(const uint8_t* mem, uint64_t mem_size, uint32_t code, CodeLines& head,
                                 Entry&& entry) const {
  const Layout& l = *l_;
  uint32_t first = 0, size = 0;
  if (!l.has_type(mem, mem_size, code, l.code_type) || !l.ptr(mem, mem_size, code, l.co_firstlineno, first) ||
      !l.ptr(mem, mem_size, code, l.co_linetable, head.linetable) ||
      !l.has_type(mem, mem_size, head.linetable, l.bytes_type) ||
      !l.ptr(mem, mem_size, head.linetable, l.bytes_size, size) ||
      !l.ptr(mem, mem_size, code, l.co_qualname, head.qualname) ||
      !l.ptr(mem, mem_size, code, l.co_filename, head.filename))
    return false;
  head.start = static_cast<uint32_t>(uint64_t{code} + l.co_code_adaptive.offset);
  head.first_line = static_cast<int32_t>(first) > 0 ? first : 0;
  const uint64_t begin = uint64_t{head.linetable} + l.bytes_data.offset;
  if (begin > mem_size || mem_size - begin < size) return false;
  const uint8_t* p = mem + begin;
  const uint8_t* end = p + size;
  auto varint = [&](uint64_t& v) {
    v = 0;
    for (int shift = 0; p < end && shift < 64; shift += 6) {
      const uint8_t b = *p++;
      v |= uint64_t(b & 63) << shift;
      if (!(b & 64)) return true;
    }
    return false;
  };
  int64_t line = static_cast<int32_t>(first);
  while (p < end) {
    const uint8_t h = *p++;
    if (!(h & 0x80)) return false;  // not an entry's start: malformed
    const int kind = h >> 3 & 15;
    const uint32_t units = (h & 7) + 1;
    int64_t delta = 0;
    uint64_t v = 0;
    if (kind == 15) {
    } else if (kind == 14 || kind == 13) {
      if (!varint(v)) return false;
      delta = (v & 1) ? -int64_t(v >> 1) : int64_t(v >> 1);
      if (kind == 14)
        for (int i = 0; i < 3; ++i)
          if (!varint(v)) return false;
    } else if (kind >= 10) {
      delta = kind - 10;
      p += 2;
    } else {
      p += 1;
    }
    line += delta;
    if (!entry(units, kind == 15 ? kNoLine : line > 0 && line < kNoLine ? static_cast<uint32_t>(line) : 0))
      break;
  }
  return true;
}

bool CPythonModule::code_lines(const uint8_t* mem, uint64_t mem_size, uint32_t code, CodeLines& out) const {
  out = CodeLines{};
  if (!decode_lines(mem, mem_size, code, out, [&](uint32_t units, uint32_t line) {
        out.lines.insert(out.lines.end(), units, line);
        return out.lines.size() <= (uint32_t{1} << 24);
      }))
    return false;
  // An instruction with no line takes the next one's that has one: a
  // closure's prologue (COPY_FREE_VARS, MAKE_CELL) is the function
  // starting, at its `def` line as RESUME is; an `except` handler's entry
  // (PUSH_EXC_INFO) is its `except` line. None after it: unknown, 0.
  uint32_t next = 0;
  for (size_t i = out.lines.size(); i-- > 0;) {
    if (out.lines[i] == kNoLine) out.lines[i] = next;
    else next = out.lines[i];
  }
  const std::vector<uint32_t>& l = out.lines;
  const uint32_t n = static_cast<uint32_t>(l.size());
  out.run_lo.resize(n);
  out.run_hi.resize(n);
  for (uint32_t i = 0; i < n; ++i) out.run_lo[i] = i > 0 && l[i - 1] == l[i] ? out.run_lo[i - 1] : i;
  for (uint32_t i = n; i-- > 0;) out.run_hi[i] = i + 1 < n && l[i + 1] == l[i] ? out.run_hi[i + 1] : i + 1;
  return true;
}

// A sample's or an allocation's frame: as code_lines() would give it, from
// the table up to `index` only and without allocating: samples read it for
// every frame of the stack, thousands of times a second.
uint32_t CPythonModule::line_of(const uint8_t* mem, uint64_t mem_size, uint32_t code, int64_t index) const {
  CodeLines head;
  int64_t at = 0;
  uint32_t found = 0;
  if (!decode_lines(mem, mem_size, code, head, [&](uint32_t units, uint32_t line) {
        if (index < at + units && line != kNoLine) {
          found = line;
          return false;
        }
        at += units;
        return true;
      }))
    return 0;
  return index < 0 ? head.first_line : found;
}

bool CPythonModule::same_code(const uint8_t* mem, uint64_t mem_size, uint32_t code,
                              const CodeLines& c) const {
  const Layout& l = *l_;
  uint32_t table = 0, qualname = 0, filename = 0;
  return l.ptr(mem, mem_size, code, l.co_linetable, table) && table == c.linetable &&
         l.ptr(mem, mem_size, code, l.co_qualname, qualname) && qualname == c.qualname &&
         l.ptr(mem, mem_size, code, l.co_filename, filename) && filename == c.filename;
}

bool CPythonModule::describe_code(const uint8_t* mem, uint64_t mem_size, const CodeLines& c, uint32_t line,
                                  PyFrame& out) const {
  if (!text(mem, mem_size, c.filename, out.file) || !text(mem, mem_size, c.qualname, out.qualname))
    return false;
  out.start_line = c.first_line;
  out.function = module_name(out.file) + "." + out.qualname;
  out.line = line;
  return true;
}

uint32_t CPythonModule::dispatch_probe(const vm::Module& module, uint32_t func_index) {
  return module.function_name(func_index) == "_PyEval_EvalFrameDefault" ? 128 : 0;
}

bool CPythonModule::running(const uint8_t* mem, uint64_t mem_size, uint32_t& frame, uint32_t& code) const {
  const Layout& l = *l_;
  uint32_t ts = 0, cf = 0;
  return l.ptr(mem, mem_size, l.runtime, l.tstate_current, ts) && ts &&
         l.ptr(mem, mem_size, ts, l.cframe, cf) && cf && l.ptr(mem, mem_size, cf, l.current_frame, frame) &&
         frame && code_of(mem, mem_size, frame, code);
}

bool CPythonModule::code_of(const uint8_t* mem, uint64_t mem_size, uint32_t frame, uint32_t& code) const {
  return l_->ptr(mem, mem_size, frame, l_->f_code, code) && code;
}

uint32_t CPythonModule::code_field() const { return l_->f_code.offset; }

bool CPythonModule::links(const uint8_t* mem, uint64_t mem_size, uint32_t frame, FrameLinks& out) const {
  const Layout& l = *l_;
  if (!l.ptr(mem, mem_size, frame, l.f_code, out.code) ||
      !l.ptr(mem, mem_size, frame, l.prev_instr, out.prev_instr) ||
      !l.ptr(mem, mem_size, frame, l.f_previous, out.previous))
    return false;
  out.entry = l.bits(mem, mem_size, frame, l.is_entry) & 0xFF;
  return true;
}

}  // namespace wzvm::profiler
