#pragma once
// The rows of a compile unit's DWARF line-number program (.debug_line), read
// without libdwarf's per-row objects. libdwarf still reads the unit's header
// for its file names (profiler/symbolize.cc); this decodes the program's
// rows, which is where the time went (docs/RATIONALE.md, "Symbols (DWARF)").
//
// It handles what compilers write: DWARF 2-5 headers with the 12 standard
// opcodes, one operation per instruction, and the extended opcodes
// end_sequence, set_address and set_discriminator. Anything else (another
// opcode set, DW_LNE_define_file, a program that runs past its unit, a
// negative line) makes it decline, and the caller lets libdwarf read the
// unit, so malformed input is judged as libdwarf always judged it.

#include <cstdint>
#include <vector>

#include "vm/module.h"

namespace wzvm::profiler {

// What the Symbolizer reads of a row (libdwarf's dwarf_lineaddr, dwarf_lineno,
// dwarf_lineoff_b, dwarf_line_srcfileno, dwarf_lineendsequence). A row that
// ends a sequence keeps its address only.
struct LineRow {
  uint64_t address = 0;
  uint64_t file = 0;  // the file register: DWARF 5 counts from 0, earlier versions from 1
  uint64_t line = 0;
  uint32_t column = 0;
  bool end_sequence = false;
  bool operator==(const LineRow&) const = default;
};

// Decodes the program of the line table at `offset` in .debug_line
// (`section`, `size` bytes), whose unit has `address_size`-byte addresses,
// into `rows` (cleared first), as libdwarf 20210528 reads it, quirks
// included (DWARF 5's file register starts at 0; columns keep 16 bits; a
// special opcode's row after DW_LNS_set_epilogue_begin ends the sequence).
// `version` is the table's. False when it declines (see above); `rows` then
// holds nothing useful.
bool decode_line_rows(const uint8_t* section, uint64_t size, uint64_t offset, unsigned address_size,
                      std::vector<LineRow>& rows, unsigned& version);

// For tests: each compile unit's rows as libdwarf reads them and as
// decode_line_rows does (`own_ok` false when it declined). Defined in
// profiler/symbolize.cc, where libdwarf is.
struct UnitLineRows {
  std::vector<LineRow> libdwarf, own;
  bool own_ok = false;
};
std::vector<UnitLineRows> line_rows_both_ways(const vm::Module& module);

}  // namespace wzvm::profiler
