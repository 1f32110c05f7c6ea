#include "profiler/symbolize.h"

#include <libdwarf/dwarf.h>
#include <libdwarf/libdwarf.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

#include "profiler/cpython.h"
#include "profiler/demangle.h"
#include "profiler/dwarf_info.h"
#include "profiler/dwarf_lines.h"
#include "profiler/golang.h"

namespace wzvm::profiler {
namespace {

// ---- The module as a libdwarf object --------------------------------------
//
// libdwarf knows ELF, Mach-O and PE but not wasm; its object-access interface
// lets us hand it sections ourselves. Each custom section named ".debug_*"
// becomes one section; index 0 is an empty placeholder, as ELF's null
// section is, because libdwarf's section setup treats index 0 specially.
// wasm is little-endian with 32-bit addresses, and wasm-ld leaves no
// relocations in DWARF, so there is no relocate callback.

struct WasmSection {
  const char* name;
  const uint8_t* data;
  uint64_t size;
};

struct WasmObject {
  std::vector<WasmSection> sections;
};

int get_section_info(void* obj, Dwarf_Half index, Dwarf_Obj_Access_Section* out, int* error) {
  auto* o = static_cast<WasmObject*>(obj);
  if (index >= o->sections.size()) {
    *error = DW_DLE_MDE;
    return DW_DLV_NO_ENTRY;
  }
  const WasmSection& s = o->sections[index];
  *out = {};
  out->addr = 0;
  out->size = s.size;
  out->name = s.name;
  return DW_DLV_OK;
}
Dwarf_Endianness get_byte_order(void*) { return DW_OBJECT_LSB; }
Dwarf_Small get_length_size(void*) { return 4; }
Dwarf_Small get_pointer_size(void*) { return 4; }
Dwarf_Unsigned get_section_count(void* obj) { return static_cast<WasmObject*>(obj)->sections.size(); }
int load_section(void* obj, Dwarf_Half index, Dwarf_Small** data, int* error) {
  auto* o = static_cast<WasmObject*>(obj);
  if (index >= o->sections.size() || o->sections[index].size == 0) {
    *error = DW_DLE_MDE;
    return DW_DLV_NO_ENTRY;
  }
  // libdwarf only writes into a section when it relocates it, which it
  // cannot do here (no relocate callback), so handing out the module's
  // const bytes is safe.
  *data = const_cast<Dwarf_Small*>(o->sections[index].data);
  return DW_DLV_OK;
}
const Dwarf_Obj_Access_Methods kWasmMethods = {
    get_section_info,  get_byte_order, get_length_size, get_pointer_size,
    get_section_count, load_section,   nullptr,
};

// Offset and size of the code section's payload (id 10), found by walking
// the section headers (https://webassembly.github.io/spec/core/binary/modules.html#sections).
// The module is already validated, but the walk checks bounds anyway.
bool find_code_section(const std::vector<uint8_t>& b, uint32_t& offset, uint32_t& size) {
  size_t p = 8;  // magic + version
  while (p < b.size()) {
    uint8_t id = b[p++];
    uint64_t len = 0;
    for (unsigned shift = 0;; shift += 7) {
      if (p >= b.size() || shift > 28) return false;
      uint8_t byte = b[p++];
      len |= static_cast<uint64_t>(byte & 0x7F) << shift;
      if (!(byte & 0x80)) break;
    }
    if (len > b.size() - p) return false;
    if (id == 10) {
      offset = static_cast<uint32_t>(p);
      size = static_cast<uint32_t>(len);
      return true;
    }
    p += len;
  }
  return false;
}

// Debian 12's libdwarf (20210528) frees twice or reads out of bounds on some
// malformed .debug_rnglists (found by mutating the test programs' sections;
// no other section showed it). This walks the section's framing (DWARF 5,
// section 7.28: unit headers, offset arrays, entry kinds and operand sizes)
// so that a section libdwarf could choke on is left out instead. It checks
// bounds only and extracts nothing: reading stays libdwarf's.
bool rnglists_well_formed(const uint8_t* p, uint64_t size) {
  uint64_t at = 0;
  auto uleb = [&](uint64_t end) {
    for (int i = 0; i < 10; ++i, ++at)
      if (at >= end) return false;
      else if (!(p[at] & 0x80)) return ++at, true;
    return false;
  };
  auto read = [&](unsigned n, uint64_t end, uint64_t& v) {
    if (n > 8 || end - at < n) return false;
    v = 0;
    for (unsigned i = 0; i < n; ++i) v |= static_cast<uint64_t>(p[at + i]) << (8 * i);
    at += n;
    return true;
  };
  while (at < size) {
    uint64_t length = 0, v = 0;
    unsigned offset_size = 4;
    if (!read(4, size, length)) return false;
    if (length == 0xffffffff) {
      offset_size = 8;
      if (!read(8, size, length)) return false;
    }
    if (length > size - at) return false;
    const uint64_t end = at + length;
    uint64_t version = 0, address_size = 0, segment = 0, count = 0;
    if (!read(2, end, version) || version != 5 || !read(1, end, address_size) ||
        (address_size != 4 && address_size != 8) || !read(1, end, segment) || segment != 0 ||
        !read(4, end, count) || count > (end - at) / offset_size)
      return false;
    const uint64_t base = at;  // offsets count from the end of the header
    for (uint64_t i = 0; i < count; ++i)
      if (!read(offset_size, end, v) || v >= end - base) return false;
    while (at < end) {
      uint8_t kind = p[at++];
      bool ok = true;
      switch (kind) {
        case DW_RLE_end_of_list:
          break;
        case DW_RLE_base_addressx:
          ok = uleb(end);
          break;
        case DW_RLE_startx_endx:
        case DW_RLE_startx_length:
        case DW_RLE_offset_pair:
          ok = uleb(end) && uleb(end);
          break;
        case DW_RLE_base_address:
          ok = read(static_cast<unsigned>(address_size), end, v);
          break;
        case DW_RLE_start_end:
          ok = read(static_cast<unsigned>(address_size), end, v) &&
               read(static_cast<unsigned>(address_size), end, v);
          break;
        case DW_RLE_start_length:
          ok = read(static_cast<unsigned>(address_size), end, v) && uleb(end);
          break;
        default:
          return false;
      }
      if (!ok) return false;
    }
    at = end;
  }
  return true;
}

// libdwarf (Debian's 20210528) is not thread-safe even across separate
// Dwarf_Debug handles: reading a unit's line table (dwarf_srclines_b)
// goes through process-global state inside the library (a static string
// buffer, allocations shared through its static lists), so two readers at
// once corrupt each other's strings and the heap. They do run at once: the
// live pprof endpoint (profiler/live.h) builds each profile in a Profiler
// of its own, on one of the HTTP server's threads, and every such Profiler
// makes its own Symbolizer, so concurrent /heap, /allocs, /profile or
// /instructions requests all read DWARF together ("free(): invalid next
// size" and segfaults under 4 concurrent heap requests; TSan points here).
// One process-wide lock around everything that calls into libdwarf: the
// constructor, the lazy reading of units (Symbolizer::load) and the end.
std::mutex& libdwarf_mu() {
  static std::mutex mu;
  return mu;
}

// [lo, hi) in DWARF addresses (code section offsets).
struct ScopeRange {
  uint64_t lo, hi;
  uint32_t scope;
};
struct LineRange {
  uint64_t lo, hi;
  uint32_t file, line, column;
};

// Disjoint intervals where a later paint() covers what it overlaps: scopes
// are painted parents first, so the innermost inlined scope wins.
class Painter {
 public:
  void paint(uint64_t lo, uint64_t hi, uint32_t value) {
    if (lo >= hi) return;
    auto it = pieces_.lower_bound(lo);
    if (it != pieces_.begin()) {
      auto prev = std::prev(it);
      if (prev->second.end > lo) {
        Piece old = prev->second;
        prev->second.end = lo;
        if (old.end > hi) pieces_[hi] = {old.end, old.value};
      }
    }
    while (it != pieces_.end() && it->first < hi) {
      if (it->second.end > hi) pieces_[hi] = it->second;
      it = pieces_.erase(it);
    }
    pieces_[lo] = {hi, value};
  }
  template <typename F>
  void for_each(F f) const {
    for (const auto& [lo, p] : pieces_) f(lo, p.end, p.value);
  }

 private:
  struct Piece {
    uint64_t end;
    uint32_t value;
  };
  std::map<uint64_t, Piece> pieces_;
};

}  // namespace

// Walks every compile unit with libdwarf and fills the Symbolizer's tables.
class DwarfReader {
 public:
  DwarfReader(Symbolizer& s, Dwarf_Debug dbg, uint64_t code_size) : s_(s), dbg_(dbg), code_size_(code_size) {}

