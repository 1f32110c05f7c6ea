// The threads proposal: atomic loads, stores, read-modify-writes and
// compare-exchanges (rows of their own kinds), atomic.fence, and
// memory.atomic.wait32/wait64/notify. An atomic access's alignment must be
// its natural one (read_memarg's `exact`).

#include "vm/lower/function_compiler.h"

namespace wzvm::vm::lower {

// [op dst addr offset], [op addr v offset], [op dst addr v offset],
// [op dst addr expected replacement offset].
bool FunctionCompiler::atomic_access(const OpInfo& info) {
  uint64_t offset;
  uint32_t mem;
  if (!read_memarg(info.mem_bytes, offset, mem, true)) return false;
  Operand addr, v, replacement;
  if (info.kind == Kind::AtomicCmpxchg && !pop(info.p2, replacement)) return false;
  if (info.kind != Kind::AtomicLoad && !pop(info.p2, v)) return false;
  if (!pop(addr_type(mem), addr)) return false;
  uint32_t dst = info.kind == Kind::AtomicStore ? 0 : push(info.result);
  use_memory(mem);
  uint32_t a = address(mem, addr, offset);
  if (emitting()) {
    emit_op(info.op);
    if (info.kind != Kind::AtomicStore) slot_word(dst);
    src_word(a);
    if (info.kind != Kind::AtomicLoad) src_word(v.src);
    if (info.kind == Kind::AtomicCmpxchg) src_word(replacement.src);
    word(static_cast<uint32_t>(offset));
  }
  restore_memory(mem);
  return true;
}

Lowered FunctionCompiler::lower_atomics(const OpInfo& info) {
  switch (info.op) {
    // threads: [atomic.fence]; [notify dst addr count offset];
    // [wait32/wait64 dst addr expected timeout offset].
    case IOp::AtomicFence:
      if (!read_zero_byte()) return false;
      if (emitting()) emit_op(IOp::AtomicFence);
      return true;
    case IOp::MemoryAtomicNotify:
    case IOp::MemoryAtomicWait32:
    case IOp::MemoryAtomicWait64: {
      uint64_t offset;
      uint32_t mem;
      if (!read_memarg(info.op == IOp::MemoryAtomicWait64 ? 8 : 4, offset, mem, true)) return false;
      Operand addr, value, timeout;
      if (info.op != IOp::MemoryAtomicNotify && !pop(ValType::I64, timeout)) return false;
      if (!pop(info.p2, value) || !pop(addr_type(mem), addr)) return false;
      uint32_t dst = push(ValType::I32);
      use_memory(mem);
      uint32_t a = address(mem, addr, offset);
      if (emitting()) {
        emit_op(info.op);
        slot_word(dst);
        src_word(a);
        src_word(value.src);
        if (info.op != IOp::MemoryAtomicNotify) src_word(timeout.src);
        word(static_cast<uint32_t>(offset));
      }
      restore_memory(mem);
      return true;
    }
    default:
      return std::nullopt;
  }
}

}  // namespace wzvm::vm::lower
