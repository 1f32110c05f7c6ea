// Calls: call, call_indirect and the tail calls. Arguments are
// materialised in order at the top of the caller's stack, where the callee's
// frame begins (its parameters are those slots) and where its results land.

#include "vm/lower/function_compiler.h"

namespace wzvm::vm::lower {

Lowered FunctionCompiler::lower_calls(const OpInfo& info) {
  switch (info.op) {
    case IOp::Call:
    case IOp::ReturnCall: {
      uint32_t f;
      if (!r_.u32(f)) return false;
      if (f >= m_.func_type_indices.size()) return fail_unknown("function", f);
      return op_call(m_.func_type_indices[f], false, f, info.op == IOp::ReturnCall);
    }
    case IOp::CallIndirect:
    case IOp::ReturnCallIndirect: {
      uint32_t type_index, table;
      if (!r_.u32(type_index)) return false;
      if (!r_.u32(table)) return false;
      if (table >= m_.all_tables.size()) return fail_unknown("table", table);
      if (type_index >= m_.types.size()) return fail("unknown type");
      if (m_.all_tables[table].elem != ValType::FuncRef) return fail("type mismatch");
      return op_call(type_index, true, table, info.op == IOp::ReturnCallIndirect);
    }
    default:
      return std::nullopt;
  }
}

bool FunctionCompiler::op_call(uint32_t type_index, bool indirect, uint32_t index, bool tail) {
  const FuncType& ft = m_.types[type_index];
  // A tail call returns the callee's results as the caller's own.
  if (tail && ft.results != ctrls_.front().results) return fail("type mismatch");
  Operand elem;
  if (indirect && !pop(ValType::I32, elem)) return false;
  std::vector<Operand>& args = branch_vals_;
  if (!pop_all(ft.params, args)) return false;
  const uint32_t base = args.empty() ? next_slot() : args.front().slot;
  bool hooked = !indirect && index < m_.call_hooks.size() && m_.call_hooks[index] != 0;
  // A direct call to a body the VM knows (vm/known_bodies.def), in plain
  // code: the op that runs it goes first, reading the argument where it is
  // now, and skips the argument's copy and the call when it ran the body;
  // when it did not, the call runs as written after it.
  uint32_t known = UINT32_MAX;
  if (const KnownBodyMatch body = indirect ? KnownBodyMatch{} : m_.known_match(index);
      body.kind != KnownBody::None && !runs_at_entry(body.kind) && !tail && !hooked && emitting() &&
      !counts_.counting() && !m_.all_memories.empty() && !m_.all_memories[0].limits.shared) {
    // [op arg dst skip], then the return addresses the body and its callee
    // push, where it has them (vm/internal_ops.def)
    IOp op = IOp::GoMul64;
    int constants = 0;
    switch (body.kind) {
      case KnownBody::GoMul64:
        break;
      case KnownBody::GoMulAddWWW:
        op = IOp::GoMulAddWWW, constants = 1;
        break;
      case KnownBody::GoAddMulVVW:
        op = IOp::GoAddMulVVW, constants = 2;
        break;
      case KnownBody::GoMulAddVWW:
        op = IOp::GoMulAddVWW, constants = 2;
        break;
      default:  // None, and the kinds that run at their entry
        break;
    }
    known = emit_op(op);
    src_word(args[0].src);
    slot_word(base);
    word(0);  // the words to skip, known once the call is emitted
    for (const uint64_t k : {body.constant, body.callee_constant}) {
      if (constants-- <= 0) break;
      word(static_cast<uint32_t>(k));
      word(static_cast<uint32_t>(k >> 32));
    }
  }
  for (Operand& a : args) materialize(a);
  uint32_t arg_slots = 0, result_slots = 0;
  for (ValType t : ft.params) arg_slots += slot_count(t);
  for (ValType t : ft.results) result_slots += slot_count(t);
  if (tail && emitting() && !hooked) {
    // [return_call func base nargs][ret base nres] or
    // [return_call_indirect table type elem base nargs][ret base nres]. The
    // callee's frame replaces this one; the `ret` after it serves callees
    // that cannot replace a frame (host functions, hooked allocators), which
    // the interpreter calls as usual with the `ret` as resume point.
    // Counted without fuel: the rest of the body is taken back first, so a
    // trap in the call takes nothing more back (no segment in its marks).
    counts_.emit_count_edge(false);
    const uint32_t segment = counts_.suspend_segment();
    if (indirect) {
      emit_op(IOp::ReturnCallIndirect);
      word(index);
      word(type_index);
      src_word(elem.src);
      slot_word(base);
    } else {
      emit_op(IOp::ReturnCall);
      word(index);
      slot_word(base);
    }
    word(arg_slots);
    emit_ret(base, result_slots);
    counts_.resume_segment(segment);
    max_slot_ = std::max(max_slot_, base + result_slots);
    set_unreachable();
    return true;
  }
  // A call_indirect of a grafting function has no call-site entry: its
  // callee's place in the call tree is the profiler's answer, not a cache.
  const bool graft = indirect && func_index_ < m_.graft_calls.size() && m_.graft_calls[func_index_];
  if (emitting()) {
    const bool counting = counts_.counting();
    if (indirect) {
      emit_op(graft ? IOp::CallTableGraft : counting ? IOp::CallTableCounted : IOp::CallTable);
      word(index);
      // the first of the equal types (Module::canonical_types): its store
      // id is the type's, and a function of this module has it as its
      // module_type
      word(m_.canonical_type(type_index));
      src_word(elem.src);
      slot_word(base);
    } else {
      // Calls to hooked functions (memory profiling) get their own op, so the
      // plain CallFunc never tests for a hook.
      // A function of this module (not an import) is wasm code of this
      // instance, lowered like this one: CallLocalCounted skips the tests
      // for a host function and for another instance, and counts the
      // callee's first segment itself (Instrumentation::begin_body).
      const bool local = index >= m_.num_imported_funcs;
      // The plain code's CallFunc is such a call too (no host test, no
      // instance compare); an import is a CallImport.
      if (counts_.edges() && local && !hooked) emit_op(IOp::CallLocalCounted);
      else if (counting) emit_op(hooked ? IOp::CallHookedCounted : IOp::CallFuncCounted);
      else emit_op(hooked ? IOp::CallHooked : local ? IOp::CallFunc : IOp::CallImport);
      word(index);
      slot_word(base);
      // CallFunc names its callee's code as well: the module's CompiledFunc,
      // which stays where it is (a lazy stub is lowered in place). The call
      // reads the frame size and image from it without first loading
      // inst->funcs, the FuncInst and its code pointer, three dependent loads
      // (docs/RATIONALE.md, "A direct call names its callee's code").
      // call_local.counted too, its call-site word after them.
      if (const IOp op = static_cast<IOp>(e_.code[e_.last_op]);
          op == IOp::CallFunc || op == IOp::CallLocalCounted)
        e_.pointer_words(&m_.code[index - m_.num_imported_funcs]);
      pair_copy_call(e_);
    }
    if (counting && !graft) counts_.call_site_word();
    if (known != UINT32_MAX) e_.code[known + 3] = e_.here() - known;
  }
  // Results are written from `base` on: make sure the frame covers them.
  if (emitting()) max_slot_ = std::max(max_slot_, base + result_slots);
  if (tail) {
    // A direct tail call to a hooked function: a hooked call, then a return.
    if (emitting()) {
      counts_.emit_count_edge(false);
      emit_ret(base, result_slots);
    }
    set_unreachable();
    return true;
  }
  for (ValType t : ft.results) push(t);
  return true;
}

}  // namespace wzvm::vm::lower
