// Tables and references: table.get/set/size/grow/fill/copy/init,
// elem.drop, ref.null, ref.is_null and ref.func. A reference is one slot
// (vm/code.h).

#include "vm/lower/function_compiler.h"

namespace wzvm::vm::lower {

Lowered FunctionCompiler::lower_tables(const OpInfo& info) {
  switch (info.op) {
    case IOp::TableGet: {
      uint32_t t;
      if (!read_table(t)) return false;
      Operand i;
      if (!pop(ValType::I32, i)) return false;
      uint32_t dst = push(m_.all_tables[t].elem);
      if (emitting()) {
        emit_op(IOp::TableGet);
        slot_word(dst);
        word(t);
        src_word(i.src);
      }
      return true;
    }
    case IOp::TableSet: {
      uint32_t t;
      if (!read_table(t)) return false;
      Operand v, i;
      if (!pop(m_.all_tables[t].elem, v) || !pop(ValType::I32, i)) return false;
      if (emitting()) {
        emit_op(IOp::TableSet);
        word(t);
        src_word(i.src);
        src_word(v.src);
      }
      return true;
    }
    case IOp::TableSize: {
      uint32_t t;
      if (!read_table(t)) return false;
      uint32_t dst = push(ValType::I32);
      if (emitting()) {
        emit_op(IOp::TableSize);
        slot_word(dst);
        word(t);
      }
      return true;
    }
    case IOp::TableGrow: {
      uint32_t t;
      if (!read_table(t)) return false;
      Operand n, init;
      if (!pop(ValType::I32, n) || !pop(m_.all_tables[t].elem, init)) return false;
      uint32_t dst = push(ValType::I32);
      if (emitting()) {
        emit_op(IOp::TableGrow);
        slot_word(dst);
        word(t);
        src_word(init.src);
        src_word(n.src);
      }
      return true;
    }
    case IOp::TableFill: {
      uint32_t t;
      if (!read_table(t)) return false;
      Operand n, v, i;
      if (!pop(ValType::I32, n) || !pop(m_.all_tables[t].elem, v) || !pop(ValType::I32, i)) return false;
      if (emitting()) {
        emit_op(IOp::TableFill);
        word(t);
        src_word(i.src);
        src_word(v.src);
        src_word(n.src);
      }
      return true;
    }
    case IOp::TableCopy: {
      uint32_t dt, st;
      if (!read_table(dt) || !read_table(st)) return false;
      if (m_.all_tables[dt].elem != m_.all_tables[st].elem) return fail("type mismatch");
      Operand n, s, d;
      if (!pop(ValType::I32, n) || !pop(ValType::I32, s) || !pop(ValType::I32, d)) return false;
      if (emitting()) {
        emit_op(IOp::TableCopy);
        word(dt);
        word(st);
        src_word(d.src);
        src_word(s.src);
        src_word(n.src);
      }
      return true;
    }
    case IOp::TableInit: {
      uint32_t e, t;
      if (!read_elem(e) || !read_table(t)) return false;
      if (m_.all_tables[t].elem != m_.elems[e].type) return fail("type mismatch");
      Operand n, s, d;
      if (!pop(ValType::I32, n) || !pop(ValType::I32, s) || !pop(ValType::I32, d)) return false;
      if (emitting()) {
        emit_op(IOp::TableInit);
        word(t);
        word(e);
        src_word(d.src);
        src_word(s.src);
        src_word(n.src);
      }
      return true;
    }
    case IOp::ElemDrop: {
      uint32_t e;
      if (!read_elem(e)) return false;
      if (emitting()) {
        emit_op(IOp::ElemDrop);
        word(e);
      }
      return true;
    }

    default:
      return std::nullopt;
  }
}

Lowered FunctionCompiler::lower_refs(const OpInfo& info) {
  switch (info.op) {
    case IOp::RefNull: {
      ValType t = ValType::FuncRef;
      if (!read_ref_type(t)) return false;
      uint32_t dst = push(t);
      if (emitting()) {
        emit_op(IOp::Const64);
        slot_word(dst);
        word(0);
        word(0);
        mark_dst(here() - 3);
      }
      return true;
    }
    case IOp::RefIsNull: {
      Operand v;
      if (!pop(v)) return false;
      if (v.type != kUnknown && !is_ref(v.type)) return fail("type mismatch");
      uint32_t dst = push(ValType::I32);
      if (emitting()) {
        emit_op(IOp::RefIsNull);
        slot_word(dst);
        src_word(v.src);
        mark_dst(here() - 2);
      }
      return true;
    }
    case IOp::RefFunc: {
      uint32_t f;
      if (!r_.u32(f)) return false;
      if (f >= m_.func_type_indices.size()) return fail("unknown function " + std::to_string(f));
      if (f >= m_.declared_refs.size() || !m_.declared_refs[f]) return fail("undeclared function reference");
      uint32_t dst = push(ValType::FuncRef);
      if (emitting()) {
        emit_op(IOp::RefFunc);
        slot_word(dst);
        word(f);
      }
      return true;
    }
    default:
      return std::nullopt;
  }
}

bool FunctionCompiler::read_table(uint32_t& t) {
  if (!r_.u32(t)) return false;
  if (t >= m_.all_tables.size()) return fail("unknown table " + std::to_string(t));
  return true;
}

bool FunctionCompiler::read_elem(uint32_t& e) {
  if (!r_.u32(e)) return false;
  if (e >= m_.elems.size()) return fail("unknown elem segment " + std::to_string(e));
  return true;
}

bool FunctionCompiler::read_ref_type(ValType& t) {
  t = ValType::FuncRef;
  uint8_t b;
  if (!r_.u8(b)) return false;
  if (b != 0x70 && b != 0x6F) return malformed("malformed reference type");
  t = static_cast<ValType>(b);
  return true;
}

}  // namespace wzvm::vm::lower
