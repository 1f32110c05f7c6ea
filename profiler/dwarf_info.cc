#include "profiler/dwarf_info.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "profiler/dwarf_cursor.h"

namespace wzvm::profiler::dwarf {
namespace {

// DWARF 5, section 7.5.6.
enum Form : uint16_t {
  kAddr = 0x01,
  kBlock2 = 0x03,
  kBlock4 = 0x04,
  kData2 = 0x05,
  kData4 = 0x06,
  kData8 = 0x07,
  kString = 0x08,
  kBlock = 0x09,
  kBlock1 = 0x0a,
  kData1 = 0x0b,
  kFlag = 0x0c,
  kSdata = 0x0d,
  kStrp = 0x0e,
  kUdata = 0x0f,
  kRefAddr = 0x10,
  kRef1 = 0x11,
  kRef2 = 0x12,
  kRef4 = 0x13,
  kRef8 = 0x14,
  kRefUdata = 0x15,
  kIndirect = 0x16,
  kSecOffset = 0x17,
  kExprloc = 0x18,
  kFlagPresent = 0x19,
  kStrx = 0x1a,
  kAddrx = 0x1b,
  kData16 = 0x1e,
  kLineStrp = 0x1f,
  kRefSig8 = 0x20,
  kImplicitConst = 0x21,
  kLoclistx = 0x22,
  kRnglistx = 0x23,
  kStrx1 = 0x25,
  kStrx2 = 0x26,
  kStrx4 = 0x28,
  kAddrx1 = 0x29,
  kAddrx2 = 0x2a,
  kAddrx4 = 0x2c,
};
// DWARF 5, section 7.25 (range list entry kinds).
enum : uint8_t {
  kRleEndOfList = 0,
  kRleBaseAddressx,
  kRleStartxEndx,
  kRleStartxLength,
  kRleOffsetPair,
  kRleBaseAddress,
  kRleStartEnd,
  kRleStartLength,
};

// The forms this reader knows the size and meaning of. Left out, so
// declined: the supplementary-file and GNU forms, DW_FORM_indirect's
// target being indirect or implicit_const, and strx3/addrx3, whose size
// libdwarf 20210528 takes to be 4 (_dwarf_get_size_of_val).
bool known_form(uint64_t form) {
  switch (form) {
    case kAddr:
    case kBlock2:
    case kBlock4:
    case kData2:
    case kData4:
    case kData8:
    case kString:
    case kBlock:
    case kBlock1:
    case kData1:
    case kFlag:
    case kSdata:
    case kStrp:
    case kUdata:
    case kRefAddr:
    case kRef1:
    case kRef2:
    case kRef4:
    case kRef8:
    case kRefUdata:
    case kIndirect:
    case kSecOffset:
    case kExprloc:
    case kFlagPresent:
    case kStrx:
    case kAddrx:
    case kData16:
    case kLineStrp:
    case kRefSig8:
    case kImplicitConst:
    case kLoclistx:
    case kRnglistx:
    case kStrx1:
    case kStrx2:
    case kStrx4:
    case kAddrx1:
    case kAddrx2:
    case kAddrx4:
      return true;
    default:
      return false;
  }
}

// profiler/dwarf_cursor.h. LEB128s over 10 bytes go to libdwarf, which
// reads them by rules of its own (padding up to 24 bytes).
using Cursor = BoundedCursor<10>;

// Steps over one value of `form` (not indirect) in a unit of this
// version and address size, 32-bit DWARF.
bool skip_value(Cursor& c, uint16_t form, const Unit& u) {
  uint64_t v = 0;
  switch (form) {
    case kAddr:
      return c.skip(u.address_size);
    case kBlock2:
      return c.fixed(2, v) && c.skip(v);
    case kBlock4:
      return c.fixed(4, v) && c.skip(v);
    case kBlock:
    case kExprloc:
      return c.uleb(v) && c.skip(v);
    case kBlock1:
      return c.fixed(1, v) && c.skip(v);
    case kData1:
    case kFlag:
    case kRef1:
    case kStrx1:
    case kAddrx1:
      return c.skip(1);
    case kData2:
    case kRef2:
    case kStrx2:
    case kAddrx2:
      return c.skip(2);
    case kData4:
    case kRef4:
    case kStrx4:
    case kAddrx4:
    case kStrp:
    case kLineStrp:
    case kSecOffset:
      return c.skip(4);
    case kData8:
    case kRef8:
    case kRefSig8:
      return c.skip(8);
    case kData16:
      return c.skip(16);
    case kRefAddr:  // DWARF 2 wrote it address-sized
      return c.skip(u.version == 2 ? u.address_size : 4);
    case kString:
      return c.cstring();
    case kSdata: {
      int64_t s = 0;
      return c.sleb(s);
    }
    case kUdata:
    case kRefUdata:
    case kStrx:
    case kAddrx:
    case kLoclistx:
    case kRnglistx:
      return c.uleb(v);
    case kFlagPresent:
    case kImplicitConst:
      return true;
    default:
      return false;
  }
}

constexpr uint64_t kMaxCode = 1 << 16;  // abbreviation codes beyond this are declined
constexpr int kMaxDepth = 200;

}  // namespace

struct InfoReader::RnglistsTable {
  uint64_t header = 0, end = 0;  // .debug_rnglists offsets: the header's, and past the table
  uint64_t offsets = 0;          // of the offset array (DW_AT_rnglists_base points there)
  uint64_t count = 0;            // entries in the offset array
  unsigned address_size = 0;
};

InfoReader::InfoReader(const Sections& sections, std::vector<UnitBounds> units)
    : s_(sections), bounds_(std::move(units)), units_(bounds_.size()), unit_read_(bounds_.size()) {}
InfoReader::~InfoReader() = default;

// The size of a value of `form` that always has one, else -1.
static int fixed_size(uint16_t form, const Unit& u) {
  switch (form) {
    case kAddr:
      return static_cast<int>(u.address_size);
    case kRefAddr:
      return u.version == 2 ? static_cast<int>(u.address_size) : 4;
    case kData1:
    case kFlag:
    case kRef1:
    case kStrx1:
    case kAddrx1:
      return 1;
    case kData2:
    case kRef2:
    case kStrx2:
    case kAddrx2:
      return 2;
    case kData4:
    case kRef4:
    case kStrx4:
    case kAddrx4:
    case kStrp:
    case kLineStrp:
    case kSecOffset:
      return 4;
    case kData8:
    case kRef8:
    case kRefSig8:
      return 8;
    case kData16:
      return 16;
    case kFlagPresent:
    case kImplicitConst:
      return 0;
    default:
      return -1;
  }
}

const AbbrevTable* InfoReader::abbrev_table(uint64_t offset, const Unit& u) {
  if (offset >= s_.abbrev.size || offset >> 40) return nullptr;
  const uint64_t key = offset | static_cast<uint64_t>(u.address_size) << 40 | uint64_t(u.version == 2) << 48;
  auto [it, fresh] = abbrevs_.try_emplace(key);
  if (!fresh) return it->second.get();
  auto table = std::make_unique<AbbrevTable>();
  Cursor c{s_.abbrev.data + offset, s_.abbrev.data + s_.abbrev.size};
  // A table ends with a 0 code. libdwarf reads it lazily, up to the code it
  // looks for; any fault anywhere in it declines the units that use it.
  for (;;) {
    uint64_t code = 0, tag = 0, children = 0;
    if (!c.uleb(code)) return nullptr;
    if (code == 0) break;
    if (code >= kMaxCode || !c.uleb(tag) || tag == 0 || tag > 0xffff || !c.fixed(1, children) || children > 1)
      return nullptr;
    if (table->by_code.size() <= code) table->by_code.resize(code + 1);
    Abbrev& a = table->by_code[code];
    if (a.defined) return nullptr;  // libdwarf's choice between duplicates is its hash table's
    a.defined = true;
    a.tag = static_cast<uint16_t>(tag);
    a.children = children;
    a.first = static_cast<uint32_t>(table->specs.size());
    for (;;) {
      uint64_t name = 0, form = 0;
      if (!c.uleb(name) || !c.uleb(form)) return nullptr;
      if (name == 0 && form == 0) break;
      if (name == 0 || name > 0x3fff || !known_form(form)) return nullptr;
      AttrSpec spec;
      spec.name = static_cast<uint16_t>(name);
      spec.form = static_cast<uint16_t>(form);
      if (form == kImplicitConst && !c.sleb(spec.implicit)) return nullptr;
      a.sibling |= name == kAtSibling;
      table->specs.push_back(spec);
    }
    a.count = static_cast<uint32_t>(table->specs.size() - a.first);
    // Most DIEs (members, parameters, types) are stepped over by this size.
    int size = 0;
    for (uint32_t i = a.first; i < a.first + a.count && size >= 0; ++i) {
      const int n = fixed_size(table->specs[i].form, u);
      size = n < 0 ? -1 : size + n;
    }
    a.size = size;
  }
  it->second = std::move(table);
  return it->second.get();
}

const Unit* InfoReader::unit(size_t index) {
  if (index >= bounds_.size()) return nullptr;
  if (unit_read_[index]) return units_[index].get();
  unit_read_[index] = true;
  const UnitBounds& b = bounds_[index];
  if (b.start >= s_.info.size) return nullptr;
  auto u = std::make_unique<Unit>();
  u->start = b.start;
  Cursor c{s_.info.data + b.start, s_.info.data + s_.info.size};
  uint64_t length = 0, version = 0, unit_type = 1, address_size = 0, abbrev_offset = 0;
  // 0xfffffff0 and above: 64-bit DWARF or reserved.
  if (!c.fixed(4, length) || length >= 0xfffffff0 || length > static_cast<uint64_t>(c.end - c.p))
    return nullptr;
  u->end = b.start + 4 + length;
  if (u->end != b.end) return nullptr;
  c.end = s_.info.data + u->end;
  if (!c.fixed(2, version) || version < 2 || version > 5) return nullptr;
  if (version >= 5) {
    // Compile units only: type, skeleton and split units are libdwarf's.
    if (!c.fixed(1, unit_type) || unit_type != 1 || !c.fixed(1, address_size) || !c.fixed(4, abbrev_offset))
      return nullptr;
  } else if (!c.fixed(4, abbrev_offset) || !c.fixed(1, address_size)) {
    return nullptr;
  }
  if (address_size != 4 && address_size != 8) return nullptr;
  u->version = static_cast<unsigned>(version);
  u->address_size = static_cast<unsigned>(address_size);
  u->first_die = static_cast<uint64_t>(c.p - s_.info.data);
  if (u->first_die != b.die) return nullptr;
  u->abbrevs = abbrev_table(abbrev_offset, *u);
  if (!u->abbrevs) return nullptr;

  Die d;
  if (die(*u, u->first_die, d, true) != Got::kOk) return nullptr;
  if (d.tag() != kTagCompileUnit && d.tag() != kTagPartialUnit) return nullptr;
  // What libdwarf takes from the unit DIE when it sets up the unit
  // (finish_cu_context_via_cudie_inner): bases for the indexed forms and
  // the unit's base address. Split-DWARF attributes decline.
  const AttrSpec* specs = u->abbrevs->specs.data() + d.abbrev->first;
  for (uint32_t i = 0; i < d.abbrev->count; ++i) {
    for (uint32_t j = 0; j < i; ++j)
      if (specs[j].name == specs[i].name) return nullptr;  // which one libdwarf uses is its business
    const uint8_t* p = s_.info.data + d.offset + d.at[i];
    switch (specs[i].name) {
      case kAtStrOffsetsBase:
      case kAtAddrBase:
      case kAtRnglistsBase: {
        if (d.form[i] != kSecOffset) return nullptr;
        const uint64_t v = read_le(p, 4);
        if (specs[i].name == kAtStrOffsetsBase) u->has_str_offsets_base = true, u->str_offsets_base = v;
        else if (specs[i].name == kAtAddrBase) u->has_addr_base = true, u->addr_base = v;
        else u->has_rnglists_base = true, u->rnglists_base = v;
        break;
      }
      case kAtDwoName:
      case kAtGnuDwoName:
      case kAtGnuDwoId:
      case kAtGnuRangesBase:
      case kAtGnuAddrBase:
        return nullptr;
      default:
        break;
    }
  }
  uint64_t low = 0;
  Got g = low_pc(d, low);
  if (g == Got::kDecline) return nullptr;
  if (g == Got::kOk) u->has_low_pc = true, u->low_pc = low;
  units_[index] = std::move(u);
  return units_[index].get();
}

Got InfoReader::die(const Unit& u, uint64_t offset, Die& d, bool values) {
  if (offset < u.first_die || offset >= u.end) return Got::kDecline;
  return die_values(u, s_.info.data + offset, d, values);
}

Got InfoReader::die_values(const Unit& u, const uint8_t* p, Die& d, bool values) {
  const uint8_t* start = p;
  Cursor c{p, s_.info.data + u.end};
  uint64_t code = 0;
  if (!c.uleb(code)) return Got::kDecline;
  d.unit = &u;
  d.offset = static_cast<uint64_t>(start - s_.info.data);
  if (code == 0) {
    d.abbrev = nullptr;
    d.end = d.offset + 1;
    return Got::kAbsent;
  }
  if (code >= u.abbrevs->by_code.size() || !u.abbrevs->by_code[code].defined) return Got::kDecline;
  d.abbrev = &u.abbrevs->by_code[code];
  if (!values && d.abbrev->size >= 0) {
    if (!c.skip(static_cast<uint64_t>(d.abbrev->size))) return Got::kDecline;
    d.end = static_cast<uint64_t>(c.p - s_.info.data);
    return Got::kOk;
  }
  if (values && d.abbrev->count > Die::kMaxAttrs) return Got::kDecline;
  const AttrSpec* spec = u.abbrevs->specs.data() + d.abbrev->first;
  for (uint32_t i = 0; i < d.abbrev->count; ++i) {
    uint16_t form = spec[i].form;
    if (form == kIndirect) {
      uint64_t f = 0;
      if (!c.uleb(f) || !known_form(f) || f == kIndirect || f == kImplicitConst) return Got::kDecline;
      form = static_cast<uint16_t>(f);
    }
    if (values) {
      d.at[i] = static_cast<uint32_t>(c.p - start);
      d.form[i] = form;
    }
    if (!skip_value(c, form, u)) return Got::kDecline;
  }
  d.end = static_cast<uint64_t>(c.p - s_.info.data);
  return Got::kOk;
}

Got InfoReader::die_at(uint64_t offset, Die& d) {
  auto it = std::upper_bound(bounds_.begin(), bounds_.end(), offset,
                             [](uint64_t o, const UnitBounds& b) { return o < b.start; });
  if (it == bounds_.begin()) return Got::kDecline;
  --it;
  const Unit* u = unit(static_cast<size_t>(it - bounds_.begin()));
  if (!u) return Got::kDecline;
  const Got g = die(*u, offset, d, true);
  return g == Got::kOk ? g : Got::kDecline;  // a reference to a null entry: libdwarf's to judge
}

bool InfoReader::skip_children(const Unit& u, uint64_t& pos, int depth) {
  if (depth > kMaxDepth) return false;
  Die d;
  for (;;) {
    if (pos >= u.end) return false;  // the list runs out with its unit
    const Got g = die_values(u, s_.info.data + pos, d, false);
    if (g == Got::kDecline) return false;
    pos = d.end;
    if (g == Got::kAbsent) return true;
    if (d.children() && !skip_children(u, pos, depth + 1)) return false;
    if (!sibling_agrees(d, pos)) return false;
  }
}

bool InfoReader::sibling_agrees(const Die& d, uint64_t next) {
  // libdwarf's dwarf_siblingof_b jumps to the first DW_AT_sibling it meets
  // (a DW_FORM_ref_addr one is passed over) instead of walking the subtree.
  if (!d.abbrev->sibling) return true;
  const Unit& u = *d.unit;
  const AttrSpec* spec = u.abbrevs->specs.data() + d.abbrev->first;
  for (uint32_t i = 0; i < d.abbrev->count; ++i) {
    if (spec[i].name != kAtSibling) continue;
    // Its value's place, found again (skipped DIEs keep no values).
    Cursor c{s_.info.data + d.offset, s_.info.data + u.end};
    uint64_t v = 0;
    c.uleb(v);
    for (uint32_t j = 0; j < i; ++j) {
      uint16_t form = spec[j].form;
      if (form == kIndirect && c.uleb(v)) form = static_cast<uint16_t>(v);
      if (!skip_value(c, form, u)) return false;
    }
    uint16_t form = spec[i].form;
    if (form == kIndirect) {
      if (!c.uleb(v)) return false;
      form = static_cast<uint16_t>(v);
    }
    if (form == kRefAddr) continue;
    unsigned n = form == kRef1 ? 1 : form == kRef2 ? 2 : form == kRef4 ? 4 : form == kRef8 ? 8 : 0;
    if (n ? !c.fixed(n, v) : form != kRefUdata || !c.uleb(v)) return false;
    return u.start + v == next;
  }
  return true;
}

int InfoReader::find(const Die& d, uint16_t name) const {
  const AttrSpec* spec = d.unit->abbrevs->specs.data() + d.abbrev->first;
  for (uint32_t i = 0; i < d.abbrev->count; ++i)
    if (spec[i].name == name) return static_cast<int>(i);
  return -1;
}

Got InfoReader::udata(const Die& d, uint16_t name, uint64_t& out) const {
  const int i = find(d, name);
  if (i < 0) return Got::kAbsent;
  const uint8_t* p = s_.info.data + d.offset + d.at[i];
  switch (d.form[i]) {
    case kData1:
      out = p[0];
      return Got::kOk;
    case kData2:
      out = read_le(p, 2);
      return Got::kOk;
    case kData4:
      out = read_le(p, 4);
      return Got::kOk;
    case kData8:
      out = read_le(p, 8);
      return Got::kOk;
    case kUdata:
    case kLoclistx:
    case kRnglistx: {
      Cursor c{p, s_.info.data + d.unit->end};
      return c.uleb(out) ? Got::kOk : Got::kDecline;
    }
    default:  // dwarf_formudata refuses the rest, sdata and implicit_const included
      return Got::kAbsent;
  }
}

bool InfoReader::string_at(const Section& s, uint64_t offset, const char*& out) const {
  if (!s.data || offset >= s.size) return false;
  const auto* p = s.data + offset;
  if (!memchr(p, 0, s.size - offset)) return false;
  out = reinterpret_cast<const char*>(p);
  return true;
}

Got InfoReader::string(const Die& d, uint16_t name, const char*& out) {
  const int i = find(d, name);
  if (i < 0) return Got::kAbsent;
  const Unit& u = *d.unit;
  const uint8_t* p = s_.info.data + d.offset + d.at[i];
  uint64_t index = 0;
  switch (d.form[i]) {
    case kString:  // its end was found when the DIE was read
      out = reinterpret_cast<const char*>(p);
      return Got::kOk;
    case kStrp:
      return string_at(s_.str, read_le(p, 4), out) ? Got::kOk : Got::kDecline;
    case kLineStrp:
      return string_at(s_.line_str, read_le(p, 4), out) ? Got::kOk : Got::kDecline;
    case kStrx: {
      Cursor c{p, s_.info.data + u.end};
      if (!c.uleb(index)) return Got::kDecline;
      break;
    }
    case kStrx1:
      index = p[0];
      break;
    case kStrx2:
      index = read_le(p, 2);
      break;
    case kStrx4:
      index = read_le(p, 4);
      break;
    default:  // not a string form: dwarf_formstring fails
      return Got::kAbsent;
  }
  // Through the unit's part of .debug_str_offsets. Without a base libdwarf
  // guesses one; that is left to it.
  if (!u.has_str_offsets_base || u.str_offsets_base == 0 || !s_.str_offsets.data) return Got::kDecline;
  const uint64_t size = s_.str_offsets.size;
  if (index > size / 4 || u.str_offsets_base > size || u.str_offsets_base + index * 4 + 4 > size)
    return Got::kDecline;
  const uint64_t at = read_le(s_.str_offsets.data + u.str_offsets_base + index * 4, 4);
  return string_at(s_.str, at, out) ? Got::kOk : Got::kDecline;
}

Got InfoReader::reference(const Die& d, uint16_t name, uint64_t& out) {
  const int i = find(d, name);
  if (i < 0) return Got::kAbsent;
  const Unit& u = *d.unit;
  const uint8_t* p = s_.info.data + d.offset + d.at[i];
  uint64_t v = 0;
  switch (d.form[i]) {
    case kRef1:
      v = p[0];
      break;
    case kRef2:
      v = read_le(p, 2);
      break;
    case kRef4:
      v = read_le(p, 4);
      break;
    case kRef8:
      v = read_le(p, 8);
      break;
    case kRefUdata: {
      Cursor c{p, s_.info.data + u.end};
      if (!c.uleb(v)) return Got::kDecline;
      break;
    }
    case kRefAddr:
      out = read_le(p, u.version == 2 ? u.address_size : 4);
      return Got::kOk;
    case kData4:
    case kData8:  // references in DWARF 2 and 3 only
      return u.version >= 4 ? Got::kAbsent : Got::kDecline;
    case kSecOffset:
    case kLineStrp:
    case kLoclistx:
    case kRnglistx:
    case kRefSig8:  // libdwarf hands out offsets (or fails) its own way
      return Got::kDecline;
    default:
      return Got::kAbsent;
  }
  // A unit-relative offset: libdwarf fails one past the unit.
  if (v >= u.end - u.start) return Got::kDecline;
  out = u.start + v;
  return Got::kOk;
}

Got InfoReader::section_offset(const Die& d, uint16_t name, uint64_t& out) const {
  const int i = find(d, name);
  if (i < 0) return Got::kAbsent;
  if (d.form[i] != kSecOffset) return Got::kDecline;
  out = read_le(s_.info.data + d.offset + d.at[i], 4);
  return Got::kOk;
}

bool InfoReader::address_at(const Unit& u, uint64_t index, uint64_t& out) const {
  // libdwarf reads DW_AT_addr_base's table without one as if it were 0.
  if (!u.has_addr_base || !s_.addr.data) return false;
  const uint64_t size = s_.addr.size, n = u.address_size;
  if (size < n || u.addr_base > size || index > size / n) return false;
  const uint64_t at = u.addr_base + index * n;
  if (at > size - n) return false;
  out = read_le(s_.addr.data + at, static_cast<unsigned>(n));
  return true;
}

Got InfoReader::low_pc(const Die& d, uint64_t& out) {
  const int i = find(d, kAtLowPc);
  if (i < 0) return Got::kAbsent;
  const Unit& u = *d.unit;
  const uint8_t* p = s_.info.data + d.offset + d.at[i];
  if (d.form[i] == kAddr) {
    out = read_le(p, u.address_size);
    return Got::kOk;
  }
  // dwarf_lowpc looks up DW_FORM_addrx only; addrx1-4 it reads as an
  // address. Other classes are an error it reports.
  if (d.form[i] == kAddrx && u.version >= 5) {
    Cursor c{p, s_.info.data + u.end};
    uint64_t index = 0;
    return c.uleb(index) && address_at(u, index, out) ? Got::kOk : Got::kDecline;
  }
  return Got::kDecline;
}

Got InfoReader::high_pc(const Die& d, uint64_t& out, bool& constant) const {
  const int i = find(d, kAtHighPc);
  if (i < 0) return Got::kAbsent;
  const Unit& u = *d.unit;
  const uint8_t* p = s_.info.data + d.offset + d.at[i];
  constant = true;
  switch (d.form[i]) {
    case kAddr:
      constant = false;
      out = read_le(p, u.address_size);
      return Got::kOk;
    case kData1:
    case kData2:
    case kData4:
    case kData8:
    case kUdata:
      // An offset from low_pc since DWARF 4; before, libdwarf may class
      // data4 as a section offset.
      if (u.version < 4) return Got::kDecline;
      return udata(d, kAtHighPc, out);
    default:  // indexed addresses (dwarf_highpc_b reads them raw), sdata, ...
      return Got::kDecline;
  }
}

Got InfoReader::exprloc(const Die& d, uint16_t name, const uint8_t*& bytes, uint64_t& length) const {
  const int i = find(d, name);
  if (i < 0) return Got::kAbsent;
  if (d.form[i] != kExprloc) return Got::kAbsent;  // dwarf_formexprloc's error
  Cursor c{s_.info.data + d.offset + d.at[i], s_.info.data + d.unit->end};
  if (!c.uleb(length) || !c.skip(length)) return Got::kDecline;
  bytes = c.p - length;
  return Got::kOk;
}

bool InfoReader::load_rnglists() {
  if (rnglists_state_) return rnglists_state_ > 0;
  rnglists_state_ = -1;
  const Section& s = s_.rnglists;
  if (!s.data) return false;
  // The tables' headers (DWARF 5, section 7.28), as libdwarf lists them.
  for (uint64_t at = 0; at < s.size;) {
    Cursor c{s.data + at, s.data + s.size};
    uint64_t length = 0, version = 0, address_size = 0, segment = 0, count = 0;
    if (!c.fixed(4, length) || length >= 0xfffffff0 || length > static_cast<uint64_t>(c.end - c.p))
      return false;
    c.end = c.p + length;
    if (!c.fixed(2, version) || version != 5 || !c.fixed(1, address_size) ||
        (address_size != 4 && address_size != 8) || !c.fixed(1, segment) || segment != 0 ||
        !c.fixed(4, count) || count > static_cast<uint64_t>(c.end - c.p) / 4)
      return false;
    RnglistsTable t;
    t.header = at;
    t.end = at + 4 + length;
    t.offsets = static_cast<uint64_t>(c.p - s.data);
    t.count = count;
    t.address_size = static_cast<unsigned>(address_size);
    rnglists_.push_back(t);
    at = t.end;
  }
  rnglists_state_ = 1;
  return true;
}

Got InfoReader::rnglists(const Die& d, uint16_t form, uint64_t value,
                         std::vector<std::pair<uint64_t, uint64_t>>& out) {
  const Unit& u = *d.unit;
  if (!load_rnglists()) return Got::kDecline;
  // Which table: the one whose offsets DW_AT_rnglists_base names, else the
  // one holding the offset (dwarf_rnglists_get_rle_head).
  const RnglistsTable* t = nullptr;
  for (const RnglistsTable& r : rnglists_) {
    if (u.has_rnglists_base ? r.offsets == u.rnglists_base : value >= r.header && value < r.end) {
      t = &r;
      break;
    }
    if (u.has_rnglists_base && r.offsets > u.rnglists_base) break;
  }
  if (!t) return Got::kDecline;
  uint64_t at = value;
  const uint8_t* data = s_.rnglists.data;
  if (form == kRnglistx) {
    if (value >= t->count) return Got::kDecline;
    at = t->offsets + read_le(data + t->offsets + value * 4, 4);
  }
  // libdwarf reads the first entry's kind unchecked: only lists inside the
  // table's list area are read here.
  if (at < t->offsets + t->count * 4 || at >= t->end) return Got::kDecline;
  Cursor c{data + at, data + t->end};
  bool have_base = u.has_low_pc;
  uint64_t base = u.low_pc;
  for (;;) {
    uint64_t kind = 0, a = 0, b = 0;
    if (!c.fixed(1, kind)) return Got::kDecline;
    switch (kind) {
      case kRleEndOfList:
        return Got::kOk;
      case kRleBaseAddressx:
        if (!c.uleb(a) || !address_at(u, a, base)) return Got::kDecline;
        have_base = true;
        break;
      case kRleStartxEndx: {
        uint64_t lo = 0, hi = 0;
        if (!c.uleb(a) || !c.uleb(b) || !address_at(u, a, lo) || !address_at(u, b, hi)) return Got::kDecline;
        out.push_back({lo, hi});
        break;
      }
      case kRleStartxLength: {
        uint64_t lo = 0;
        if (!c.uleb(a) || !c.uleb(b) || !address_at(u, a, lo)) return Got::kDecline;
        out.push_back({lo, lo + b});
        break;
      }
      case kRleOffsetPair:
        if (!c.uleb(a) || !c.uleb(b)) return Got::kDecline;
        // Without a base libdwarf marks the entry unavailable.
        if (have_base) out.push_back({a + base, b + base});
        break;
      case kRleBaseAddress:
        if (!c.fixed(t->address_size, base)) return Got::kDecline;
        have_base = true;
        break;
      case kRleStartEnd:
        if (!c.fixed(t->address_size, a) || !c.fixed(t->address_size, b)) return Got::kDecline;
        out.push_back({a, b});
        break;
      case kRleStartLength:
        if (!c.fixed(t->address_size, a) || !c.uleb(b)) return Got::kDecline;
        out.push_back({a, a + b});
        break;
      default:
        return Got::kDecline;
    }
  }
}

Got InfoReader::ranges(const Die& d, uint64_t cu_base, std::vector<std::pair<uint64_t, uint64_t>>& out) {
  const int i = find(d, kAtRanges);
  if (i < 0) return Got::kAbsent;
  const Unit& u = *d.unit;
  const uint8_t* p = s_.info.data + d.offset + d.at[i];
  const uint16_t form = d.form[i];
  if (u.version >= 5) {
    uint64_t value = 0;
    if (form == kRnglistx) {
      Cursor c{p, s_.info.data + u.end};
      if (!c.uleb(value)) return Got::kDecline;
    } else if (form == kSecOffset) {
      value = read_le(p, 4);
    } else {
      return Got::kDecline;
    }
    return rnglists(d, form, value, out);
  }
  // DWARF 2-4: .debug_ranges (DWARF 4, section 2.17.3): pairs of addresses
  // until two zeros; an all-ones first address selects a new base.
  if (form != kSecOffset) return Got::kDecline;
  const uint64_t offset = read_le(p, 4);
  const Section& s = s_.ranges;
  if (!s.data || offset >= s.size) return Got::kDecline;
  const unsigned n = u.address_size;
  const uint64_t all_ones = n == 8 ? ~uint64_t(0) : 0xffffffff;
  Cursor c{s.data + offset, s.data + s.size};
  uint64_t base = cu_base;
  // libdwarf stops quietly at the section's end.
  while (c.p != c.end) {
    uint64_t a = 0, b = 0;
    if (!c.fixed(n, a) || !c.fixed(n, b)) return Got::kDecline;
    if (a == 0 && b == 0) break;
    if (a == all_ones) base = b;
    else out.push_back({base + a, base + b});
  }
  return Got::kOk;
}

namespace {
std::atomic<bool> own_die_reader{true};
}  // namespace
void set_own_die_reader(bool on) { own_die_reader = on; }
bool own_die_reader_enabled() { return own_die_reader; }

}  // namespace wzvm::profiler::dwarf
