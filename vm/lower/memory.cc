// Memory: the Load and Store rows, memory.size/grow/init/copy/fill and
// data.drop, and what every memory access shares: the memarg immediate, a
// 64-bit memory's address narrowed to the 32-bit one the loop reads
// (memory64), and the switch to a memory other than 0 (multi-memory).

#include "vm/lower/function_compiler.h"

namespace wzvm::vm::lower {

bool FunctionCompiler::load(const OpInfo& info) {
  uint64_t offset;
  uint32_t mem;
  if (!read_memarg(info.mem_bytes, offset, mem)) return false;
  Operand addr;
  if (!pop(addr_type(mem), addr)) return false;
  uint32_t dst = push(info.result);
  if (emitting() && mem == 0 && fuse_load(e_, info.op, dst, addr, offset, is64(mem))) return true;
  if (emitting() && mem == 0 && !is64(mem) &&
      fuse_const_address(e_, info.op, dst, addr, nullptr, offset, loop_depth_ > 0)) {
    pair_mem_access(e_);
    return true;
  }
  use_memory(mem);
  uint32_t a = address(mem, addr, offset);
  if (emitting()) {
    emit_op(info.op);
    slot_word(dst);
    src_word(a);
    word(static_cast<uint32_t>(offset));
    mark_dst(here() - 3);
    if (mem == 0) pair_mem_access(e_);
    if (mem == 0 && info.op == IOp::I64Load32U) pair_index_load(e_);
    if (mem == 0 && info.op == IOp::I32Load16U) decode_ops_.push_back(here() - 4);  // pair_decode
    // it may pair with a conditional jump after it (pair_copy_jumps)
    if (mem == 0 && (info.op == IOp::I32Load || info.op == IOp::I32Load8U)) copy_ops_.push_back(here() - 4);
  }
  restore_memory(mem);
  return true;
}

bool FunctionCompiler::store(const OpInfo& info) {
  uint64_t offset;
  uint32_t mem;
  if (!read_memarg(info.mem_bytes, offset, mem)) return false;
  Operand addr, v;
  if (!pop(info.p2, v) || !pop(addr_type(mem), addr)) return false;
  if (emitting() && mem == 0 && !is64(mem) && fuse_f64_store(e_, info.op, addr, v, offset)) return true;
  if (uint32_t tee_at; emitting() && mem == 0 && !is64(mem) &&
                       fuse_rmw_add(e_, info.op, addr, v, offset, local_slots_, tee_at)) {
    if (tee_at != UINT32_MAX) copy_ops_.push_back(tee_at);  // it may pair with a jump (pair_copy_jumps)
    return true;
  }
  if (emitting() && mem == 0 && !is64(mem) && fuse_store_add(e_, info.op, addr, v, offset)) return true;
  if (emitting() && mem == 0 && !is64(mem) &&
      fuse_const_address(e_, info.op, 0, addr, &v, offset, loop_depth_ > 0)) {
    pair_mem_access(e_);
    return true;
  }
  use_memory(mem);
  uint32_t a = address(mem, addr, offset);
  if (emitting()) {
    emit_op(info.op);
    src_word(a);
    src_word(v.src);
    word(static_cast<uint32_t>(offset));
    if (mem == 0) pair_mem_access(e_);
  }
  restore_memory(mem);
  return true;
}

Lowered FunctionCompiler::lower_memory(const OpInfo& info) {
  switch (info.op) {
    case IOp::MemorySize: {
      uint32_t mem;
      if (!read_memidx(mem)) return false;
      uint32_t dst = push(addr_type(mem));
      use_memory(mem);
      if (emitting()) {
        emit_op(IOp::MemorySize);
        slot_word(dst);
        mark_dst(here() - 1);
        if (is64(mem)) {  // the page count, zero-extended to i64
          emit_op(IOp::I64ExtendI32U);
          slot_word(dst);
          src_word(dst);
          mark_dst(here() - 2);
        }
      }
      restore_memory(mem);
      return true;
    }
    case IOp::MemoryGrow: {
      uint32_t mem;
      if (!read_memidx(mem)) return false;
      Operand delta;
      if (!pop(addr_type(mem), delta)) return false;
      uint32_t dst = push(addr_type(mem));
      use_memory(mem);
      if (emitting()) {
        emit_op(is64(mem) ? IOp::MemoryGrow64 : IOp::MemoryGrow);
        slot_word(dst);
        src_word(delta.src);
      }
      restore_memory(mem);
      return true;
    }
    case IOp::MemoryInit: {
      uint32_t d, mem;
      if (!read_data(d) || !read_memidx(mem)) return false;
      Operand n, s, dst;
      if (!pop(ValType::I32, n) || !pop(ValType::I32, s) || !pop(addr_type(mem), dst)) return false;
      use_memory(mem);
      uint32_t dsrc = narrowed(dst);
      if (emitting()) {
        emit_op(IOp::MemoryInit);
        word(d);
        src_word(dsrc);
        src_word(s.src);
        src_word(n.src);
      }
      restore_memory(mem);
      return true;
    }
    case IOp::DataDrop: {
      uint32_t d;
      if (!read_data(d)) return false;
      if (emitting()) {
        emit_op(IOp::DataDrop);
        word(d);
      }
      return true;
    }
    case IOp::MemoryCopy: {
      uint32_t dmem, smem;
      if (!read_memidx(dmem) || !read_memidx(smem)) return false;
      // memory64: the length is i64 only when both memories are 64-bit.
      ValType len_type = is64(dmem) && is64(smem) ? ValType::I64 : ValType::I32;
      Operand n, s, d;
      if (!pop(len_type, n) || !pop(addr_type(smem), s) || !pop(addr_type(dmem), d)) return false;
      uint32_t dsrc = narrowed(d), ssrc = narrowed(s), nsrc = narrowed(n);
      if (dmem != smem) {
        if (emitting()) {
          emit_op(IOp::MemoryCopyBetween);
          word(dmem);
          word(smem);
          src_word(dsrc);
          src_word(ssrc);
          src_word(nsrc);
        }
        return true;
      }
      use_memory(dmem);
      if (emitting()) {
        emit_op(IOp::MemoryCopy);
        src_word(dsrc);
        src_word(ssrc);
        src_word(nsrc);
      }
      restore_memory(dmem);
      return true;
    }
    case IOp::MemoryFill: {
      uint32_t mem;
      if (!read_memidx(mem)) return false;
      Operand n, v, d;
      if (!pop(addr_type(mem), n) || !pop(ValType::I32, v) || !pop(addr_type(mem), d)) return false;
      use_memory(mem);
      uint32_t dsrc = narrowed(d), nsrc = narrowed(n);
      if (emitting()) {
        emit_op(IOp::MemoryFill);
        src_word(dsrc);
        src_word(v.src);
        src_word(nsrc);
      }
      restore_memory(mem);
      return true;
    }
    default:
      return std::nullopt;
  }
}

// multi-memory: bit 6 of the alignment says a memory index follows it.
// memory64: the offset of a 64-bit memory's access is a u64.
// threads: an atomic access's alignment must be exactly its natural one.
bool FunctionCompiler::read_memarg(uint32_t natural_bytes, uint64_t& offset, uint32_t& mem, bool exact) {
  uint32_t align;
  mem = 0;
  if (!r_.u32(align)) return false;
  if (multi_memory_ && (align & 0x40)) {
    align &= ~0x40u;
    if (!r_.u32(mem)) return false;
  }
  if (mem < m_.all_memories.size() && is64(mem)) {
    if (!r_.u64(offset)) return false;
  } else {
    uint32_t off32;
    if (!r_.u32(off32)) return false;
    offset = off32;
  }
  if (mem >= m_.all_memories.size()) return fail_unknown("memory", mem);
  if (align >= 32 || (1u << align) > natural_bytes) return fail("alignment must not be larger than natural");
  if (exact && (1u << align) != natural_bytes) return fail("alignment must be equal to natural");
  return true;
}

// The memory immediate of memory.size/grow/fill/init/copy: a zero byte in
// wasm 2.0, a memory index with multi-memory.
bool FunctionCompiler::read_memidx(uint32_t& mem) {
  mem = 0;
  if (!multi_memory_) return read_zero_byte() && need_memory();
  if (!r_.u32(mem)) return false;
  if (mem >= m_.all_memories.size()) return fail_unknown("memory", mem);
  return true;
}

bool FunctionCompiler::read_data(uint32_t& d) {
  if (!r_.u32(d)) return false;
  if (!m_.data_count) return malformed("data count section required");
  if (d >= *m_.data_count) return fail_unknown("data segment", d);
  return true;
}

// The 32-bit address an access to memory `mem` reads, and the offset left
// for it: a 64-bit memory's address plus offset is checked and narrowed by
// Addr64 into the address's own stack slot (free once popped), and the
// ordinary 32-bit access follows with offset 0.
uint32_t FunctionCompiler::address(uint32_t mem, const Operand& addr, uint64_t& offset) {
  if (!is64(mem)) return addr.src;
  if (emitting()) {
    emit_op(IOp::Addr64);
    slot_word(addr.slot);
    src_word(addr.src);
    word(static_cast<uint32_t>(offset));
    word(static_cast<uint32_t>(offset >> 32));
  }
  offset = 0;
  return addr.slot;
}

// An i64 operand (memory64 address or length) narrowed in place, trapping
// as out of bounds when it is 2^32 or more: no memory is that large.
uint32_t FunctionCompiler::narrowed(const Operand& v) {
  if (v.type != ValType::I64) return v.src;
  if (emitting()) {
    emit_op(IOp::Narrow64);
    slot_word(v.slot);
    src_word(v.src);
  }
  return v.slot;
}

// An access to memory `mem` other than 0 is the memory-0 operation between
// two UseMemory ops: the loop keeps one memory cached, and memory 0's code
// pays nothing for multi-memory (docs/RATIONALE.md).
void FunctionCompiler::use_memory(uint32_t mem) {
  if (mem == 0 || !emitting()) return;
  emit_op(IOp::UseMemory);
  word(mem);
}

void FunctionCompiler::restore_memory(uint32_t mem) {
  if (mem == 0 || !emitting()) return;
  emit_op(IOp::UseMemory);
  word(0);
}

}  // namespace wzvm::vm::lower