  // One compile unit of .debug_info: where its DIE is and the code it
  // covers (DWARF addresses), read from its unit DIE alone.
  struct Unit {
    Dwarf_Off start = 0, end = 0;  // of its header, and of the next unit's
    Dwarf_Off die = 0;
    std::vector<std::pair<uint64_t, uint64_t>> ranges;  // empty: unknown, read it with the first lookup
    bool loaded = false;
    uint32_t index = 0;  // in the unit list (InfoReader's too)
  };
  // Lists the units without reading their contents. False with `why` if
  // libdwarf gave up on a unit header (the units before it are kept).
  bool index(std::vector<Unit>& units, std::string& why) {
    for (Dwarf_Off start = 0;;) {
      Dwarf_Unsigned header_length = 0, type_offset = 0, next = 0;
      Dwarf_Half version = 0, address_size = 0, length_size = 0, extension_size = 0, header_type = 0;
      Dwarf_Off abbrev_offset = 0;
      Dwarf_Sig8 signature;
      int rc = dwarf_next_cu_header_d(dbg_, true, &header_length, &version, &abbrev_offset, &address_size,
                                      &length_size, &extension_size, &signature, &type_offset, &next,
                                      &header_type, &err_);
      if (rc == DW_DLV_NO_ENTRY) return true;
      if (rc != DW_DLV_OK) {
        why = error_text();
        return false;
      }
      Unit u;
      u.start = start;
      u.end = start = next;
      Dwarf_Die cu = nullptr;
      rc = dwarf_siblingof_b(dbg_, nullptr, true, &cu, &err_);
      if (rc != DW_DLV_OK) {
        if (rc == DW_DLV_ERROR) clear();
        continue;
      }
      if (dwarf_dieoffset(cu, &u.die, &err_) == DW_DLV_OK) {
        u.index = static_cast<uint32_t>(units.size());
        // DWARF 4 range lists count from the unit's base address.
        Dwarf_Addr low = 0;
        cu_base_ = dwarf_lowpc(cu, &low, &err_) == DW_DLV_OK ? low : 0;
        clear();
        code_ranges(cu, u.ranges);
        units.push_back(std::move(u));
      } else {
        clear();
      }
      dwarf_dealloc_die(cu);
    }
  }
  // Reads unit `u` into the tables; finish() then rebuilds the
  // Symbolizer's lookup table from every unit read so far.
  // ---- data layout (Symbolizer::layout) ----
  // Records, among unit `u`'s top-level DIEs, the first definition of each
  // type named in `types` (struct, union or typedef; declarations are not
  // definitions) and the address of each variable named in `variables`
  // (a DW_OP_addr location). Entries still 0 / kUnknown are looked for.
  static constexpr uint64_t kUnknown = UINT64_MAX;
  void scan_definitions(const Unit& u, std::map<std::string, Dwarf_Off, std::less<>>& types,
                        std::map<std::string, uint64_t, std::less<>>& variables) {
    if (own_scan_definitions(u, types, variables)) return;
    Dwarf_Die cu = nullptr;
    if (dwarf_offdie_b(dbg_, u.die, true, &cu, &err_) != DW_DLV_OK) {
      clear();
      return;
    }
    Dwarf_Die child = nullptr;
    int rc = dwarf_child(cu, &child, &err_);
    while (rc == DW_DLV_OK) {
      Dwarf_Half tag = 0;
      if (dwarf_tag(child, &tag, &err_) != DW_DLV_OK) clear(), tag = 0;
      // Only these tags are looked for: the name of anything else (most
      // DIEs are functions) is not read.
      const bool wanted = tag == DW_TAG_structure_type || tag == DW_TAG_union_type || tag == DW_TAG_typedef ||
                          tag == DW_TAG_variable;
      const char* name = wanted ? string(child, DW_AT_name) : nullptr;
      if (name && (tag == DW_TAG_structure_type || tag == DW_TAG_union_type || tag == DW_TAG_typedef)) {
        auto it = types.find(std::string_view(name));
        Dwarf_Off off = 0;
        if (it != types.end() && !it->second && !has(child, DW_AT_declaration) &&
            dwarf_dieoffset(child, &off, &err_) == DW_DLV_OK)
          it->second = off;
      } else if (name && tag == DW_TAG_variable) {
        auto it = variables.find(std::string_view(name));
        if (it != variables.end() && it->second == kUnknown) address(child, it->second);
      }
      Dwarf_Die next = nullptr;
      rc = dwarf_siblingof_b(dbg_, child, true, &next, &err_);
      dwarf_dealloc_die(child);
      child = next;
    }
    if (rc == DW_DLV_ERROR) clear();
    dwarf_dealloc_die(cu);
  }

  // Where member path `path` ("a.b.c") lies in the type whose DIE is at
  // `type`; an empty path gives the type's own size. False when a part is
  // missing, or a type on the way is only declared.
  bool member(Dwarf_Off type, std::string_view path, Symbolizer::Field& out) {
    out = {};
    for (int guard = 0; guard < 64; ++guard) {
      Dwarf_Off t = strip(type);
      if (!t) return false;
      Dwarf_Die die = nullptr;
      if (dwarf_offdie_b(dbg_, t, true, &die, &err_) != DW_DLV_OK) return clear(), false;
      if (path.empty()) {
        bool ok = udata(die, DW_AT_byte_size, out.size);
        // Pointers usually have no size of their own: the unit's address size.
        Dwarf_Half tag = 0, bytes = 0;
        if (!ok && dwarf_tag(die, &tag, &err_) == DW_DLV_OK && tag == DW_TAG_pointer_type &&
            dwarf_get_die_address_size(die, &bytes, &err_) == DW_DLV_OK)
          out.size = bytes, ok = true;
        clear();
        dwarf_dealloc_die(die);
        return ok;
      }
      const size_t dot = path.find('.');
      const std::string_view part = path.substr(0, dot);
      path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
      Dwarf_Half tag = 0;
      bool found = false;
      if (dwarf_tag(die, &tag, &err_) == DW_DLV_OK &&
          (tag == DW_TAG_structure_type || tag == DW_TAG_union_type) && !has(die, DW_AT_declaration)) {
        Dwarf_Die child = nullptr;
        int rc = dwarf_child(die, &child, &err_);
        while (rc == DW_DLV_OK && !found) {
          const char* name = dwarf_tag(child, &tag, &err_) == DW_DLV_OK && tag == DW_TAG_member
                                 ? string(child, DW_AT_name)
                                 : nullptr;
          if (name && part == name) {
            uint64_t at = 0, bits = 0, size = 0, msb = 0;
            // A union's members have no location: they start at 0.
            udata(child, DW_AT_data_member_location, at);
            out.bit_offset = out.bit_size = 0;
            if (udata(child, DW_AT_bit_size, size)) {
              out.bit_size = static_cast<uint32_t>(size);
              // DWARF 5 counts a bit field's bits from the start of the
              // struct; DWARF 4's DW_AT_bit_offset from the most
              // significant bit of a storage unit of DW_AT_byte_size bytes
              // at the member's location (little-endian wasm: flip it).
              uint64_t unit = 0;
              if (udata(child, DW_AT_data_bit_offset, bits)) at = bits / 8, bits %= 8;
              else if (udata(child, DW_AT_bit_offset, msb) && udata(child, DW_AT_byte_size, unit) &&
                       unit * 8 >= msb + size)
                bits = unit * 8 - msb - size, at += bits / 8, bits %= 8;
              out.bit_offset = static_cast<uint32_t>(bits);
            }
            out.offset += at;
            found = reference(child, DW_AT_type, type);
          }
          Dwarf_Die next = nullptr;
          if (!found) rc = dwarf_siblingof_b(dbg_, child, true, &next, &err_);
          dwarf_dealloc_die(child);
          child = next;
        }
        if (rc == DW_DLV_ERROR) clear();
      } else {
        clear();
      }
      dwarf_dealloc_die(die);
      if (!found) return false;
      if (path.empty()) {
        // The member's own size: from its type (a bit field has bit_size).
        Symbolizer::Field sized;
        if (!out.bit_size && member(type, "", sized)) out.size = sized.size;
        return true;
      }
    }
    return false;
  }

  // For line_rows_both_ways (profiler/dwarf_lines.h): unit `u`'s rows read
  // both ways.
  void both_line_rows(const Unit& u, UnitLineRows& out) {
    Dwarf_Die cu = nullptr;
    if (dwarf_offdie_b(dbg_, u.die, true, &cu, &err_) != DW_DLV_OK) {
      clear();
      return;
    }
    out.own_ok = own_line_rows(cu, out.own);
    libdwarf_line_rows(cu, out.libdwarf);
    files_.clear();
    dwarf_dealloc_die(cu);
  }

  // Unit `u`'s DIE with its bounds and line rows read (null: libdwarf has no
  // such DIE); the caller deallocates it. load() and both_scopes() start so.
  Dwarf_Die open_unit(const Unit& u) {
    Dwarf_Die cu = nullptr;
    if (dwarf_offdie_b(dbg_, u.die, true, &cu, &err_) != DW_DLV_OK) {
      clear();
      return nullptr;
    }
    cu_start_ = u.start;
    cu_end_ = u.end;
    files_.clear();
    base_ = 1;
    read_lines(cu);
    return cu;
  }

  void load(Unit& u) {
    u.loaded = true;
    Dwarf_Die cu = open_unit(u);
    if (!cu) return;
    if (!own_walk(u)) libdwarf_walk(cu);
    dwarf_dealloc_die(cu);
  }

  // InfoReader for the DIE walk (null: libdwarf walks every unit).
  void use_info_reader(std::unique_ptr<dwarf::InfoReader> info) { info_ = std::move(info); }

  // For scopes_both_ways (profiler/dwarf_info.h): unit `u`'s scopes read
  // both ways, each from nothing (no scopes, no cached declarations).
  void both_scopes(const Unit& u, dwarf::UnitScopes& out) {
    Dwarf_Die cu = open_unit(u);
    if (!cu) return;
    unit_lines_.clear();
    auto take = [&](std::vector<dwarf::ScopeRow>& rows) {
      for (const Symbolizer::Scope& sc : s_.scopes_) {
        dwarf::ScopeRow r;
        r.name = s_.str(sc.name);
        r.system_name = s_.str(sc.system_name);
        r.decl_file = s_.str(sc.decl_file);
        r.call_file = s_.str(sc.call_file);
        r.decl_line = sc.decl_line;
        r.call_line = sc.call_line;
        r.call_column = sc.call_column;
        r.parent = sc.parent;
        rows.push_back(std::move(r));
      }
      for (const ScopeRange& sr : scope_ranges_) rows[sr.scope].ranges.push_back({sr.lo, sr.hi});
      s_.scopes_.clear();
      scope_ranges_.clear();
      decls_.clear();
    };
    s_.scopes_.clear();
    scope_ranges_.clear();
    decls_.clear();
    out.own_ok = own_walk(u);
    take(out.own);
    libdwarf_walk(cu);
    take(out.libdwarf);
    dwarf_dealloc_die(cu);
  }

