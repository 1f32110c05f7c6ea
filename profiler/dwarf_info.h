#pragma once
// Compile units' DIE trees (.debug_info, .debug_abbrev) read without
// libdwarf's per-DIE and per-attribute objects. libdwarf's walk was most of
// what writing a CPU profile of CPython cost (docs/RATIONALE.md, "Symbols
// (DWARF)"): it allocates every DIE and attribute, and dwarf_siblingof_b
// parses again the subtree of a DIE whose children were just walked, since
// clang writes no DW_AT_sibling. This reader walks the bytes in place.
//
// It reads what the Symbolizer reads, as libdwarf 20210528 reads it, and
// declines anything else: 64-bit DWARF, split and type units, forms it does
// not know or that libdwarf reads wrongly (strx3, addrx3; addrx1-4 in
// DW_AT_low_pc and any index in DW_AT_high_pc), a read past its unit or
// section, an unknown abbreviation code, a DW_AT_sibling that disagrees with
// the tree, nesting deeper than 200, a range list or string it cannot find.
// The caller then lets libdwarf read the whole unit, so malformed DWARF is
// judged as libdwarf always judged it (profiler/symbolize.cc).

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "vm/module.h"

namespace wzvm::profiler::dwarf {

// DWARF 5, section 7.5 (the codes are the same in every version that has them).
enum Attribute : uint16_t {
  kAtSibling = 0x01,
  kAtLocation = 0x02,
  kAtName = 0x03,
  kAtByteSize = 0x0b,
  kAtBitOffset = 0x0c,
  kAtBitSize = 0x0d,
  kAtStmtList = 0x10,
  kAtLowPc = 0x11,
  kAtHighPc = 0x12,
  kAtLanguage = 0x13,
  kAtAbstractOrigin = 0x31,
  kAtDataMemberLocation = 0x38,
  kAtDeclFile = 0x3a,
  kAtDeclLine = 0x3b,
  kAtDeclaration = 0x3c,
  kAtSpecification = 0x47,
  kAtType = 0x49,
  kAtRanges = 0x55,
  kAtCallColumn = 0x57,
  kAtCallFile = 0x58,
  kAtCallLine = 0x59,
  kAtDataBitOffset = 0x6b,
  kAtLinkageName = 0x6e,
  kAtStrOffsetsBase = 0x72,
  kAtAddrBase = 0x73,
  kAtRnglistsBase = 0x74,
  kAtDwoName = 0x76,
  kAtMipsLinkageName = 0x2007,
  kAtGnuDwoName = 0x2130,
  kAtGnuDwoId = 0x2131,
  kAtGnuRangesBase = 0x2132,
  kAtGnuAddrBase = 0x2133,
};
enum Tag : uint16_t {
  kTagClassType = 0x02,
  kTagLexicalBlock = 0x0b,
  kTagMember = 0x0d,
  kTagPointerType = 0x0f,
  kTagCompileUnit = 0x11,
  kTagStructureType = 0x13,
  kTagTypedef = 0x16,
  kTagUnionType = 0x17,
  kTagInlinedSubroutine = 0x1d,
  kTagModule = 0x1e,
  kTagConstType = 0x26,
  kTagSubprogram = 0x2e,
  kTagVariable = 0x34,
  kTagVolatileType = 0x35,
  kTagNamespace = 0x39,
  kTagPartialUnit = 0x3c,
  kTagAtomicType = 0x47,
};

struct Section {
  const uint8_t* data = nullptr;
  uint64_t size = 0;
};
struct Sections {
  Section info, abbrev, str, line_str, str_offsets, addr, ranges, rnglists;
};

// What a read gives: kAbsent is also what libdwarf's accessor failing means
// to the Symbolizer (it treats both alike); kDecline means the unit goes to
// libdwarf.
enum class Got : uint8_t { kAbsent, kOk, kDecline };

struct AttrSpec {
  uint16_t name = 0;
  uint16_t form = 0;
  int64_t implicit = 0;  // DW_FORM_implicit_const's value
};
struct Abbrev {
  uint16_t tag = 0;
  bool children = false;
  bool defined = false;
  bool sibling = false;           // has a DW_AT_sibling
  uint32_t first = 0, count = 0;  // its specs in AbbrevTable::specs
  int32_t size = -1;              // of its attributes when every form has a fixed size, else -1
};
// One table of .debug_abbrev, whole (libdwarf parses as far as it needs; a
// table that is malformed anywhere is declined), for units of one address
// size and one DW_FORM_ref_addr size (sizes depend on both).
struct AbbrevTable {
  std::vector<Abbrev> by_code;  // index: abbreviation code
  std::vector<AttrSpec> specs;
};

// A unit's header and what its unit DIE says about the whole unit.
struct Unit {
  uint64_t start = 0, end = 0, first_die = 0;  // .debug_info offsets
  unsigned version = 0, address_size = 0;
  const AbbrevTable* abbrevs = nullptr;
  bool has_low_pc = false, has_addr_base = false, has_str_offsets_base = false, has_rnglists_base = false;
  uint64_t low_pc = 0, addr_base = 0, str_offsets_base = 0, rnglists_base = 0;
};

// One DIE, and where its attributes' values lie.
struct Die {
  static constexpr unsigned kMaxAttrs = 48;
  const Unit* unit = nullptr;
  const Abbrev* abbrev = nullptr;
  uint64_t offset = 0, end = 0;  // end: the byte after its attributes
  // Offset from `offset` of each attribute's value, and its form after
  // DW_FORM_indirect, when read with values.
  uint32_t at[kMaxAttrs];
  uint16_t form[kMaxAttrs];
  uint16_t tag() const { return abbrev->tag; }
  bool children() const { return abbrev->children; }
};

// The bounds of a unit as libdwarf listed it (the Symbolizer's unit index).
struct UnitBounds {
  uint64_t start = 0, end = 0, die = 0;
};

class InfoReader {
 public:
  InfoReader(const Sections& sections, std::vector<UnitBounds> units);
  ~InfoReader();

