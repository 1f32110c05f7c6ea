// Values: the numeric rows (Unary, Binary), constants, locals, globals,
// select and drop. Constants mostly go to the constant area (Emitter) and
// local.get emits nothing (function_compiler.h).

#include "vm/lower/function_compiler.h"

namespace wzvm::vm::lower {

bool FunctionCompiler::numeric(const OpInfo& info) {
  if (info.kind == Kind::Unary) {
    Operand a;
    if (!pop(info.p1, a)) return false;
    if (info.op == IOp::I32WrapI64) {
      // An i32 in a slot is the slot's low 32 bits, whatever the high ones
      // hold (every reader of an i32 operand reads only those; values leave
      // for the host through slots_to_values, which clears the rest). So
      // wrapping emits nothing: the i32 is the i64's slot. Go computes
      // every address in i64 and wraps it before the access (11% of the
      // ops Go's strconv and compress/flate tests ran were this wrap).
      // A temporary's slot is the one the result would get; last_dst
      // stays, so a local.set can still redirect the i64's producer.
      if (a.is_virtual()) push_virtual(ValType::I32, a.src);
      else push(ValType::I32);
      if (emitting() && !a.is_virtual()) narrow_extended_add(e_, a, local_slots_);
      return true;
    }
    if (const uint32_t p = e_.last_op; info.op == IOp::I64ExtendI32U && emitting() && p != UINT32_MAX &&
                                       tables_.zext[e_.code[p]] && !a.is_virtual() && e_.last_dst == p + 1 &&
                                       e_.code[p + 1] == a.slot) {
      // The operand is the comparison just emitted, whose 0 or 1 is already
      // the i64 in its slot (OpTables::zext): nothing to emit. The result
      // is that temporary, and as with the wrap above, last_dst stays, so a
      // local.set can still redirect the comparison to the local.
      push(ValType::I64);
      return true;
    }
    if ((info.op == IOp::I32Eqz || info.op == IOp::I64Eqz) && emitting() &&
        cancel_double_eqz(e_, a, local_slots_)) {
      push(ValType::I32);  // the first eqz's slot: last_dst names it
      return true;
    }
    if (info.op == IOp::I32Eqz && emitting() && negate_last_compare(e_, a)) {
      push(ValType::I32);  // the compare's slot: last_dst still names it
      return true;
    }
    // The binary op just emitted whose temporary result this eqz reads: a
    // branch on the eqz may branch on the op's negation (fuse_cond_jump).
    const bool of_last = info.op == IOp::I32Eqz && emitting() && e_.last_op != UINT32_MAX &&
                         e_.last_op_is(static_cast<IOp>(e_.code[e_.last_op]), 4, a);
    uint32_t dst = push(info.result);
    if (emitting()) {
      const uint32_t prev = e_.prev_op, fall = e_.fall_op;
      const uint32_t op = emit_op(info.op);
      slot_word(dst);
      src_word(a.src);
      mark_dst(here() - 2);
      if (of_last) {
        e_.eqz_of_last = op;
        e_.prev_op_before_eqz = prev;
        e_.fall_op_before_eqz = fall;
      }
    }
    return true;
  }
  Operand a, b;
  if (!pop(info.p2, b) || !pop(info.p1, a)) return false;
  uint32_t dst = push(info.result);
  if (emitting() && !fuse_binary(e_, info, dst, a, b)) {
    emit_op(info.op);
    slot_word(dst);
    src_word(a.src);
    src_word(b.src);
    mark_dst(here() - 3);
  }
  return true;
}

// Constants go to the constant area when it has room (Emitter::const_ref),
// or when it holds them already: then the value is a virtual operand naming
// its slot, and nothing is emitted. (A full area used to send a constant it
// held to a const32 op too.)
bool FunctionCompiler::op_const(const OpInfo& info) {
  switch (info.op) {
    case IOp::I32Const: {
      int32_t v;
      if (!r_.s32(v)) return false;
      if (emitting() && (want_const_slot() || e_.has_const(static_cast<uint32_t>(v)))) {
        push_virtual(ValType::I32, e_.const_ref(static_cast<uint32_t>(v)));
        return true;
      }
      uint32_t dst = push(ValType::I32);
      if (emitting()) {
        emit_op(IOp::Const32);
        slot_word(dst);
        word(static_cast<uint32_t>(v));
        mark_dst(here() - 2);
      }
      return true;
    }
    case IOp::I64Const:
    case IOp::F64Const: {
      uint64_t bits;
      if (info.op == IOp::I64Const) {
        int64_t v;
        if (!r_.s64(v)) return false;
        bits = static_cast<uint64_t>(v);
      } else if (!r_.f64(bits)) {
        return false;
      }
      if (emitting() && (want_const_slot() || e_.has_const(bits))) {
        push_virtual(info.op == IOp::I64Const ? ValType::I64 : ValType::F64, e_.const_ref(bits));
        return true;
      }
      uint32_t dst = push(info.op == IOp::I64Const ? ValType::I64 : ValType::F64);
      if (emitting()) {
        emit_op(IOp::Const64);
        slot_word(dst);
        word(static_cast<uint32_t>(bits));
        word(static_cast<uint32_t>(bits >> 32));
        mark_dst(here() - 3);
      }
      return true;
    }
    case IOp::F32Const: {
      uint32_t bits;
      if (!r_.f32(bits)) return false;
      if (emitting() && (want_const_slot() || e_.has_const(bits))) {
        push_virtual(ValType::F32, e_.const_ref(bits));
        return true;
      }
      uint32_t dst = push(ValType::F32);
      if (emitting()) {
        emit_op(IOp::Const32);
        slot_word(dst);
        word(bits);
        mark_dst(here() - 2);
      }
      return true;
    }
    default:
      return fail("internal error: not a constant");
  }
}

// A function of its own, which special() calls directly (as it does
// op_const): the most frequent instruction (Go: one in five) no longer pays
// for lower_values' frame (callgrind, validating json.wasm: 60 host
// instructions a local.get, now ~30).
bool FunctionCompiler::op_local_get() {
  uint32_t x;
  if (!read_local(x)) return false;
  ++slot_reads_[local_slot_[x]];
  da_read(x);
  push_virtual(local_types_[x], local_slot_[x]);
  return true;
}

Lowered FunctionCompiler::lower_values(const OpInfo& info) {
  switch (info.op) {
    case IOp::LocalGet:
      return op_local_get();
    case IOp::LocalSet:
    case IOp::LocalTee: {
      uint32_t x;
      if (!read_local(x)) return false;
      Operand v;
      if (!pop(local_types_[x], v)) return false;
      uint32_t ls = local_slot_[x];
      if (emitting()) {
        materialize_local(ls);
        if (!v.is_virtual() && e_.last_dst != UINT32_MAX && e_.code[e_.last_dst] == v.slot) {
          e_.code[e_.last_dst] = ls;  // the producer writes straight into the local
          e_.last_dst = UINT32_MAX;
          merge_add_pair(e_);
        } else {
          emit_copy(ls, v.src, local_types_[x]);
        }
      }
      da_write(x);
      if (info.op == IOp::LocalTee) push_virtual(local_types_[x], ls);
      return true;
    }
    case IOp::GlobalGet: {
      uint32_t g;
      if (!r_.u32(g)) return false;
      if (g >= m_.all_globals.size()) return fail_unknown("global", g);
      ValType t = m_.all_globals[g].type;
      uint32_t dst = push(t);
      if (emitting()) {
        const uint32_t at = emit_op(t == ValType::V128 ? IOp::GlobalGetV : IOp::GlobalGet);
        if (t != ValType::V128) copy_ops_.push_back(at);  // may pair with a jump after it
        slot_word(dst);
        word(g);
        mark_dst(here() - 2);
      }
      return true;
    }
    case IOp::GlobalSet: {
      uint32_t g;
      if (!r_.u32(g)) return false;
      if (g >= m_.all_globals.size()) return fail_unknown("global", g);
      if (!m_.all_globals[g].mut) return fail("global is immutable");
      Operand v;
      if (!pop(m_.all_globals[g].type, v)) return false;
      if (emitting()) {
        emit_op(m_.all_globals[g].type == ValType::V128 ? IOp::GlobalSetV : IOp::GlobalSet);
        word(g);
        src_word(v.src);
        // the pair may pair again at the end (pair_go_frames)
        if (const uint32_t pair = pair_global_set(e_); pair != UINT32_MAX) copy_ops_.push_back(pair);
      }
      return true;
    }

    case IOp::I32Const:
    case IOp::I64Const:
    case IOp::F32Const:
    case IOp::F64Const:
      return op_const(info);

    case IOp::Drop: {
      Operand v;
      return pop(v);
    }
    case IOp::Select:
    case IOp::SelectT: {
      ValType want = kUnknown;
      if (info.op == IOp::SelectT) {
        uint32_t n;
        if (!r_.u32(n)) return false;
        if (n != 1) return fail("invalid result arity");
        uint8_t b;
        if (!r_.u8(b)) return false;
        if (!is_valtype_byte(b)) return malformed("malformed value type");
        want = static_cast<ValType>(b);
      }
      Operand cond, b, a;
      if (!pop(ValType::I32, cond)) return false;
      if (!pop(want, b) || !pop(want, a)) return false;
      ValType t = want;
      if (info.op == IOp::Select) {
        if ((a.type != kUnknown && !is_num(a.type) && a.type != ValType::V128) ||
            (b.type != kUnknown && !is_num(b.type) && b.type != ValType::V128))
          return fail("type mismatch");
        if (a.type != kUnknown && b.type != kUnknown && a.type != b.type) return fail("type mismatch");
        t = a.type == kUnknown ? b.type : a.type;
      }
      uint32_t dst = push(t);
      if (emitting()) {
        emit_op(t == ValType::V128 ? IOp::SelectV : IOp::SelectI);
        slot_word(dst);
        src_word(a.src);
        src_word(b.src);
        src_word(cond.src);
        mark_dst(here() - 4);
      }
      return true;
    }
    default:
      return std::nullopt;
  }
}

}  // namespace wzvm::vm::lower