 private:
  // ---- libdwarf plumbing ----
  void clear() {
    if (err_) {
      dwarf_dealloc(dbg_, err_, DW_DLA_ERROR);
      err_ = nullptr;
    }
  }
  std::string error_text() {
    std::string m = err_ ? dwarf_errmsg(err_) : "unknown libdwarf error";
    clear();
    return m;
  }
  // Each accessor returns false (and forgets the error) when the attribute
  // is absent or malformed.
  bool attr(Dwarf_Die die, Dwarf_Half name, Dwarf_Attribute& a) {
    int rc = dwarf_attr(die, name, &a, &err_);
    if (rc == DW_DLV_ERROR) clear();
    return rc == DW_DLV_OK;
  }
  bool udata(Dwarf_Die die, Dwarf_Half name, uint64_t& out) {
    Dwarf_Attribute a;
    if (!attr(die, name, a)) return false;
    Dwarf_Unsigned v = 0;
    int rc = dwarf_formudata(a, &v, &err_);
    if (rc == DW_DLV_ERROR) clear();
    dwarf_dealloc_attribute(a);
    out = v;
    return rc == DW_DLV_OK;
  }
  bool has(Dwarf_Die die, Dwarf_Half name) {
    Dwarf_Bool yes = false;
    if (dwarf_hasattr(die, name, &yes, &err_) != DW_DLV_OK) clear();
    return yes;
  }
  // A variable's address: a location that is one DW_OP_addr.
  bool address(Dwarf_Die die, uint64_t& out) {
    Dwarf_Attribute a;
    if (!attr(die, DW_AT_location, a)) return false;
    Dwarf_Unsigned len = 0;
    Dwarf_Ptr bytes = nullptr;
    int rc = dwarf_formexprloc(a, &len, &bytes, &err_);
    if (rc == DW_DLV_ERROR) clear();
    dwarf_dealloc_attribute(a);
    const auto* p = static_cast<const uint8_t*>(bytes);
    if (rc != DW_DLV_OK || len < 2 || len > 9 || p[0] != DW_OP_addr) return false;
    out = 0;
    for (Dwarf_Unsigned i = len - 1; i >= 1; --i) out = out << 8 | p[i];  // little-endian
    return true;
  }
  // `type` with typedefs and qualifiers taken off (0: none, or a loop).
  Dwarf_Off strip(Dwarf_Off type) {
    for (int guard = 0; guard < 32; ++guard) {
      Dwarf_Die die = nullptr;
      if (dwarf_offdie_b(dbg_, type, true, &die, &err_) != DW_DLV_OK) return clear(), 0;
      Dwarf_Half tag = 0;
      if (dwarf_tag(die, &tag, &err_) != DW_DLV_OK) clear();
      const bool through = tag == DW_TAG_typedef || tag == DW_TAG_const_type || tag == DW_TAG_volatile_type ||
                           tag == DW_TAG_atomic_type;
      Dwarf_Off next = 0;
      const bool ok = through && reference(die, DW_AT_type, next);
      dwarf_dealloc_die(die);
      if (!through) return type;
      if (!ok) return 0;
      type = next;
    }
    return 0;
  }
  // The string is in a debug section (libdwarf's formstring does not copy).
  const char* string(Dwarf_Die die, Dwarf_Half name) {
    Dwarf_Attribute a;
    if (!attr(die, name, a)) return nullptr;
    char* str = nullptr;
    int rc = dwarf_formstring(a, &str, &err_);
    if (rc == DW_DLV_ERROR) clear();
    dwarf_dealloc_attribute(a);
    return rc == DW_DLV_OK ? str : nullptr;
  }
  bool reference(Dwarf_Die die, Dwarf_Half name, Dwarf_Off& out) {
    Dwarf_Attribute a;
    if (!attr(die, name, a)) return false;
    int rc = dwarf_global_formref(a, &out, &err_);
    if (rc == DW_DLV_ERROR) clear();
    dwarf_dealloc_attribute(a);
    return rc == DW_DLV_OK;
  }

  uint32_t intern(std::string_view text) {
    auto it = index_.find(text);
    if (it != index_.end()) return it->second;
    s_.strings_.emplace_back(text);
    auto id = static_cast<uint32_t>(s_.strings_.size() - 1);
    index_.emplace(s_.strings_.back(), id);
    return id;
  }
  uint32_t file(uint64_t number) const {
    // DWARF 2-4 number files from 1, DWARF 5 from 0; base_ is the first.
    if (number < base_ || number - base_ >= files_.size()) return Symbolizer::kNone;
    return files_[number - base_];
  }

  // ---- one compile unit ----
  // Its DIE tree through libdwarf (the line table is read already).
  void libdwarf_walk(Dwarf_Die cu) {
    cu_base_ = 0;
    Dwarf_Addr low = 0;
    if (dwarf_lowpc(cu, &low, &err_) == DW_DLV_OK) cu_base_ = low;
    else clear();
    uint64_t lang = 0;
    types_hold_code_ = !udata(cu, DW_AT_language, lang) || !is_c(lang);
    walk_children(cu, Symbolizer::kNone, 0);
  }

  // The unit's line table: rows from the own decoder (profiler/dwarf_lines.h)
  // where it reads the program, else from libdwarf; file names from libdwarf
  // either way (it joins directories and names as it always has).
  void read_lines(Dwarf_Die cu) {
    if (!own_line_rows(cu, rows_)) {
      files_.clear();
      base_ = 1;
      if (!libdwarf_line_rows(cu, rows_)) return;
    }
    // A vector per unit, sized by its rows: growing one vector for the
    // whole batch a row at a time reallocated it (copies, and fresh pages
    // to fault in) often enough to cost a tenth of reading CPython's units
    // for a profile. finish() puts them together once.
    std::vector<LineRange>& out = unit_lines_.emplace_back();
    out.reserve(rows_.size());
    // Each row holds from its address to the next row's; a row with
    // end_sequence only ends the previous one.
    bool open = false;
    LineRange cur{};
    for (const LineRow& row : rows_) {
      if (open) {
        cur.hi = row.address;
        // Code that wasm-ld discarded keeps its rows, relocated to a
        // tombstone address past the code section; drop those.
        if (cur.lo < cur.hi && cur.hi <= code_size_) out.push_back(cur);
        open = false;
      }
      if (row.end_sequence) continue;
      cur = {row.address, row.address, file(row.file), static_cast<uint32_t>(row.line), row.column};
      open = true;
    }
  }

 public:
  // The rows of unit `cu`'s line program as decode_line_rows reads them,
  // and its file names from libdwarf's header reading; false (nothing
  // read) where the decoder declines or libdwarf finds no file table.
  bool own_line_rows(Dwarf_Die cu, std::vector<LineRow>& rows) {
    if (!debug_line_) return false;
    Dwarf_Off offset = 0;
    Dwarf_Half address_size = 0;
    if (!reference(cu, DW_AT_stmt_list, offset) ||
        dwarf_get_die_address_size(cu, &address_size, &err_) != DW_DLV_OK) {
      clear();
      return false;
    }
    unsigned version = 0;
    if (!decode_line_rows(debug_line_, debug_line_size_, offset, address_size, rows, version)) return false;
    char** names = nullptr;
    Dwarf_Signed n = 0;
    if (dwarf_srcfiles(cu, &names, &n, &err_) != DW_DLV_OK) {
      clear();
      return false;
    }
    // dwarf_srclines_files_indexes' base: DWARF 5 numbers files from 0.
    base_ = version >= 5 ? 0 : 1;
    files_.clear();
    for (Dwarf_Signed i = 0; i < n; ++i) {
      files_.push_back(intern(names[i]));
      dwarf_dealloc(dbg_, names[i], DW_DLA_STRING);
    }
    dwarf_dealloc(dbg_, names, DW_DLA_LIST);
    return true;
  }

  // The same through libdwarf's line reader (dwarf_srclines_b), which
  // allocates an object per row; false when it reads no table.
  bool libdwarf_line_rows(Dwarf_Die cu, std::vector<LineRow>& rows) {
    rows.clear();
    Dwarf_Unsigned version = 0;
    Dwarf_Small table_count = 0;
    Dwarf_Line_Context ctx = nullptr;
    int rc = dwarf_srclines_b(cu, &version, &table_count, &ctx, &err_);
    if (rc != DW_DLV_OK) {
      if (rc == DW_DLV_ERROR) clear();
      return false;
    }
    // The file table, full paths (include directory + name).
    Dwarf_Signed base = 1, count = 0, end = 0;
    if (dwarf_srclines_files_indexes(ctx, &base, &count, &end, &err_) == DW_DLV_OK)
      base_ = static_cast<uint64_t>(base);
    else clear();
    char** names = nullptr;
    Dwarf_Signed n = 0;
    if (dwarf_srcfiles(cu, &names, &n, &err_) == DW_DLV_OK) {
      for (Dwarf_Signed i = 0; i < n; ++i) {
        files_.push_back(intern(names[i]));
        dwarf_dealloc(dbg_, names[i], DW_DLA_STRING);
      }
      dwarf_dealloc(dbg_, names, DW_DLA_LIST);
    } else {
      clear();
    }

    Dwarf_Line* lines = nullptr;
    Dwarf_Signed nlines = 0;
    if (table_count == 1 && dwarf_srclines_from_linecontext(ctx, &lines, &nlines, &err_) == DW_DLV_OK) {
      for (Dwarf_Signed i = 0; i < nlines; ++i) {
        LineRow row;
        Dwarf_Addr addr = 0;
        Dwarf_Bool end_seq = false;
        if (dwarf_lineaddr(lines[i], &addr, &err_) != DW_DLV_OK ||
            dwarf_lineendsequence(lines[i], &end_seq, &err_) != DW_DLV_OK) {
          clear();
          continue;
        }
        row.address = addr;
        row.end_sequence = end_seq;
        if (!end_seq) {
          Dwarf_Unsigned line = 0, column = 0, fileno = 0;
          if (dwarf_lineno(lines[i], &line, &err_) != DW_DLV_OK) clear();
          if (dwarf_lineoff_b(lines[i], &column, &err_) != DW_DLV_OK) clear();
          if (dwarf_line_srcfileno(lines[i], &fileno, &err_) != DW_DLV_OK) clear();
          row.line = line;
          row.column = static_cast<uint32_t>(column);
          row.file = fileno;
        }
        rows.push_back(row);
      }
    } else if (err_) {
      clear();
    }
    dwarf_srclines_dealloc_b(ctx);
    return true;
  }
  // The .debug_line section for the own decoder (null: libdwarf reads every unit).
  void use_debug_line(const uint8_t* data, uint64_t size) {
    debug_line_ = data;
    debug_line_size_ = size;
  }