  // Unit `index` of the list (header, abbreviations, unit DIE's base
  // attributes), read once; null when it declines.
  const Unit* unit(size_t index);
  // The DIE at .debug_info offset `offset` of unit `u`; kAbsent for a null
  // entry. `values`: also record where each attribute's value lies (the
  // accessors below need it).
  Got die(const Unit& u, uint64_t offset, Die& d, bool values);
  // The DIE a reference points at, in whichever unit holds it (null
  // entries, headers and offsets outside every unit decline).
  Got die_at(uint64_t offset, Die& d);
  // From `pos`, the first child of a DIE with children, to the byte after
  // the null entry that ends them. `depth` counts the enclosing DIEs.
  bool skip_children(const Unit& u, uint64_t& pos, int depth);
  // A DW_AT_sibling, when `d` has one libdwarf follows, must be where the
  // tree says the next sibling is: `next`.
  bool sibling_agrees(const Die& d, uint64_t next);

  // The attributes, read as libdwarf's accessors read them (the name says
  // which). `d` must have been read with values.
  bool has(const Die& d, uint16_t name) const { return find(d, name) >= 0; }
  Got udata(const Die& d, uint16_t name, uint64_t& out) const;  // dwarf_formudata
  Got string(const Die& d, uint16_t name, const char*& out);    // dwarf_formstring
  Got reference(const Die& d, uint16_t name, uint64_t& out);    // dwarf_global_formref, DIE references only
  Got section_offset(const Die& d, uint16_t name, uint64_t& out) const;
  Got low_pc(const Die& d, uint64_t& out);                         // dwarf_lowpc
  Got high_pc(const Die& d, uint64_t& out, bool& constant) const;  // dwarf_highpc_b
  // DW_AT_ranges as [start, end) pairs, base addresses applied as libdwarf
  // does (dwarf_get_ranges_b, or the rnglists head for DWARF 5), only the
  // entries that describe ranges. `cu_base`: DWARF 4's initial base.
  Got ranges(const Die& d, uint64_t cu_base, std::vector<std::pair<uint64_t, uint64_t>>& out);
  // DW_AT_location's expression bytes (dwarf_formexprloc).
  Got exprloc(const Die& d, uint16_t name, const uint8_t*& bytes, uint64_t& length) const;

 private:
  struct RnglistsTable;
  int find(const Die& d, uint16_t name) const;  // index in the abbreviation, -1 if absent
  const AbbrevTable* abbrev_table(uint64_t offset, const Unit& u);
  Got die_values(const Unit& u, const uint8_t* p, Die& d, bool values);
  bool address_at(const Unit& u, uint64_t index, uint64_t& out) const;  // .debug_addr
  bool string_at(const Section& s, uint64_t offset, const char*& out) const;
  bool load_rnglists();
  Got rnglists(const Die& d, uint16_t form, uint64_t value, std::vector<std::pair<uint64_t, uint64_t>>& out);

  Sections s_;
  std::vector<UnitBounds> bounds_;
  std::vector<std::unique_ptr<Unit>> units_;
  std::vector<bool> unit_read_;
  // By offset, address size and DWARF 2 or not; null: declined.
  std::unordered_map<uint64_t, std::unique_ptr<AbbrevTable>> abbrevs_;
  std::vector<RnglistsTable> rnglists_;
  int rnglists_state_ = 0;  // 0 unread, 1 read, -1 malformed
};

// For tests: each compile unit's scopes (functions and inlined calls, as
// the Symbolizer records them) read through libdwarf and through
// InfoReader (`own_ok` false when it declined the unit). Defined in
// profiler/symbolize.cc, where libdwarf is.
struct ScopeRow {
  std::string name, system_name, decl_file, call_file;
  uint32_t decl_line = 0, call_line = 0, call_column = 0;
  uint32_t parent = UINT32_MAX;  // index in the unit's rows
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  bool operator==(const ScopeRow&) const = default;
};
struct UnitScopes {
  std::vector<ScopeRow> libdwarf, own;
  bool own_ok = false;
};
std::vector<UnitScopes> scopes_both_ways(const vm::Module& module);
// For tests: whether Symbolizers read DIE trees through InfoReader (on
// unless a test turns it off, to compare whole tables with libdwarf's).
void set_own_die_reader(bool on);
bool own_die_reader_enabled();

}  // namespace wzvm::profiler::dwarf
