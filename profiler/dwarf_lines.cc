#include "profiler/dwarf_lines.h"

#include "profiler/dwarf_cursor.h"

namespace wzvm::profiler {
namespace {

// DWARF 5, section 7.22 (the same values since DWARF 2).
enum : uint8_t {
  kCopy = 1,
  kAdvancePc,
  kAdvanceLine,
  kSetFile,
  kSetColumn,
  kNegateStmt,
  kSetBasicBlock,
  kConstAddPc,
  kFixedAdvancePc,
  kSetPrologueEnd,
  kSetEpilogueBegin,
  kSetIsa,
  kOpcodeBase,  // 13: the first special opcode when all 12 are present
};
enum : uint8_t { kEndSequence = 1, kSetAddress = 2, kSetDiscriminator = 4 };
// Operand counts of the standard opcodes, as every producer declares them.
constexpr uint8_t kStandardLengths[kOpcodeBase - 1] = {0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1};

// profiler/dwarf_cursor.h; LEB128s over 8 bytes go to libdwarf.
using Cursor = dwarf::BoundedCursor<8>;

// Skips one value of an entry of a DWARF 5 directory or file table: the
// forms section 6.2.4.1 allows there (DWARF 5, section 7.5.6 codes).
bool skip_form(Cursor& c, uint64_t form, unsigned offset_size) {
  enum : uint8_t {
    kData2 = 0x05,
    kData4 = 0x06,
    kData8 = 0x07,
    kString = 0x08,
    kBlock = 0x09,
    kData1 = 0x0b,
    kStrp = 0x0e,
    kUdata = 0x0f,
    kSecOffset = 0x17,
    kStrx = 0x1a,
    kData16 = 0x1e,
    kLineStrp = 0x1f,
    kStrx1 = 0x25,
    kStrx2 = 0x26,
    kStrx3 = 0x27,
    kStrx4 = 0x28,
  };
  uint64_t v = 0;
  switch (form) {
    case kString:
      return c.cstring();
    case kStrp:
    case kLineStrp:
    case kSecOffset:
      return c.fixed(offset_size, v);
    case kUdata:
    case kStrx:
      return c.uleb(v);
    case kData1:
    case kStrx1:
      return c.fixed(1, v);
    case kData2:
    case kStrx2:
      return c.fixed(2, v);
    case kStrx3:
      return c.fixed(3, v);
    case kData4:
    case kStrx4:
      return c.fixed(4, v);
    case kData8:
      return c.fixed(8, v);
    case kData16:  // an MD5
      return c.fixed(8, v) && c.fixed(8, v);
    case kBlock:
      return c.uleb(v) && c.skip(v);
    default:
      return false;
  }
}

// Skips the directory and file tables that follow a header's opcode
// lengths: libdwarf starts the program where they end, so they must end
// where header_length says the program starts.
bool skip_file_tables(Cursor& c, unsigned version, unsigned offset_size) {
  if (version < 5) {
    // Include directories, then file entries (name, directory, time,
    // length), each list ended by an empty name.
    while (true) {
      if (c.p >= c.end) return false;
      if (*c.p == 0) break;
      if (!c.cstring()) return false;
    }
    ++c.p;
    uint64_t v = 0;
    while (true) {
      if (c.p >= c.end) return false;
      if (*c.p == 0) break;
      if (!c.cstring() || !c.uleb(v) || !c.uleb(v) || !c.uleb(v)) return false;
    }
    ++c.p;
    return true;
  }
  // DWARF 5, section 6.2.4: twice a format (count, then content type and
  // form pairs), a count of entries and the entries.
  for (int table = 0; table < 2; ++table) {
    uint64_t format_count = 0, count = 0, v = 0;
    if (!c.fixed(1, format_count)) return false;
    uint64_t forms[32];
    if (format_count > 32) return false;
    for (uint64_t i = 0; i < format_count; ++i)
      if (!c.uleb(v) || !c.uleb(forms[i])) return false;
    if (!c.uleb(count)) return false;
    for (uint64_t e = 0; e < count; ++e)
      for (uint64_t i = 0; i < format_count; ++i)
        if (!skip_form(c, forms[i], offset_size)) return false;
  }
  return true;
}

}  // namespace

bool decode_line_rows(const uint8_t* section, uint64_t size, uint64_t offset, unsigned address_size,
                      std::vector<LineRow>& rows, unsigned& version) {
  rows.clear();
  if (offset >= size || address_size == 0 || address_size > 8) return false;
  // The header: DWARF 5, section 6.2.4 (DWARF 4's lacks the address and
  // segment selector sizes and the DWARF 5 file tables; DWARF 2 and 3's
  // also the maximum operations per instruction).
  Cursor c{section + offset, section + size};
  uint64_t length = 0, v = 0;
  unsigned offset_size = 4;
  if (!c.fixed(4, length)) return false;
  if (length == 0xffffffff) {
    offset_size = 8;
    if (!c.fixed(8, length)) return false;
  }
  if (length > static_cast<uint64_t>(c.end - c.p)) return false;
  c.end = c.p + length;  // the unit's end
  if (!c.fixed(2, v) || v < 2 || v > 5) return false;
  version = static_cast<unsigned>(v);
  if (version >= 5 && (!c.fixed(1, v) || !c.fixed(1, v))) return false;  // address, segment selector sizes
  uint64_t header_length = 0;
  if (!c.fixed(offset_size, header_length) || header_length > static_cast<uint64_t>(c.end - c.p))
    return false;
  const uint8_t* program = c.p + header_length;
  uint64_t min_length = 0, max_ops = 1, default_is_stmt = 0, line_base_byte = 0, line_range = 0,
           opcode_base = 0;
  if (!c.fixed(1, min_length) || (version >= 4 && !c.fixed(1, max_ops)) || !c.fixed(1, default_is_stmt) ||
      !c.fixed(1, line_base_byte) || !c.fixed(1, line_range) || !c.fixed(1, opcode_base))
    return false;
  // VLIW operation indices (max_ops > 1) and other opcode sets: libdwarf's.
  if (max_ops > 1 || line_range == 0 || opcode_base != kOpcodeBase) return false;
  for (uint8_t n : kStandardLengths)
    if (!c.fixed(1, v) || v != n) return false;
  if (!skip_file_tables(c, version, offset_size) || c.p != program) return false;
  const int64_t line_base = static_cast<int8_t>(line_base_byte);

  // The state machine (section 6.2.2). libdwarf starts DWARF 5's file
  // register at 0 (the spec says 1); the rows must be libdwarf's.
  struct Registers {
    uint64_t address = 0, file = 1, line = 1, column = 0;
    bool epilogue_begin = false;
  };
  const uint64_t first_file = version >= 5 ? 0 : 1;
  Registers r;
  r.file = first_file;
  auto emit = [&](bool end_sequence) {
    if (end_sequence) rows.push_back({r.address, 0, 0, 0, true});
    else rows.push_back({r.address, r.file, r.line, static_cast<uint16_t>(r.column), false});
  };
  // The line register is unsigned; libdwarf rejects the table where it
  // would go below zero.
  auto add_line = [&](int64_t delta) {
    r.line += static_cast<uint64_t>(delta);
    return static_cast<int64_t>(r.line) >= 0;
  };
  while (c.p < c.end) {
    const uint8_t op = *c.p++;
    if (op >= kOpcodeBase) {
      const uint64_t adjusted = op - kOpcodeBase;
      r.address += adjusted / line_range * min_length;
      if (!add_line(line_base + static_cast<int64_t>(adjusted % line_range))) return false;
      // libdwarf 20210528 gives a special opcode's row the epilogue_begin
      // flag as its end_sequence (dwarf_line_table_reader_common.h); the
      // Symbolizer then ends the sequence there, so the decoder does too.
      emit(r.epilogue_begin);
      r.epilogue_begin = false;
      continue;
    }
    int64_t s = 0;
    switch (op) {
      case 0: {  // extended: length, sub-opcode, operands
        uint64_t ext_length = 0;
        if (!c.uleb(ext_length) || c.p >= c.end) return false;
        const uint8_t ext = *c.p++;
        if (ext == kEndSequence) {
          emit(true);
          r = Registers();
          r.file = first_file;
        } else if (ext == kSetAddress) {
          // libdwarf reads the unit's address size, whatever the length says.
          if (!c.fixed(address_size, r.address)) return false;
        } else if (ext == kSetDiscriminator) {
          if (!c.uleb(v)) return false;
        } else {
          return false;  // DW_LNE_define_file, vendor opcodes
        }
        break;
      }
      case kCopy:
        emit(false);
        r.epilogue_begin = false;
        break;
      case kAdvancePc:
        if (!c.uleb(v)) return false;
        r.address += min_length * v;
        break;
      case kAdvanceLine:
        if (!c.sleb(s) || !add_line(s)) return false;
        break;
      case kSetFile:
        if (!c.uleb(r.file)) return false;
        break;
      case kSetColumn:
        if (!c.uleb(r.column)) return false;
        break;
      case kConstAddPc:
        r.address += (255 - kOpcodeBase) / line_range * min_length;
        break;
      case kFixedAdvancePc:
        if (!c.fixed(2, v)) return false;
        r.address += v;
        break;
      case kSetEpilogueBegin:
        r.epilogue_begin = true;
        break;
      case kSetIsa:  // libdwarf keeps the ISA in a byte and rejects larger ones
        if (!c.uleb(v) || v > 0xff) return false;
        break;
      default:  // negate_stmt, basic_block, prologue_end: nothing the rows keep
        break;
    }
  }
  return true;
}

}  // namespace wzvm::profiler