 private:
  // ---- the DIE tree ----
  void walk_children(Dwarf_Die parent, uint32_t scope, int depth) {
    // Deep nesting only comes from malformed DWARF; stop before the stack does.
    if (depth > 200) return;
    // dwarf_child reads past the DIE's attributes even when its
    // abbreviation says it has no children.
    Dwarf_Half has_children = 1;
    if (dwarf_die_abbrev_children_flag(parent, &has_children) == DW_DLV_OK && !has_children) return;
    Dwarf_Die child = nullptr;
    int rc = dwarf_child(parent, &child, &err_);
    while (rc == DW_DLV_OK) {
      visit(child, scope, depth + 1);
      Dwarf_Die next = nullptr;
      rc = dwarf_siblingof_b(dbg_, child, true, &next, &err_);
      dwarf_dealloc_die(child);
      child = next;
    }
    if (rc == DW_DLV_ERROR) clear();
  }

  void visit(Dwarf_Die die, uint32_t scope, int depth) {
    Dwarf_Half tag = 0;
    if (dwarf_tag(die, &tag, &err_) != DW_DLV_OK) {
      clear();
      return;
    }
    switch (tag) {
      case DW_TAG_subprogram:
      case DW_TAG_inlined_subroutine: {
        std::vector<std::pair<uint64_t, uint64_t>> ranges;
        code_ranges(die, ranges);
        // A subprogram without code is a declaration or an abstract
        // instance (the origin of inlined copies); nested functions of
        // languages that have them still get looked for inside.
        if (ranges.empty()) {
          walk_children(die, scope, depth);
          return;
        }
        uint32_t id = add_scope(die, tag == DW_TAG_inlined_subroutine ? scope : Symbolizer::kNone);
        for (auto [lo, hi] : ranges) scope_ranges_.push_back({lo, hi, id});
        walk_children(die, id, depth);
        return;
      }
      // Functions live at the top of a unit, or inside namespaces (Rust) and
      // types (methods defined in a class); code inside a function is in
      // lexical blocks. Nothing else holds code.
      case DW_TAG_lexical_block:
      case DW_TAG_namespace:
      case DW_TAG_module:
        walk_children(die, scope, depth);
        return;
      case DW_TAG_structure_type:
      case DW_TAG_class_type:
      case DW_TAG_union_type:
        // A C struct holds only members, never code: its members need no
        // visit (libdwarf skips the subtree itself). CPython's units each
        // hold its headers' structs; reading ~100 of them went from 0.32 s
        // to 0.26-0.30 s (one noisy run each).
        if (types_hold_code_) walk_children(die, scope, depth);
        return;
      default:
        return;
    }
  }

  // The code ranges of a DIE (DW_AT_low_pc/high_pc, or DW_AT_ranges from
  // .debug_ranges in DWARF 4 and .debug_rnglists in DWARF 5), without the
  // ranges of discarded code.
  void code_ranges(Dwarf_Die die, std::vector<std::pair<uint64_t, uint64_t>>& out) {
    auto add = [&](uint64_t lo, uint64_t hi) {
      if (lo < hi && hi <= code_size_) out.push_back({lo, hi});
    };
    Dwarf_Addr lo = 0;
    int rc = dwarf_lowpc(die, &lo, &err_);
    if (rc == DW_DLV_OK) {
      Dwarf_Addr hi = 0;
      Dwarf_Half form = 0;
      Dwarf_Form_Class cls = DW_FORM_CLASS_UNKNOWN;
      rc = dwarf_highpc_b(die, &hi, &form, &cls, &err_);
      if (rc == DW_DLV_OK) {
        add(lo, cls == DW_FORM_CLASS_CONSTANT ? lo + hi : hi);
        return;
      }
      if (rc == DW_DLV_ERROR) clear();
      // A unit with code in several places has DW_AT_low_pc (its base
      // address, often 0) and DW_AT_ranges.
    } else if (rc == DW_DLV_ERROR) {
      clear();
    }

    Dwarf_Attribute a;
    if (!attr(die, DW_AT_ranges, a)) return;
    Dwarf_Half form = 0, version = 0, offset_size = 0;
    if (dwarf_whatform(a, &form, &err_) != DW_DLV_OK ||
        dwarf_get_version_of_die(die, &version, &offset_size) != DW_DLV_OK) {
      clear();
      dwarf_dealloc_attribute(a);
      return;
    }
    if (version >= 5) {
      Dwarf_Unsigned value = 0;
      Dwarf_Off off = 0;
      // rnglistx is an index (a constant), sec_offset an offset.
      if (form == DW_FORM_rnglistx) rc = dwarf_formudata(a, &value, &err_);
      else if ((rc = dwarf_global_formref(a, &off, &err_)) == DW_DLV_OK) value = off;
      Dwarf_Rnglists_Head head = nullptr;
      Dwarf_Unsigned count = 0, global = 0;
      if (rc == DW_DLV_OK &&
          dwarf_rnglists_get_rle_head(a, form, value, &head, &count, &global, &err_) == DW_DLV_OK) {
        for (Dwarf_Unsigned i = 0; i < count; ++i) {
          unsigned len = 0, code = 0;
          Dwarf_Unsigned raw1 = 0, raw2 = 0, cooked1 = 0, cooked2 = 0;
          Dwarf_Bool unavailable = false;
          if (dwarf_get_rnglists_entry_fields_a(head, i, &len, &code, &raw1, &raw2, &unavailable, &cooked1,
                                                &cooked2, &err_) != DW_DLV_OK) {
            clear();
            break;
          }
          // Every entry kind that describes a range comes back "cooked"
          // as [start, end); base-address entries only change later ones.
          if (unavailable) continue;
          if (code == DW_RLE_offset_pair || code == DW_RLE_start_end || code == DW_RLE_start_length ||
              code == DW_RLE_startx_endx || code == DW_RLE_startx_length)
            add(cooked1, cooked2);
        }
        dwarf_dealloc_rnglists_head(head);
      } else {
        clear();
      }
    } else {
      Dwarf_Off off = 0;
      if (dwarf_global_formref(a, &off, &err_) != DW_DLV_OK) {
        clear();
        Dwarf_Unsigned v = 0;
        if (dwarf_formudata(a, &v, &err_) == DW_DLV_OK) off = v;
        else {
          clear();
          dwarf_dealloc_attribute(a);
          return;
        }
      }
      Dwarf_Ranges* ranges = nullptr;
      Dwarf_Signed count = 0;
      Dwarf_Unsigned bytes = 0;
      Dwarf_Off real = 0;
      if (dwarf_get_ranges_b(dbg_, off, die, &real, &ranges, &count, &bytes, &err_) == DW_DLV_OK) {
        // Entries are relative to the unit's base address until a base
        // selection entry changes it (DWARF 4, section 2.17.3).
        uint64_t base = cu_base_;
        for (Dwarf_Signed i = 0; i < count; ++i) {
          const Dwarf_Ranges& r = ranges[i];
          if (r.dwr_type == DW_RANGES_ENTRY) add(base + r.dwr_addr1, base + r.dwr_addr2);
          else if (r.dwr_type == DW_RANGES_ADDRESS_SELECTION) base = r.dwr_addr2;
          else break;
        }
        dwarf_ranges_dealloc(dbg_, ranges, count);
      } else {
        clear();
      }
    }
    dwarf_dealloc_attribute(a);
  }

  // Names and declaration of a scope's function, following
  // DW_AT_abstract_origin (inlined and out-of-line copies point at the
  // abstract instance) and DW_AT_specification (C++ member definitions point
  // at the declaration in the class, which has the linkage name).
  struct Decl {
    uint32_t name = Symbolizer::kNone;
    uint32_t system_name = Symbolizer::kNone;
    uint32_t file = Symbolizer::kNone;
    uint32_t line = 0;
  };
  struct RawDecl {
    const char* name = nullptr;
    const char* linkage = nullptr;
    uint32_t file = Symbolizer::kNone;
    uint32_t line = 0;
  };
  void read_decl(Dwarf_Die die, RawDecl& d, int hops) {
    if (!d.linkage) {
      d.linkage = string(die, DW_AT_linkage_name);
      if (!d.linkage) d.linkage = string(die, DW_AT_MIPS_linkage_name);
    }
    if (!d.name) d.name = string(die, DW_AT_name);
    if (d.line == 0) {
      uint64_t line = 0, fileno = 0;
      Dwarf_Off self = 0;
      // File numbers index this unit's file table: only trust them for
      // DIEs of the unit being read.
      if (udata(die, DW_AT_decl_line, line) && udata(die, DW_AT_decl_file, fileno) &&
          dwarf_dieoffset(die, &self, &err_) == DW_DLV_OK && self >= cu_start_ && self < cu_end_) {
        d.line = static_cast<uint32_t>(line);
        d.file = file(fileno);
      }
      if (err_) clear();
    }
    if ((d.linkage && d.name && d.line) || hops >= 8) return;
    for (Dwarf_Half ref : {DW_AT_abstract_origin, DW_AT_specification}) {
      Dwarf_Off off = 0;
      if (!reference(die, ref, off)) continue;
      Dwarf_Die target = nullptr;
      if (dwarf_offdie_b(dbg_, off, true, &target, &err_) == DW_DLV_OK) {
        read_decl(target, d, hops + 1);
        dwarf_dealloc_die(target);
      } else {
        clear();
      }
      break;
    }
  }
  const Decl& decl(Dwarf_Die die) {
    // Inlined copies of one function all point at the same abstract
    // instance: cache by the DIE that holds the names.
    Dwarf_Off key = 0;
    Dwarf_Off origin = 0;
    if (reference(die, DW_AT_abstract_origin, origin)) key = origin;
    else if (dwarf_dieoffset(die, &key, &err_) != DW_DLV_OK) clear();
    auto [it, inserted] = decls_.try_emplace(key);
    if (!inserted) return it->second;
    RawDecl raw;
    read_decl(die, raw, 0);
    fill_decl(it->second, raw);
    return it->second;
  }
  void fill_decl(Decl& d, const RawDecl& raw) {
    if (raw.linkage) {
      d.system_name = intern(raw.linkage);
      // Demangled linkage names are qualified ("geo::Vec<int>::dot(...)"),
      // DW_AT_name is not ("dot"); a linkage name that is not mangled
      // ("__main_argc_argv" for main) loses to DW_AT_name.
      std::string demangled = demangle(raw.linkage);
      if (demangled != raw.linkage) d.name = intern(demangled);
      else d.name = raw.name ? intern(raw.name) : d.system_name;
    } else if (raw.name) {
      d.name = d.system_name = intern(raw.name);
    }
    d.file = raw.file;
    d.line = raw.line;
  }

