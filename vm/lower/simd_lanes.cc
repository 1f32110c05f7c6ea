// SIMD (0xFD) rows with immediates: v128.const, i8x16.shuffle,
// v128.bitselect, lane extract/replace and lane loads/stores. The other
// SIMD rows are Unary/Binary/Load/Store rows (values.cc, memory.cc).

#include <cstring>

#include "vm/lower/function_compiler.h"

namespace wzvm::vm::lower {

namespace {
// SIMD lane access: the size of the lane an instruction addresses.
uint32_t simd_lane_bytes(IOp op) {
  switch (op) {
    case IOp::I8x16ExtractLaneS:
    case IOp::I8x16ExtractLaneU:
    case IOp::I8x16ReplaceLane:
    case IOp::V128Load8Lane:
    case IOp::V128Store8Lane:
      return 1;
    case IOp::I16x8ExtractLaneS:
    case IOp::I16x8ExtractLaneU:
    case IOp::I16x8ReplaceLane:
    case IOp::V128Load16Lane:
    case IOp::V128Store16Lane:
      return 2;
    case IOp::I32x4ExtractLane:
    case IOp::I32x4ReplaceLane:
    case IOp::F32x4ExtractLane:
    case IOp::F32x4ReplaceLane:
    case IOp::V128Load32Lane:
    case IOp::V128Store32Lane:
      return 4;
    default:
      return 8;
  }
}
}  // namespace

Lowered FunctionCompiler::lower_simd(const OpInfo& info) {
  switch (info.op) {
    // ---- SIMD (0xFD): the Special rows of vm/opcodes.def; their R/P1/P2
    // columns give the types. Lane indices are immediates, checked here
    // against the lane count ("invalid lane index"); the interpreter trusts them.
    case IOp::V128Const: {
      const uint8_t* b;
      if (!r_.bytes(16, b)) return false;
      uint64_t lo, hi;
      std::memcpy(&lo, b, 8);
      std::memcpy(&hi, b + 8, 8);
      if (emitting() && e_.want_const_slots_v128(loop_depth_ > 0)) {
        push_virtual(ValType::V128, e_.const_ref_v128(lo, hi));
        return true;
      }
      uint32_t dst = push(ValType::V128);
      if (emitting()) {  // [v128.const dst w0 w1 w2 w3]
        emit_op(IOp::V128Const);
        slot_word(dst);
        for (int i = 0; i < 4; ++i) {
          uint32_t w;
          std::memcpy(&w, b + 4 * i, 4);
          word(w);
        }
        mark_dst(here() - 5);
      }
      return true;
    }
    case IOp::I8x16Shuffle: {
      const uint8_t* lanes;
      if (!r_.bytes(16, lanes)) return false;
      for (int i = 0; i < 16; ++i)
        if (lanes[i] >= 32) return fail("invalid lane index");
      Operand a, b;
      if (!pop(ValType::V128, b) || !pop(ValType::V128, a)) return false;
      uint32_t dst = push(ValType::V128);
      if (emitting()) {  // [i8x16.shuffle dst a b sel0..3]: 16 lane bytes in 4 words
        emit_op(info.op);
        slot_word(dst);
        src_word(a.src);
        src_word(b.src);
        for (int i = 0; i < 4; ++i) {
          uint32_t w;
          std::memcpy(&w, lanes + 4 * i, 4);
          word(w);
        }
        mark_dst(here() - 7);
      }
      return true;
    }
    case IOp::V128Bitselect: {
      Operand a, b, c;
      if (!pop(ValType::V128, c) || !pop(ValType::V128, b) || !pop(ValType::V128, a)) return false;
      uint32_t dst = push(ValType::V128);
      if (emitting()) {  // [v128.bitselect dst a b mask]
        emit_op(info.op);
        slot_word(dst);
        src_word(a.src);
        src_word(b.src);
        src_word(c.src);
        mark_dst(here() - 4);
      }
      return true;
    }
    case IOp::I8x16ExtractLaneS:
    case IOp::I8x16ExtractLaneU:
    case IOp::I16x8ExtractLaneS:
    case IOp::I16x8ExtractLaneU:
    case IOp::I32x4ExtractLane:
    case IOp::I64x2ExtractLane:
    case IOp::F32x4ExtractLane:
    case IOp::F64x2ExtractLane: {
      uint32_t lane;
      if (!read_lane(info, lane)) return false;
      Operand v;
      if (!pop(ValType::V128, v)) return false;
      uint32_t dst = push(info.result);
      if (emitting()) {  // [op dst v lane]
        emit_op(info.op);
        slot_word(dst);
        src_word(v.src);
        word(lane);
        mark_dst(here() - 3);
      }
      return true;
    }
    case IOp::I8x16ReplaceLane:
    case IOp::I16x8ReplaceLane:
    case IOp::I32x4ReplaceLane:
    case IOp::I64x2ReplaceLane:
    case IOp::F32x4ReplaceLane:
    case IOp::F64x2ReplaceLane: {
      uint32_t lane;
      if (!read_lane(info, lane)) return false;
      Operand v, x;
      if (!pop(info.p2, x) || !pop(ValType::V128, v)) return false;
      uint32_t dst = push(ValType::V128);
      if (emitting()) {  // [op dst v x lane]
        emit_op(info.op);
        slot_word(dst);
        src_word(v.src);
        src_word(x.src);
        word(lane);
        mark_dst(here() - 4);
      }
      return true;
    }
    case IOp::V128Load8Lane:
    case IOp::V128Load16Lane:
    case IOp::V128Load32Lane:
    case IOp::V128Load64Lane:
    case IOp::V128Store8Lane:
    case IOp::V128Store16Lane:
    case IOp::V128Store32Lane:
    case IOp::V128Store64Lane: {
      uint64_t offset;
      uint32_t lane, mem;
      if (!read_memarg(simd_lane_bytes(info.op), offset, mem) || !read_lane(info, lane)) return false;
      Operand addr, v;
      if (!pop(ValType::V128, v) || !pop(addr_type(mem), addr)) return false;
      bool load = info.result == ValType::V128;
      uint32_t dst = load ? push(ValType::V128) : 0;
      use_memory(mem);
      uint32_t a = address(mem, addr, offset);
      if (emitting()) {  // [load_lane dst addr v offset lane] / [store_lane addr v offset lane]
        emit_op(info.op);
        if (load) slot_word(dst);
        src_word(a);
        src_word(v.src);
        word(static_cast<uint32_t>(offset));
        word(lane);
        if (load) mark_dst(here() - 5);
      }
      restore_memory(mem);
      return true;
    }
    default:
      return std::nullopt;
  }
}

// A lane index immediate (one byte), below the lane count of the instruction.
bool FunctionCompiler::read_lane(const OpInfo& info, uint32_t& lane) {
  uint8_t b;
  if (!r_.u8(b)) return false;
  lane = b;
  if (lane >= 16 / simd_lane_bytes(info.op)) return fail("invalid lane index");
  return true;
}

}  // namespace wzvm::vm::lower