  uint32_t add_scope(Dwarf_Die die, uint32_t parent) {
    const Decl& d = decl(die);
    Symbolizer::Scope sc;
    sc.name = d.name;
    sc.system_name = d.system_name;
    sc.decl_file = d.file;
    sc.decl_line = d.line;
    sc.parent = parent;
    if (parent != Symbolizer::kNone) {
      s_.has_inlines_ = true;
      uint64_t v = 0;
      if (udata(die, DW_AT_call_file, v)) sc.call_file = file(v);
      if (udata(die, DW_AT_call_line, v)) sc.call_line = static_cast<uint32_t>(v);
      if (udata(die, DW_AT_call_column, v)) sc.call_column = static_cast<uint32_t>(v);
    }
    s_.scopes_.push_back(sc);
    return static_cast<uint32_t>(s_.scopes_.size() - 1);
  }

  // ---- the DIE tree through InfoReader (profiler/dwarf_info.h) ----
  // The same walk as walk_children/visit/code_ranges/decl/add_scope above,
  // on DIEs read in place. Each step returns false where InfoReader
  // declines; own_walk then takes back what the unit added, and libdwarf
  // reads the unit.
  using Got = dwarf::Got;

  // What reading a unit adds, so that a declined unit leaves nothing.
  struct Mark {
    size_t scopes, scope_ranges, strings;
    bool has_inlines;
  };
  Mark mark() {
    decls_added_.clear();
    return {s_.scopes_.size(), scope_ranges_.size(), s_.strings_.size(), s_.has_inlines_};
  }
  void undo(const Mark& m) {
    s_.scopes_.resize(m.scopes);
    scope_ranges_.resize(m.scope_ranges);
    s_.has_inlines_ = m.has_inlines;
    for (uint64_t key : decls_added_) decls_.erase(key);
    decls_added_.clear();
    while (s_.strings_.size() > m.strings) {
      index_.erase(s_.strings_.back());
      s_.strings_.pop_back();
    }
  }

  // Reads unit `u`'s DIE tree; false (nothing added) when declined.
  bool own_walk(const Unit& u) {
    if (!info_ || !dwarf::own_die_reader_enabled()) return false;
    const dwarf::Unit* unit = info_->unit(u.index);
    if (!unit) return false;
    dwarf::Die cu;
    if (info_->die(*unit, unit->first_die, cu, true) != Got::kOk) return false;
    uint64_t lang = 0;
    const Got g = info_->udata(cu, dwarf::kAtLanguage, lang);
    if (g == Got::kDecline) return false;
    cu_base_ = unit->has_low_pc ? unit->low_pc : 0;
    types_hold_code_ = g != Got::kOk || !is_c(lang);
    const Mark m = mark();
    uint64_t pos = cu.end;
    if (cu.children() && !own_walk_children(*unit, pos, Symbolizer::kNone, 0)) {
      undo(m);
      return false;
    }
    return true;
  }

  // The children of a DIE from `pos` (its first child) to past the null
  // entry that ends them; `depth` is the parent's.
  bool own_walk_children(const dwarf::Unit& u, uint64_t& pos, uint32_t scope, int depth) {
    // walk_children stops here without an error; the reader does not copy that.
    if (depth > 200) return false;
    dwarf::Die d;
    for (;;) {
      if (pos >= u.end) return false;
      Got g = info_->die(u, pos, d, false);
      // Only functions and inlined calls have attributes read.
      if (g == Got::kOk && (d.tag() == dwarf::kTagSubprogram || d.tag() == dwarf::kTagInlinedSubroutine))
        g = info_->die(u, pos, d, true);
      if (g == Got::kDecline) return false;
      pos = d.end;
      if (g == Got::kAbsent) return true;
      if (!own_visit(d, pos, scope, depth + 1) || !info_->sibling_agrees(d, pos)) return false;
    }
  }

  // visit(), and steps `pos` over the DIE's children.
  bool own_visit(const dwarf::Die& d, uint64_t& pos, uint32_t scope, int depth) {
    auto children = [&](uint32_t parent) {
      return !d.children() || own_walk_children(*d.unit, pos, parent, depth);
    };
    auto skip = [&] { return !d.children() || info_->skip_children(*d.unit, pos, depth + 1); };
    switch (d.tag()) {
      case dwarf::kTagSubprogram:
      case dwarf::kTagInlinedSubroutine: {
        std::vector<std::pair<uint64_t, uint64_t>> ranges;
        if (own_code_ranges(d, ranges) == Got::kDecline) return false;
        if (ranges.empty()) return children(scope);
        uint32_t id = 0;
        if (!own_add_scope(d, d.tag() == dwarf::kTagInlinedSubroutine ? scope : Symbolizer::kNone, id))
          return false;
        for (auto [lo, hi] : ranges) scope_ranges_.push_back({lo, hi, id});
        return children(id);
      }
      case dwarf::kTagLexicalBlock:
      case dwarf::kTagNamespace:
      case dwarf::kTagModule:
        return children(scope);
      case dwarf::kTagStructureType:
      case dwarf::kTagClassType:
      case dwarf::kTagUnionType:
        return types_hold_code_ ? children(scope) : skip();
      default:
        return skip();
    }
  }

  Got own_code_ranges(const dwarf::Die& d, std::vector<std::pair<uint64_t, uint64_t>>& out) {
    auto add = [&](uint64_t lo, uint64_t hi) {
      if (lo < hi && hi <= code_size_) out.push_back({lo, hi});
    };
    uint64_t lo = 0;
    Got g = info_->low_pc(d, lo);
    if (g == Got::kDecline) return g;
    if (g == Got::kOk) {
      uint64_t hi = 0;
      bool constant = false;
      g = info_->high_pc(d, hi, constant);
      if (g == Got::kDecline) return g;
      if (g == Got::kOk) {
        add(lo, constant ? lo + hi : hi);
        return Got::kOk;
      }
    }
    raw_ranges_.clear();
    g = info_->ranges(d, cu_base_, raw_ranges_);
    if (g == Got::kDecline) return g;
    for (auto [a, b] : raw_ranges_) add(a, b);
    return Got::kOk;
  }

  Got own_read_decl(const dwarf::Die& die, RawDecl& d, int hops) {
    Got g = Got::kOk;
    if (!d.linkage) {
      if ((g = info_->string(die, dwarf::kAtLinkageName, d.linkage)) == Got::kDecline) return g;
      if (!d.linkage && (g = info_->string(die, dwarf::kAtMipsLinkageName, d.linkage)) == Got::kDecline)
        return g;
    }
    if (!d.name && (g = info_->string(die, dwarf::kAtName, d.name)) == Got::kDecline) return g;
    if (d.line == 0) {
      uint64_t line = 0, fileno = 0;
      if ((g = info_->udata(die, dwarf::kAtDeclLine, line)) == Got::kDecline) return g;
      if (g == Got::kOk) {
        if ((g = info_->udata(die, dwarf::kAtDeclFile, fileno)) == Got::kDecline) return g;
        // As read_decl: file numbers of this unit's DIEs only.
        if (g == Got::kOk && die.offset >= cu_start_ && die.offset < cu_end_) {
          d.line = static_cast<uint32_t>(line);
          d.file = file(fileno);
        }
      }
    }
    if ((d.linkage && d.name && d.line) || hops >= 8) return Got::kOk;
    for (uint16_t ref : {dwarf::kAtAbstractOrigin, dwarf::kAtSpecification}) {
      uint64_t off = 0;
      if ((g = info_->reference(die, ref, off)) == Got::kDecline) return g;
      if (g != Got::kOk) continue;
      dwarf::Die target;
      if (info_->die_at(off, target) != Got::kOk) return Got::kDecline;
      return own_read_decl(target, d, hops + 1);
    }
    return Got::kOk;
  }

  Got own_decl(const dwarf::Die& die, const Decl*& out) {
    uint64_t key = die.offset, origin = 0;
    const Got g = info_->reference(die, dwarf::kAtAbstractOrigin, origin);
    if (g == Got::kDecline) return g;
    if (g == Got::kOk) key = origin;
    auto [it, inserted] = decls_.try_emplace(key);
    out = &it->second;
    if (!inserted) return Got::kOk;
    decls_added_.push_back(key);
    RawDecl raw;
    if (own_read_decl(die, raw, 0) == Got::kDecline) return Got::kDecline;
    fill_decl(it->second, raw);
    return Got::kOk;
  }

  bool own_add_scope(const dwarf::Die& die, uint32_t parent, uint32_t& id) {
    const Decl* d = nullptr;
    if (own_decl(die, d) == Got::kDecline) return false;
    Symbolizer::Scope sc;
    sc.name = d->name;
    sc.system_name = d->system_name;
    sc.decl_file = d->file;
    sc.decl_line = d->line;
    sc.parent = parent;
    if (parent != Symbolizer::kNone) {
      s_.has_inlines_ = true;
      uint64_t v = 0;
      Got g = info_->udata(die, dwarf::kAtCallFile, v);
      if (g == Got::kDecline) return false;
      if (g == Got::kOk) sc.call_file = file(v);
      if ((g = info_->udata(die, dwarf::kAtCallLine, v)) == Got::kDecline) return false;
      if (g == Got::kOk) sc.call_line = static_cast<uint32_t>(v);
      if ((g = info_->udata(die, dwarf::kAtCallColumn, v)) == Got::kDecline) return false;
      if (g == Got::kOk) sc.call_column = static_cast<uint32_t>(v);
    }
    s_.scopes_.push_back(sc);
    id = static_cast<uint32_t>(s_.scopes_.size() - 1);
    return true;
  }

  // scan_definitions over InfoReader; false (the maps as they were) when
  // it declines the unit.
  bool own_scan_definitions(const Unit& u, std::map<std::string, Dwarf_Off, std::less<>>& types,
                            std::map<std::string, uint64_t, std::less<>>& variables) {
    if (!info_ || !dwarf::own_die_reader_enabled()) return false;
    const dwarf::Unit* unit = info_->unit(u.index);
    if (!unit) return false;
    dwarf::Die d;
    if (info_->die(*unit, unit->first_die, d, true) != Got::kOk) return false;
    // What was found, to forget when declined (each was 0 / kUnknown).
    std::vector<Dwarf_Off*> types_found;
    std::vector<uint64_t*> variables_found;
    auto decline = [&] {
      for (Dwarf_Off* t : types_found) *t = 0;
      for (uint64_t* v : variables_found) *v = kUnknown;
      return false;
    };
    uint64_t pos = d.end;
    if (!d.children()) return true;
    for (;;) {
      if (pos >= unit->end) return decline();
      Got g = info_->die(*unit, pos, d, false);
      const uint16_t tag = g == Got::kOk ? d.tag() : 0;
      const bool type =
          tag == dwarf::kTagStructureType || tag == dwarf::kTagUnionType || tag == dwarf::kTagTypedef;
      if (type || tag == dwarf::kTagVariable) g = info_->die(*unit, pos, d, true);
      if (g == Got::kDecline) return decline();
      pos = d.end;
      if (g == Got::kAbsent) return true;
      const char* name = nullptr;
      if ((type || tag == dwarf::kTagVariable) && info_->string(d, dwarf::kAtName, name) == Got::kDecline)
        return decline();
      if (name && type) {
        auto it = types.find(std::string_view(name));
        if (it != types.end() && !it->second && !info_->has(d, dwarf::kAtDeclaration)) {
          types_found.push_back(&it->second);
          it->second = d.offset;
        }
      } else if (name) {
        auto it = variables.find(std::string_view(name));
        const uint8_t* p = nullptr;
        uint64_t len = 0;
        if (it != variables.end() && it->second == kUnknown) {
          const Got e = info_->exprloc(d, dwarf::kAtLocation, p, len);
          if (e == Got::kDecline) return decline();
          // As address(): a location that is one DW_OP_addr.
          if (e == Got::kOk && len >= 2 && len <= 9 && p[0] == DW_OP_addr) {
            variables_found.push_back(&it->second);
            it->second = 0;
            for (uint64_t i = len - 1; i >= 1; --i) it->second = it->second << 8 | p[i];
          }
        }
      }
      if (d.children() && !info_->skip_children(*unit, pos, 2)) return decline();
      if (!info_->sibling_agrees(d, pos)) return decline();
    }
  }

  // ---- the lookup table ----
  // Merges the innermost scope at each address with the line row there into
  // Symbolizer::entries_: one entry wherever either changes.
 public:
  // Each call covers the units read since the last one (their code is not
  // other units' code), then merges the result into the table.
  void finish() {
    Painter scopes;
    // DFS order: parents were recorded before their children.
    for (const ScopeRange& r : scope_ranges_) scopes.paint(r.lo, r.hi, r.scope);
    std::vector<ScopeRange> sc;
    scopes.for_each([&](uint64_t lo, uint64_t hi, uint32_t v) { sc.push_back({lo, hi, v}); });

    // Usually in order already: a unit's sequences follow its functions.
    auto by_start = [](const LineRange& a, const LineRange& b) { return a.lo < b.lo; };
    gather_lines();
    if (!std::is_sorted(lines_.begin(), lines_.end(), by_start))
      std::stable_sort(lines_.begin(), lines_.end(), by_start);
    // Sequences should not overlap; if they do, the later start wins.
    for (size_t i = 0; i + 1 < lines_.size(); ++i) lines_[i].hi = std::min(lines_[i].hi, lines_[i + 1].lo);

    // Both lists run in address order (the scopes are disjoint, the line
    // rows were just cut at the next one's start), so their bounds merge,
    // each taken once, as they are visited (three vectors of them were
    // memory to fault in for nothing).
    const size_t scope_cuts = 2 * sc.size(), line_cuts = 2 * lines_.size();
    auto scope_cut = [&](size_t k) { return k % 2 ? sc[k / 2].hi : sc[k / 2].lo; };
    auto line_cut = [&](size_t k) { return k % 2 ? lines_[k / 2].hi : lines_[k / 2].lo; };
    size_t next_scope = 0, next_line = 0;
    uint64_t prev = 0;

    std::vector<Symbolizer::Entry> entries;
    entries.reserve(scope_cuts + line_cuts);
    size_t si = 0, li = 0;
    for (bool first = true; next_scope < scope_cuts || next_line < line_cuts; first = false) {
      uint64_t at = 0;
      if (next_line >= line_cuts || (next_scope < scope_cuts && scope_cut(next_scope) <= line_cut(next_line)))
        at = scope_cut(next_scope++);
      else at = line_cut(next_line++);
      if (!first && at == prev) continue;
      prev = at;
      while (si < sc.size() && sc[si].hi <= at) ++si;
      while (li < lines_.size() && lines_[li].hi <= at) ++li;
      Symbolizer::Entry e;
      e.start = static_cast<uint32_t>(at + s_.code_base_);
      if (si < sc.size() && sc[si].lo <= at) e.scope = sc[si].scope;
      if (li < lines_.size() && lines_[li].lo <= at && lines_[li].hi > at) {
        e.file = lines_[li].file;
        e.line = lines_[li].line;
        e.column = lines_[li].column;
        if (e.line) s_.has_lines_ = true;
      }
      // clang's wasm backend marks many instructions with line 0 (the local
      // moves around a statement). A sample there would vanish from
      // `pprof -list`; it belongs to the statement before it in the same
      // inlined scope, so it takes that line. Line 0 stays where nothing
      // before it in the scope has a line.
      if (e.line == 0 && !entries.empty() && entries.back().scope == e.scope && entries.back().line != 0 &&
          e.scope != Symbolizer::kNone) {
        e.file = entries.back().file;
        e.line = entries.back().line;
        e.column = entries.back().column;
      }
      Symbolizer::Entry same_start = e;
      if (!entries.empty()) {
        same_start.start = entries.back().start;
        if (same_start == entries.back()) continue;  // nothing changed
      }
      entries.push_back(e);
    }
    scope_ranges_.clear();
    lines_.clear();
    merge(std::move(entries));
  }

  // The units' rows into lines_, in address order where that is cheap.
  // Units read together cover separate code, and so do most of a unit's
  // sequences: cut a unit's rows where the address goes back (or, if those
  // pieces share addresses, stable_sort the unit), and if the pieces of all
  // units share no address, putting them in order of their first row is
  // what stable_sort of every row gives (that sort was a tenth of writing
  // CPython's profile). Else the rows stay in reading order for finish() to
  // sort as before (each unit's sorted or not: the same result).
  void gather_lines() {
    struct Run {
      const LineRange *begin, *end;
    };
    auto by_first = [](const Run& a, const Run& b) { return a.begin->lo < b.begin->lo; };
    auto apart = [](const std::vector<Run>& runs, size_t from) {
      for (size_t i = from; i + 1 < runs.size(); ++i)
        if ((runs[i].end - 1)->lo >= runs[i + 1].begin->lo) return false;
      return true;
    };
    std::vector<Run> runs;
    size_t total = 0;
    for (std::vector<LineRange>& u : unit_lines_) {
      if (u.empty()) continue;
      total += u.size();
      const size_t from = runs.size();
      for (size_t i = 0; i < u.size();) {
        size_t j = i + 1;
        while (j < u.size() && u[j].lo >= u[j - 1].lo) ++j;
        runs.push_back({u.data() + i, u.data() + j});
        i = j;
      }
      if (runs.size() - from == 1) continue;
      std::stable_sort(runs.begin() + from, runs.end(), by_first);
      if (apart(runs, from)) continue;
      runs.resize(from);
      std::stable_sort(u.begin(), u.end(),
                       [](const LineRange& a, const LineRange& b) { return a.lo < b.lo; });
      runs.push_back({u.data(), u.data() + u.size()});
    }
    std::stable_sort(runs.begin(), runs.end(), by_first);
    lines_.clear();
    lines_.reserve(total);
    if (apart(runs, 0))
      for (const Run& r : runs) lines_.insert(lines_.end(), r.begin, r.end);
    else
      for (const std::vector<LineRange>& u : unit_lines_) lines_.insert(lines_.end(), u.begin(), u.end());
    unit_lines_.clear();
  }

  // Adds `fresh` to the table. Where an entry of each starts at the same
  // address, one unit's code ends where another's begins: the one that
  // says something wins over the other's empty end.
  void merge(std::vector<Symbolizer::Entry>&& fresh) {
    auto& table = s_.entries_;
    if (table.empty()) {
      table = std::move(fresh);
      return;
    }
    std::vector<Symbolizer::Entry> all;
    all.reserve(table.size() + fresh.size());
    std::merge(table.begin(), table.end(), fresh.begin(), fresh.end(), std::back_inserter(all),
               [](const Symbolizer::Entry& a, const Symbolizer::Entry& b) { return a.start < b.start; });
    const Symbolizer::Entry blank;
    table.clear();
    for (const Symbolizer::Entry& e : all) {
      if (!table.empty() && table.back().start == e.start) {
        Symbolizer::Entry empty = blank;
        empty.start = e.start;
        if (!(e == empty)) table.back() = e;
        continue;
      }
      table.push_back(e);
    }
  }

 private:
  Symbolizer& s_;
  Dwarf_Debug dbg_;
  uint64_t code_size_;
  Dwarf_Error err_ = nullptr;
  // The unit being read: its header's offset and the next one's, its base address.
  uint64_t cu_start_ = 0, cu_end_ = 0, cu_base_ = 0;
  bool types_hold_code_ = true;  // the unit's language has methods (not C)
  static bool is_c(uint64_t lang) {
    return lang == DW_LANG_C89 || lang == DW_LANG_C || lang == DW_LANG_C99 || lang == DW_LANG_C11 ||
           lang == 0x2c;  // DW_LANG_C17 (DWARF 6 draft), unknown to this libdwarf
  }
  uint64_t base_ = 1;
  std::vector<uint32_t> files_;
  const uint8_t* debug_line_ = nullptr;
  uint64_t debug_line_size_ = 0;
  std::vector<LineRow> rows_;  // the unit's line rows (kept for its capacity)
  // Collected over all units.
  std::unordered_map<std::string_view, uint32_t> index_;
  std::unordered_map<Dwarf_Off, Decl> decls_;
  std::vector<ScopeRange> scope_ranges_;
  std::unique_ptr<dwarf::InfoReader> info_;
  std::vector<uint64_t> decls_added_;  // by the unit being read through info_
  std::vector<std::pair<uint64_t, uint64_t>> raw_ranges_;
  std::vector<LineRange> lines_;
  std::vector<std::vector<LineRange>> unit_lines_;  // each unit's, read since the last finish()
};

// libdwarf stays open for the units not read yet.
struct Symbolizer::Lazy {
  WasmObject obj;
  Dwarf_Obj_Access_Interface iface{};
  Dwarf_Debug dbg = nullptr;
  std::unique_ptr<DwarfReader> reader;
  std::vector<DwarfReader::Unit> units;
  size_t unloaded = 0;
  // Every unit's code ranges sorted by start, each with the largest end of
  // it and those before it: load() finds the units covering an address by a
  // binary search and a short walk back, where walking every range of every
  // unit at each lookup made writing a CPython profile (1,600 units, 100,000s
  // of locations) take seconds.
  struct Span {
    uint64_t lo, hi, max_hi;
    uint32_t unit;
  };
  std::vector<Span> spans;
  bool rangeless_read = false;  // the units without ranges were read (see load())
  void index_spans() {
    for (uint32_t i = 0; i < units.size(); ++i)
      for (auto [lo, hi] : units[i].ranges) spans.push_back({lo, hi, hi, i});
    std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.lo < b.lo; });
    for (size_t i = 1; i < spans.size(); ++i) spans[i].max_hi = std::max(spans[i].hi, spans[i - 1].max_hi);
  }
  ~Lazy() {
    std::lock_guard libdwarf_lock(libdwarf_mu());
    reader.reset();
    Dwarf_Error err = nullptr;
    if (dbg) dwarf_object_finish(dbg, &err);
  }
};

Symbolizer::Symbolizer(const vm::Module& module) : module_(module) {
  fallback_.assign(module.func_type_indices.size(), {kNone, kNone});
  uint32_t code_size = 0;
  if (!find_code_section(module.bytes, code_base_, code_size)) return;
  // Go writes no DWARF for wasm; its own tables take DWARF's place.
  for (const vm::CustomSection& c : module.customs) built_by_go_ |= c.name == "go:buildid";
  go_ = GoModule::read(module, go_note_);
  if (go_) {
    has_lines_ = has_inlines_ = true;
    return;
  }

  auto lazy = std::make_unique<Lazy>();
  WasmObject& obj = lazy->obj;
  obj.sections.push_back({"", nullptr, 0});
  bool has_info = false;
  for (const vm::CustomSection& c : module.customs) {
    if (c.name.rfind(".debug_", 0) != 0) continue;
    if (c.name == ".debug_rnglists" && !rnglists_well_formed(module.bytes.data() + c.offset, c.size)) {
      warning_ = "malformed .debug_rnglists left out (functions with several code ranges lose them)";
      continue;
    }
    obj.sections.push_back({c.name.c_str(), module.bytes.data() + c.offset, c.size});
    has_info |= c.name == ".debug_info";
  }
  if (!has_info) return;

  std::lock_guard libdwarf_lock(libdwarf_mu());
  // libdwarf records every object it hands out in a search tree, so that
  // dwarf_finish can free what a caller forgot: 17% of reading CPython's
  // units. The reader frees all it gets (DIEs, attributes, strings, lists,
  // errors). The flag is process-wide, and the same for every Symbolizer.
  dwarf_set_de_alloc_flag(0);
  lazy->iface = {&lazy->obj, &kWasmMethods};
  Dwarf_Error err = nullptr;
  if (dwarf_object_init_b(&lazy->iface, nullptr, nullptr, DW_GROUPNUMBER_ANY, &lazy->dbg, &err) !=
      DW_DLV_OK) {
    warning_ = std::string("cannot read DWARF: ") + (err ? dwarf_errmsg(err) : "no usable .debug_* sections");
    if (err) dwarf_dealloc(nullptr, err, DW_DLA_ERROR);
    return;
  }
  lazy->reader = std::make_unique<DwarfReader>(*this, lazy->dbg, code_size);
  // Line programs are decoded by hand (profiler/dwarf_lines.h), except in a
  // split-DWARF package, whose units' tables libdwarf offsets by its index.
  const WasmSection* line = nullptr;
  bool split = false;
  for (const WasmSection& sec : obj.sections) {
    const std::string_view name = sec.name;
    if (name == ".debug_line") line = &sec;
    split |= name == ".debug_cu_index" || name == ".debug_tu_index";
  }
  if (line && !split) lazy->reader->use_debug_line(line->data, line->size);
  std::string why;
  if (!lazy->reader->index(lazy->units, why)) warning_ = "DWARF partly read: " + why;
  // The DIE trees are walked by InfoReader (profiler/dwarf_info.h) where it
  // can, over the units libdwarf listed; not in a split-DWARF package.
  if (!split) {
    dwarf::Sections sections;
    for (const WasmSection& sec : obj.sections) {
      const std::string_view name = sec.name;
      dwarf::Section* to = name == ".debug_info"          ? &sections.info
                           : name == ".debug_abbrev"      ? &sections.abbrev
                           : name == ".debug_str"         ? &sections.str
                           : name == ".debug_line_str"    ? &sections.line_str
                           : name == ".debug_str_offsets" ? &sections.str_offsets
                           : name == ".debug_addr"        ? &sections.addr
                           : name == ".debug_ranges"      ? &sections.ranges
                           : name == ".debug_rnglists"    ? &sections.rnglists
                                                          : nullptr;
      if (to) *to = {sec.data, sec.size};
    }
    std::vector<dwarf::UnitBounds> bounds;
    for (const DwarfReader::Unit& u : lazy->units) bounds.push_back({u.start, u.end, u.die});
    lazy->reader->use_info_reader(std::make_unique<dwarf::InfoReader>(sections, std::move(bounds)));
  }
  lazy->unloaded = lazy->units.size();
  lazy->index_spans();
  lazy_ = std::move(lazy);
}

// Units are read when a lookup first needs an address they cover: a profile
// touches few of a program's units, and reading every one of them
// (wasi-libc's 45 in the smallest C program) was most of the time it took to
// write a profile. A unit whose DIE gives no code ranges is read with the
// first lookup no other unit covers (most hold only data; a producer that
// leaves out a unit's ranges still gets its functions found).
bool Symbolizer::unread_units_at(uint32_t address, std::vector<uint32_t>& wanted) const {
  const uint64_t at = address - code_base_;
  const auto& spans = lazy_->spans;
  auto it = std::upper_bound(spans.begin(), spans.end(), at,
                             [](uint64_t a, const Lazy::Span& s) { return a < s.lo; });
  bool claimed = false;
  while (it != spans.begin()) {
    --it;
    if (it->max_hi <= at) break;  // nothing from here back reaches `at`
    if (it->hi <= at) continue;
    claimed = true;
    if (!lazy_->units[it->unit].loaded) wanted.push_back(it->unit);
  }
  return claimed;
}

void Symbolizer::load(uint32_t address) const {
  if (!lazy_ || lazy_->unloaded == 0 || address < code_base_) return;
  std::vector<uint32_t> wanted;  // unread units covering `address`
  const bool claimed = unread_units_at(address, wanted);
  const DwarfReader::Unit* first = lazy_->units.data();
  if (claimed) {
    if (wanted.empty()) return;
    read_units([&](const DwarfReader::Unit& u) {
      return std::find(wanted.begin(), wanted.end(), uint32_t(&u - first)) != wanted.end();
    });
  } else if (!lazy_->rangeless_read) {
    lazy_->rangeless_read = true;
    read_units([](const DwarfReader::Unit& u) { return u.ranges.empty(); });
  }
}

void Symbolizer::prefetch(const std::vector<uint32_t>& addresses) const {
  if (!lazy_ || lazy_->unloaded == 0) return;
  std::vector<uint32_t> wanted;
  bool unclaimed = false;
  for (uint32_t a : addresses)
    if (a >= code_base_) unclaimed |= !unread_units_at(a, wanted);
  std::vector<bool> read(lazy_->units.size());
  for (uint32_t u : wanted) read[u] = true;
  // As load(): an address no unit's ranges cover reads the rangeless units.
  const bool rangeless = unclaimed && !lazy_->rangeless_read;
  if (rangeless) lazy_->rangeless_read = true;
  const DwarfReader::Unit* first = lazy_->units.data();
  read_units([&](const DwarfReader::Unit& u) { return read[&u - first] || (rangeless && u.ranges.empty()); });
}

void Symbolizer::load_all() const {
  read_units([](const DwarfReader::Unit&) { return true; });
}

template <class Pred>
void Symbolizer::read_units(Pred wanted) const {
  if (!lazy_ || lazy_->unloaded == 0) return;
  std::vector<DwarfReader::Unit*> batch;
  for (auto& u : lazy_->units)
    if (!u.loaded && wanted(u)) batch.push_back(&u);
  if (batch.empty()) return;
  std::lock_guard libdwarf_lock(libdwarf_mu());
  for (DwarfReader::Unit* u : batch) {
    lazy_->reader->load(*u);
    --lazy_->unloaded;
  }
  lazy_->reader->finish();  // once for all the units just read
}

bool Symbolizer::layout(std::map<std::string, Field>& fields, std::map<std::string, uint64_t>& variables,
                        std::string& why) const {
  if (!lazy_ || !lazy_->reader) {
    why = "the module has no DWARF (.debug_info)";
    return false;
  }
  // The types the paths start from, then every unit until each is defined.
  std::map<std::string, Dwarf_Off, std::less<>> types;
  for (const auto& [path, f] : fields) types.emplace(path.substr(0, path.find('.')), 0);
  std::map<std::string, uint64_t, std::less<>> vars;
  for (const auto& [name, a] : variables) vars.emplace(name, DwarfReader::kUnknown);
  std::lock_guard libdwarf_lock(libdwarf_mu());
  auto missing = [&] {
    return std::any_of(types.begin(), types.end(), [](const auto& t) { return !t.second; }) ||
           std::any_of(vars.begin(), vars.end(),
                       [](const auto& v) { return v.second == DwarfReader::kUnknown; });
  };
  for (const DwarfReader::Unit& u : lazy_->units) {
    if (!missing()) break;
    lazy_->reader->scan_definitions(u, types, vars);
  }
  for (auto& [name, a] : variables) {
    a = vars[name];
    if (a == DwarfReader::kUnknown) {
      why = "DWARF has no address for variable " + name;
      return false;
    }
  }
  for (auto& [path, f] : fields) {
    const size_t dot = path.find('.');
    const Dwarf_Off root = types[path.substr(0, dot)];
    if (!root) {
      why = "DWARF does not define " + path.substr(0, dot);
      return false;
    }
    if (!lazy_->reader->member(root, dot == std::string::npos ? "" : std::string_view(path).substr(dot + 1),
                               f)) {
      why = "DWARF has no " + path;
      return false;
    }
  }
  return true;
}

const CPythonModule* Symbolizer::python() const {
  if (!python_read_) {
    python_read_ = true;
    if (!go_) python_ = CPythonModule::read(module_, *this, python_note_);
  }
  return python_.get();
}
const std::string& Symbolizer::python_note() const {
  python();
  return python_note_;
}

bool Symbolizer::has_line_numbers() const {
  load_all();
  return has_lines_;
}
bool Symbolizer::has_inline_frames() const {
  load_all();
  return has_inlines_;
}
bool Symbolizer::has_dwarf_functions() const {
  if (go_) return true;  // pclntab names every function, as DWARF would
  load_all();
  return !scopes_.empty();
}
const std::string& Symbolizer::warning() const {
  load_all();
  return warning_;
}

Symbolizer::~Symbolizer() = default;

std::optional<uint32_t> Symbolizer::function_at(uint32_t address) const {
  const auto& fs = module_.functions;
  // Bodies are in code-section order, so sorted by offset.
  auto it = std::upper_bound(fs.begin(), fs.end(), address,
                             [](uint32_t a, const vm::Function& f) { return a < f.body_offset; });
  if (it == fs.begin()) return std::nullopt;
  --it;
  if (address >= it->body_end) return std::nullopt;
  return module_.num_imported_funcs + static_cast<uint32_t>(it - fs.begin());
}

std::pair<uint32_t, uint32_t> Symbolizer::fallback_names(uint32_t func_index) const {
  if (func_index < fallback_.size() && fallback_[func_index].first != kNone) return fallback_[func_index];
  // Name section, then export, then wasm-function[N] (Module::function_name).
  // wasm-ld writes mangled names into the name section for symbols without
  // DWARF (Rust's std, C++ runtime libraries), so demangle those too.
  std::string raw = module_.function_name(func_index);
  std::string pretty = demangle(raw);
  strings_.push_back(raw);
  uint32_t sys = static_cast<uint32_t>(strings_.size() - 1);
  uint32_t name = sys;
  if (pretty != raw) {
    strings_.push_back(std::move(pretty));
    name = static_cast<uint32_t>(strings_.size() - 1);
  }
  if (func_index < fallback_.size()) fallback_[func_index] = {name, sys};
  return {name, sys};
}

SourceFrame Symbolizer::scope_frame(uint32_t scope) const {
  const Scope& s = scopes_[scope];
  SourceFrame f;
  f.function = s.name == kNone ? std::string_view("??") : str(s.name);
  f.system_name = s.system_name == kNone ? f.function : str(s.system_name);
  f.function_file = str(s.decl_file);
  f.start_line = s.decl_line;
  f.inlined = s.parent != kNone;
  return f;
}

std::vector<SourceFrame> Symbolizer::lookup(uint32_t address) const {
  return lookup(address, std::optional<uint32_t>());
}

std::vector<SourceFrame> Symbolizer::lookup(uint32_t address, uint32_t func_index) const {
  return lookup(address, std::optional<uint32_t>(func_index));
}

std::vector<SourceFrame> Symbolizer::go_lookup(uint32_t address, std::optional<uint32_t> known) const {
  std::vector<SourceFrame> out;
  std::optional<uint32_t> fi = known ? known : function_at(address);
  if (!fi) return out;
  if (*fi < module_.num_imported_funcs) {
    out.push_back(function(*fi));
    return out;
  }
  const uint32_t k = *fi - module_.num_imported_funcs;
  const GoFrame whole = go_->function(k);
  for (const GoFrame& g : go_->frames(go_->pc_at(k, address))) {
    SourceFrame f;
    f.function = f.system_name = g.function;
    f.function_file = g.inlined ? g.file : whole.file;
    f.start_line = g.start_line;
    f.file = g.file;
    f.line = g.line;
    f.inlined = g.inlined;
    out.push_back(f);
  }
  return out;
}

std::vector<SourceFrame> Symbolizer::lookup(uint32_t address, std::optional<uint32_t> known) const {
  if (go_) return go_lookup(address, known);
  load(address);
  std::vector<SourceFrame> out;
  const Entry* e = nullptr;
  auto it = std::upper_bound(entries_.begin(), entries_.end(), address,
                             [](uint32_t a, const Entry& x) { return a < x.start; });
  if (it != entries_.begin()) e = &*std::prev(it);

  if (e && e->scope != kNone) {
    uint32_t s = e->scope;
    SourceFrame inner = scope_frame(s);
    inner.file = str(e->file);
    inner.line = e->line;
    inner.column = e->column;
    out.push_back(inner);
    // Each frame further out is at the call of the one inside it.
    for (uint32_t p = scopes_[s].parent; p != kNone; s = p, p = scopes_[p].parent) {
      SourceFrame f = scope_frame(p);
      f.file = str(scopes_[s].call_file);
      f.line = scopes_[s].call_line;
      f.column = scopes_[s].call_column;
      out.push_back(f);
    }
    // A physical function DWARF left unnamed takes its wasm name.
    if (out.back().function == "??") {
      if (auto fi = known ? known : function_at(address)) {
        auto [name, sys] = fallback_names(*fi);
        out.back().function = str(name);
        out.back().system_name = str(sys);
      }
    }
    return out;
  }
  std::optional<uint32_t> fi = known ? known : function_at(address);
  if (!fi) return out;
  SourceFrame f = function(*fi);
  if (e) {  // a line row without a subprogram (DWARF without .debug_info functions)
    f.file = str(e->file);
    f.line = e->line;
    f.column = e->column;
  }
  out.push_back(f);
  return out;
}

SourceFrame Symbolizer::function(uint32_t func_index) const {
  if (go_ && func_index >= module_.num_imported_funcs &&
      func_index - module_.num_imported_funcs < go_->num_functions()) {
    GoFrame g = go_->function(func_index - module_.num_imported_funcs);
    SourceFrame f;
    f.function = f.system_name = g.function;
    f.function_file = g.file;
    f.start_line = g.start_line;
    return f;
  }
  if (func_index >= module_.num_imported_funcs &&
      func_index - module_.num_imported_funcs < module_.functions.size())
    load(module_.functions[func_index - module_.num_imported_funcs].body_offset);
  if (func_index >= module_.num_imported_funcs && !entries_.empty()) {
    uint32_t i = func_index - module_.num_imported_funcs;
    if (i < module_.functions.size()) {
      uint32_t at = module_.functions[i].body_offset;
      auto it = std::upper_bound(entries_.begin(), entries_.end(), at,
                                 [](uint32_t a, const Entry& x) { return a < x.start; });
      if (it != entries_.begin() && std::prev(it)->scope != kNone) {
        uint32_t s = std::prev(it)->scope;
        while (scopes_[s].parent != kNone) s = scopes_[s].parent;
        if (scopes_[s].name != kNone) return scope_frame(s);
      }
    }
  }
  auto [name, sys] = fallback_names(func_index);
  SourceFrame f;
  f.function = str(name);
  f.system_name = str(sys);
  return f;
}

std::vector<dwarf::UnitScopes> dwarf::scopes_both_ways(const vm::Module& module) {
  std::vector<UnitScopes> out;
  Symbolizer sym(module);
  if (!sym.lazy_) return out;
  std::lock_guard libdwarf_lock(libdwarf_mu());
  for (const DwarfReader::Unit& u : sym.lazy_->units) sym.lazy_->reader->both_scopes(u, out.emplace_back());
  return out;
}

std::vector<UnitLineRows> line_rows_both_ways(const vm::Module& module) {
  std::vector<UnitLineRows> out;
  Symbolizer sym(module);
  if (!sym.lazy_) return out;
  std::lock_guard libdwarf_lock(libdwarf_mu());
  for (const DwarfReader::Unit& u : sym.lazy_->units)
    sym.lazy_->reader->both_line_rows(u, out.emplace_back());
  return out;
}

}  // namespace wzvm::profiler
