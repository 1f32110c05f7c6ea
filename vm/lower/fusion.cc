// The peephole: see fusion.h.

#include "vm/lower/fusion.h"

namespace wzvm::vm::lower {
namespace {

// Whether the temporary may be a chain's Second's second operand
// (vm/chains.def): an integer op whose operands commute.
constexpr bool commutes(IOp op) {
  switch (op) {
    case IOp::I32Add:
    case IOp::I32Mul:
    case IOp::I32And:
    case IOp::I32Or:
    case IOp::I32Xor:
    case IOp::I64Add:
    case IOp::I64Mul:
    case IOp::I64And:
    case IOp::I64Or:
    case IOp::I64Xor:
      return true;
    default:
      return false;
  }
}

// The chained op (vm/chains.def) of the op just emitted followed by binary
// `second` with operands a, b, when one of them is its temporary result.
IOp chain_with_last(const Emitter& e, IOp second, const Operand& a, const Operand& b) {
  if (e.last_op == UINT32_MAX) return IOp::Count;
  const IOp first = static_cast<IOp>(e.code[e.last_op]);
#define WZVM_CHAIN(Name, First, Second, T, text)                                           \
  if (first == IOp::First && second == IOp::Second &&                                      \
      (e.last_op_is(first, 4, a) || (commutes(IOp::Second) && e.last_op_is(first, 4, b)))) \
    return IOp::Name;
#include "vm/chains.def"
#undef WZVM_CHAIN
  return IOp::Count;
}

// The paired op (vm/mem_pairs.def) for `first` followed by `second`, or IOp::Count.
IOp mem_pair(uint32_t first, uint32_t second) {
#define WZVM_MEM_PAIR(Name, First, Second, text)                                                  \
  if (first == static_cast<uint32_t>(IOp::First) && second == static_cast<uint32_t>(IOp::Second)) \
    return IOp::Name;
#include "vm/mem_pairs.def"
#undef WZVM_MEM_PAIR
  return IOp::Count;
}

// The switch pair (vm/switch_pairs.def) for a load `first`, or its counted
// twin (before a switch.counted), or IOp::Count.
IOp switch_pair(uint32_t first, bool counted) {
#define WZVM_SWITCH_PAIR(Name, First, Load, text) \
  if (first == static_cast<uint32_t>(IOp::First)) return counted ? IOp::Name##Counted : IOp::Name;
#include "vm/switch_pairs.def"
#undef WZVM_SWITCH_PAIR
  return IOp::Count;
}

// The step pair (vm/step_jumps.def) or load pair (vm/load_jumps.def) for
// `step` followed by `jump`, or IOp::Count.
IOp step_jump(uint32_t step, uint32_t jump) {
#define WZVM_STEP_JUMP(Name, Step, Jump, Test, T, text)                                              \
  if (step == static_cast<uint32_t>(IOp::Step) && jump == static_cast<uint32_t>(IOp::Jump##_##Test)) \
    return IOp::Name;
#include "vm/step_jumps.def"
#undef WZVM_STEP_JUMP
#define WZVM_LOAD_JUMP(Name, Load, Jump, Test, text)                                                 \
  if (step == static_cast<uint32_t>(IOp::Load) && jump == static_cast<uint32_t>(IOp::Jump##_##Test)) \
    return IOp::Name;
#include "vm/load_jumps.def"
#undef WZVM_LOAD_JUMP
  // Counted code's: the jump in its counted form (Jump##Exit_Test).
#define WZVM_STEP_JUMP(Name, Step, Jump, Test, T, text)                                                  \
  if (step == static_cast<uint32_t>(IOp::Step) && jump == static_cast<uint32_t>(IOp::Jump##Exit_##Test)) \
    return IOp::Name##Counted;
#include "vm/step_jumps.def"
#undef WZVM_STEP_JUMP
#define WZVM_LOAD_JUMP(Name, Load, Jump, Test, text)                                                     \
  if (step == static_cast<uint32_t>(IOp::Load) && jump == static_cast<uint32_t>(IOp::Jump##Exit_##Test)) \
    return IOp::Name##Counted;
#include "vm/load_jumps.def"
#undef WZVM_LOAD_JUMP
  return IOp::Count;
}

// [i32.load d a off] [i32.shr_u+and+add d2 x s m b] -> [i32.load+shr_u+and+add
// d a off] [i32.shr_u+and+add d2 x s m b], the decode just made right after
// the load (no label between): a dispatch pair, both ops whole, as
// pair_mem_access's. Lua's shared tail reads the next instruction and
// decodes its A field so (`i = *pc; ra = base + GETARG_A(i)`: `i32.load ->
// i32.shr_u+and+add` was 1.39% of objects.lua's dispatches, 4.26% of
// numeric.lua's). Only the load traps, at the op, its source offset and
// count mark. Both ops are final: nothing rewrites a load once an op
// follows it, nor a decode (a jump after it may join the pair:
// pair_lua_tail).
void pair_load_decode(Emitter& e) {
  const uint32_t p = e.prev_op, q = e.last_op;
  if (p == UINT32_MAX || q != p + 4 || e.here() != q + 6 ||
      e.code[p] != static_cast<uint32_t>(IOp::I32Load) ||
      e.code[q] != static_cast<uint32_t>(IOp::I32ShrUAndAdd))
    return;
  e.code[p] = static_cast<uint32_t>(IOp::I32LoadShrUAndAdd);
}

// The chain i32.rotl+xor or i32.shr_u+xor just made at last_op, [c d x k t],
// whose temporary `t` (the operand `other`) is the result of the op right
// before it: [i32.rotl t x1 k1] [i32.rotl+xor d x2 k2 t] -> [i32.rotl2+xor d
// x1 k1 x2 k2], and [i32.rotl2+xor t x1 k1 x2 k2] [c d x3 k3 t] ->
// [i32.rotl3+xor d x1 k1 x2 k2 x3 k3] (c i32.rotl+xor) or [i32.rotl2+shr_u+xor
// ...] (c i32.shr_u+xor): SHA-2's sigma functions, three ops each as chains.
// None traps; the merged op takes the last instruction's source offset and
// count mark, as a chain does (retarget_fused).
void merge_rotations(Emitter& e, const Operand& other) {
  auto& code = e.code;
  const uint32_t q = e.last_op, p = e.prev_op;
  if (q == UINT32_MAX || p == UINT32_MAX || other.is_virtual() || code[p + 1] != other.slot ||
      e.here() != q + 5 || code[q + 4] != other.slot)
    return;
  const IOp first = static_cast<IOp>(code[p]), chain = static_cast<IOp>(code[q]);
  IOp merged = IOp::Count;
  if (first == IOp::I32Rotl && q == p + 4 && chain == IOp::I32RotlXor) merged = IOp::I32Rotl2Xor;
  if (first == IOp::I32Rotl2Xor && q == p + 6 && chain == IOp::I32RotlXor) merged = IOp::I32Rotl3Xor;
  if (first == IOp::I32Rotl2Xor && q == p + 6 && chain == IOp::I32ShrUXor) merged = IOp::I32Rotl2ShrUXor;
  if (merged == IOp::Count) return;
  // Every word after each op word is a slot: the first op's, then the chain's 4.
  const size_t n = e.slot_words.size(), len = q - p - 1;
  if (n < len + 4) return;
  for (size_t i = 0; i < len; ++i)
    if (e.slot_words[n - len - 4 + i] != p + 1 + i) return;
  for (size_t i = 0; i < 4; ++i)
    if (e.slot_words[n - 4 + i] != q + 1 + i) return;
  const uint32_t d = code[q + 1], x = code[q + 2], k = code[q + 3];
  code[p] = static_cast<uint32_t>(merged);
  code[p + 1] = d;
  code[q] = x;  // the first op's words end at q: x and k follow them
  code[q + 1] = k;
  code.resize(q + 2);
  e.slot_words.resize(n - 2);  // q + 1 .. q + 4 became q, q + 1
  e.slot_words[n - 4] = q;
  e.slot_words[n - 3] = q + 1;
  if (!e.source_map.empty() && e.source_map.back().first == q) e.source_map.pop_back();
  if (e.counting && !e.count_marks.empty() && e.count_marks.back().pos == q) e.count_marks.pop_back();
  e.retarget_fused(p);
  e.last_op = p;
  e.prev_op = e.prev2_op = e.fall_op = UINT32_MAX;
  e.mark_dst(p + 1);
}

}  // namespace

// [i64.shl t x k] [i64.shr_s dst t k] -> [i64.extendN_s dst x] for k = 32,
// 48, 56: a shift up and back sign-extends the low 64 - k bits. Go converts
// to int32 this way (`i64.shl -> i64.shr_s` was 1.1-1.2% of strconv's and
// compress/flate's dispatches). The constant k comes from the constant area
// or as the shift's immediate, and for the second shift possibly as a
// const64 just emitted (the area full). Neither shift traps: the op keeps
// the first's source offset and count mark and counts both, as a chain does.
bool shifts_to_extend(Emitter& e, IOp op, uint32_t dst, const Operand& a, const Operand& b) {
  if (op != IOp::I64ShrS || e.last_op == UINT32_MAX) return false;
  auto& code = e.code;
  auto& sw = e.slot_words;
  auto extend_for = [](uint64_t k) {
    return k == 32   ? IOp::I64Extend32S
           : k == 48 ? IOp::I64Extend16S
           : k == 56 ? IOp::I64Extend8S
                     : IOp::Count;
  };
  auto area = [&](uint32_t src, uint64_t& k) {
    if (!(src & kConstTag) || (src & kExnTag)) return false;
    k = e.consts.at(src & ~kConstTag);
    return true;
  };
  // The shift up at q with t = a, its amount; false if it is not one.
  auto shift_up = [&](uint32_t q, uint64_t& k) {
    if (code[q] == static_cast<uint32_t>(IOp::I64Shl) && code.size() >= q + 4) return area(code[q + 3], k);
    if (code[q] == static_cast<uint32_t>(IOp::Imm_I64Shl) && code.size() >= q + 5) {
      k = uint64_t{code[q + 3]} | uint64_t{code[q + 4]} << 32;
      return true;
    }
    return false;
  };
  uint32_t q = e.last_op;
  uint64_t k1 = 0, k2 = 0;
  bool from_const64 = false;
  uint32_t before = e.prev_op;  // the op before the shift up, if any (below)
  if (area(b.src, k2)) {
    // [shl t x k] shr_s(t, k from the area)
  } else if (const uint32_t p = e.prev_op;
             e.last_op_is(IOp::Const64, 4, b) && p != UINT32_MAX && !sw.empty() && sw.back() == q + 1) {
    // [shl t x k] [const64 b k] shr_s(t, b)
    k2 = uint64_t{code[q + 2]} | uint64_t{code[q + 3]} << 32;
    q = p;
    from_const64 = true;
    before = e.prev2_op;
  } else {
    return false;
  }
  const IOp ext = extend_for(k2);
  if (ext == IOp::Count || a.is_virtual() || code[q + 1] != a.slot || !shift_up(q, k1) || k1 != k2)
    return false;
  // The shift ends where the const64 starts, or is the last op, its
  // result not redirected.
  const uint32_t len = code[q] == static_cast<uint32_t>(IOp::I64Shl) ? 4 : 5;
  if (from_const64 ? q + len != e.last_op : q + len != e.here() || e.last_dst != q + 1) return false;
  // The slot words left: t and x (and the area's k for a plain shl), then
  // the const64's destination.
  const size_t n = sw.size(), tail = (len == 4 ? 3 : 2) + (from_const64 ? 1 : 0);
  if (n < tail || sw[n - tail] != q + 1 || sw[n - tail + 1] != q + 2) return false;
  if (from_const64) {
    if (!e.source_map.empty() && e.source_map.back().first == e.last_op) e.source_map.pop_back();
    if (e.counting && !e.count_marks.empty() && e.count_marks.back().pos == e.last_op)
      e.count_marks.pop_back();
  }
  // x sign-extended from 32 bits by the op right before, into the slot the
  // extension writes (a stack temporary: the shifts' result takes its
  // slot): the extension changes nothing, and goes with its op. Go loads an
  // int32 so, `i64.load32_s` then the two shifts (`i64.load32_s ->
  // i64.extend32_s` 1.9% of regexp's dispatches). As with a wrap, nothing
  // is emitted: the shifts cannot trap, and the next op's count mark takes
  // their count. The load's result can still go into a local (last_dst).
  const uint32_t x = code[q + 2];
  auto sign_extends_32 = [](uint32_t w) {
    switch (static_cast<IOp>(w)) {
      case IOp::I64Load32S:
      case IOp::LoadAdd_I64Load32S:
      case IOp::LoadShlAdd_I64Load32S:
      case IOp::I64Extend32S:
      case IOp::I64ExtendI32S:
        return true;
      default:
        return false;
    }
  };
  if (ext == IOp::I64Extend32S && dst == x && before != UINT32_MAX && before < q && code[before + 1] == x &&
      sign_extends_32(code[before])) {
    code.resize(q);
    sw.resize(n - tail);
    if (!e.source_map.empty() && e.source_map.back().first == q) e.source_map.pop_back();
    if (e.counting && !e.count_marks.empty() && e.count_marks.back().pos == q) e.count_marks.pop_back();
    e.last_op = before;
    e.prev_op = e.prev2_op = e.fall_op = UINT32_MAX;
    e.mark_dst(before + 1);
    return true;
  }
  code[q] = static_cast<uint32_t>(ext);
  code[q + 1] = dst;  // q + 2 keeps x
  code.resize(q + 3);
  sw.resize(n - tail + 2);
  e.last_op = q;
  e.prev_op = UINT32_MAX;
  e.retarget_fused(q);
  e.mark_dst(q + 1);
  return true;
}

bool fuse_binary(Emitter& e, const OpInfo& info, uint32_t dst, const Operand& a, const Operand& b) {
  auto& code = e.code;
  if (shifts_to_extend(e, info.op, dst, a, b)) return true;
  if (info.op == IOp::I32Add &&
      (e.last_op_is(IOp::I32ShrUAnd, 5, a) || e.last_op_is(IOp::I32ShrUAnd, 5, b))) {
    // [i32.shr_u+and t x s m] [i32.add dst t c] (or c t) -> [i32.shr_u+and+add
    // dst x s m c]: a bit field added to a base (vm/internal_ops.def). None traps.
    const uint32_t p = e.last_op;
    const Operand& other = e.last_op_is(IOp::I32ShrUAnd, 5, a) ? b : a;
    code[p] = static_cast<uint32_t>(IOp::I32ShrUAndAdd);
    code[p + 1] = dst;
    e.src_word(other.src);
    e.retarget_fused(p);
    e.mark_dst(p + 1);
    pair_load_decode(e);
    return true;
  }
  if (IOp chain = chain_with_last(e, info.op, a, b); chain != IOp::Count) {
    // [First t x y] [Second dst t c] (or c t) -> [chain dst x y c]
    uint32_t p = e.last_op;
    const Operand& other = e.last_op_is(static_cast<IOp>(code[p]), 4, a) ? b : a;
    code[p] = static_cast<uint32_t>(chain);
    code[p + 1] = dst;
    e.src_word(other.src);
    e.retarget_fused(p);
    e.mark_dst(p + 1);  // last_op stays p: a load may take an i32.shl+add as its address
    merge_rotations(e, other);
    return true;
  }
  if (info.op == IOp::I32Shl && e.last_op_is(IOp::I32And, 4, a)) {
    // [i32.and t x m] [i32.shl dst t k] -> [i32.and+shl dst x m k]: an index
    // masked and scaled (vm/internal_ops.def), which an i32.add and then a
    // load may take on. Neither traps. The shifted value must be the and's.
    const uint32_t p = e.last_op;
    code[p] = static_cast<uint32_t>(IOp::I32AndShl);
    code[p + 1] = dst;
    e.src_word(b.src);
    e.retarget_fused(p);
    e.mark_dst(p + 1);
    return true;
  }
  if (info.op == IOp::I32Add && (e.last_op_is(IOp::I32AndShl, 5, a) || e.last_op_is(IOp::I32AndShl, 5, b))) {
    // [i32.and+shl t x m k] [i32.add dst t c] (or c t) -> [i32.and+shl+add dst x m k c]
    const uint32_t p = e.last_op;
    const Operand& other = e.last_op_is(IOp::I32AndShl, 5, a) ? b : a;
    code[p] = static_cast<uint32_t>(IOp::I32AndShlAdd);
    code[p + 1] = dst;
    e.src_word(other.src);
    e.retarget_fused(p);
    e.mark_dst(p + 1);  // last_op stays p: an i32.load may take it as its address (fuse_load)
    return true;
  }
  IOp bin_load = op_tables().f64_mem[static_cast<size_t>(info.op)].first;
  if (bin_load != IOp::Count && e.last_op_is(IOp::F64Load, 4, b)) {
    // [f64.load t addr off] [X dst a t] -> [bin_load(X) dst a addr off].
    // Only the load can trap: its source offset and count mark stay.
    uint32_t p = e.last_op;
    uint32_t addr = code[p + 2], off = code[p + 3];
    code.resize(p + 2);
    e.slot_words.pop_back();  // p + 2, re-added in order below
    code[p] = static_cast<uint32_t>(bin_load);
    code[p + 1] = dst;
    e.src_word(a.src);
    e.src_word(addr);
    e.word(off);
    e.mark_dst(p + 1);  // last_op stays p: an f64.store may follow (fuse_f64_store)
    return true;
  }
  if (IOp bla = op_tables().bin_load_add[static_cast<size_t>(info.op)];
      bla != IOp::Count && e.last_op_is(IOp::LoadAdd_F64Load, 5, b)) {
    // [load_add(F64Load) t p q off] [X dst a t] -> [bin_load_add(X) dst a p q
    // off]: `a * b[j + 1]` in gemm's unrolled loop, nbody's `x - p[-6]`. Only
    // the load can trap: the op keeps load_add's source offset and count
    // mark, which are the load's, as bin_load keeps the f64.load's.
    const uint32_t p = e.last_op;
    const uint32_t pa = code[p + 2], qa = code[p + 3], off = code[p + 4];
    const size_t n = e.slot_words.size();
    if (n >= 3 && e.slot_words[n - 2] == p + 2 && e.slot_words[n - 1] == p + 3) {
      code.resize(p + 2);
      e.slot_words.resize(n - 2);  // p + 2 and p + 3, re-added in order below
      code[p] = static_cast<uint32_t>(bla);
      code[p + 1] = dst;
      e.src_word(a.src);
      e.src_word(pa);
      e.src_word(qa);
      e.word(off);
      e.mark_dst(p + 1);
      // [i32.add d a b] right before it, whatever its operands: one dispatch
      // for both, each op whole, as i32.add+load_add(I32Load) (fuse_load).
      // gemm's unrolled loop steps its second address so (`i32.add ->
      // bin_load_add(F64Mul)`: 1 of its 7 dispatches per two elements). The
      // add is final; nothing rewrites a bin_load_add but its result word.
      if (const uint32_t s = e.prev_op; bla == IOp::BinLoadAdd_F64Mul && s != UINT32_MAX && s + 4 == p &&
                                        code[s] == static_cast<uint32_t>(IOp::I32Add))
        code[s] = static_cast<uint32_t>(IOp::I32AddBinLoadAdd_F64Mul);
      return true;
    }
  }
  if (IOp imm = op_tables().imm[static_cast<size_t>(info.op)]; imm != IOp::Count) {
    // [const32 t v] [X dst a t] -> [imm(X) dst a v]; [const64 t lo hi]
    // [X dst a t] -> [imm(X) dst a lo hi]. The constant cannot trap:
    // the op's source offset and count mark become X's.
    const IOp konst = info.p1 == ValType::I64 ? IOp::Const64 : IOp::Const32;
    const uint32_t len = konst == IOp::Const64 ? 4 : 3;
    if (e.last_op_is(konst, len, b) && !e.slot_words.empty() && e.slot_words.back() == e.last_op + 1) {
      const uint32_t p = e.last_op;
      const uint32_t lo = code[p + 2], hi = konst == IOp::Const64 ? code[p + 3] : 0;
      code.resize(p + 2);
      code[p] = static_cast<uint32_t>(imm);
      code[p + 1] = dst;
      e.src_word(a.src);
      e.word(lo);
      if (konst == IOp::Const64) e.word(hi);
      e.retarget_fused(p);
      e.mark_dst(p + 1);
      return true;
    }
  }
  return false;
}

bool negate_last_compare(Emitter& e, const Operand& a) {
  // [cmp t a b] [i32.eqz dst t] -> [negated cmp t a b]: `if (!(x < y))`
  // is Go's and clang's usual shape, and a lone compare fuses with the
  // branch that follows (fuse_cond_jump). Neither instruction traps.
  if (e.last_op == UINT32_MAX) return false;
  const IOp neg = op_tables().negated[e.code[e.last_op]];
  if (neg == IOp::Count || !e.last_op_is(static_cast<IOp>(e.code[e.last_op]), 4, a)) return false;
  e.code[e.last_op] = static_cast<uint32_t>(neg);  // last_dst still names the compare's slot
  return true;
}

// [eqz t x] [eqz t t] eqz -> [eqz t x]: Go tests a bool it keeps as an i64
// (`b = x == 0` made i64) with `i64.eqz; i32.eqz; if`, so `if b` on such a
// bool is three eqz in a row once the extend between emits nothing
// (OpTables::zext), and the last two cancel: both 0 or 1. (Which eqz, i32
// or i64, does not matter: the first writes its 0 or 1 zero-extended.)
// None of them traps: counted, the second's count mark goes and the first
// counts all three, as narrow_extended_add's does.
bool cancel_double_eqz(Emitter& e, const Operand& a, uint32_t local_slots) {
  auto& code = e.code;
  const uint32_t q = e.last_op, p = e.prev_op;
  auto is_eqz = [&](uint32_t at) {
    return code[at] == static_cast<uint32_t>(IOp::I32Eqz) || code[at] == static_cast<uint32_t>(IOp::I64Eqz);
  };
  if (q == UINT32_MAX || p == UINT32_MAX || q != p + 3 || !is_eqz(q) || !is_eqz(p) ||
      !e.last_op_is(static_cast<IOp>(code[q]), 3, a))
    return false;
  const uint32_t t = code[p + 1];
  if (t < local_slots || (t & (kConstTag | kExnTag)) || code[q + 1] != t || code[q + 2] != t) return false;
  auto& sw = e.slot_words;
  const size_t n = sw.size();
  if (n < 4 || sw[n - 4] != p + 1 || sw[n - 3] != p + 2 || sw[n - 2] != q + 1 || sw[n - 1] != q + 2)
    return false;
  code.resize(q);
  sw.resize(n - 2);
  if (!e.source_map.empty() && e.source_map.back().first == q) e.source_map.pop_back();
  if (e.counting) {
    auto& marks = e.count_marks;
    if (!marks.empty() && marks.back().pos == q) marks.pop_back();
    if (!marks.empty() && marks.back().pos == p && e.seg_pos != UINT32_MAX && marks.back().seg == e.seg_pos)
      marks.back().index = code[e.seg_pos];
  }
  e.last_op = p;
  e.last_dst = p + 1;
  e.prev_op = UINT32_MAX;
  return true;
}

// [i64.extend_i32_u t x] [i64.add d t c] i32.wrap_i64 -> [i32.add d x c]:
// the low half of zext(x) + c is x + c's low half. Go addresses its stack
// this way (`SP + 24` as i64, wrapped, then the access), so the sum can
// then fuse with a load (fuse_load). `a` is the wrap's operand. None of
// the three traps: counted, the add's count mark goes and the extend's
// counts through the wrap, so the op after says all three ran before it.
void narrow_extended_add(Emitter& e, const Operand& a, uint32_t local_slots) {
  auto& code = e.code;
  const uint32_t q = e.last_op, ext = e.prev_op;
  if (!e.last_op_is(IOp::I64Add, 4, a) || ext == UINT32_MAX || q != ext + 3 ||
      code[ext] != static_cast<uint32_t>(IOp::I64ExtendI32U))
    return;
  const uint32_t t = code[ext + 1];
  if (t < local_slots || (t & (kConstTag | kExnTag))) return;  // a stack temporary, read once by the add
  uint32_t other;
  if (code[q + 2] == t) other = code[q + 3];
  else if (code[q + 3] == t) other = code[q + 2];
  else return;
  auto& sw = e.slot_words;
  const size_t n = sw.size();
  if (n < 5 || sw[n - 5] != ext + 1 || sw[n - 4] != ext + 2 || sw[n - 3] != q + 1 || sw[n - 2] != q + 2 ||
      sw[n - 1] != q + 3)
    return;
  const uint32_t d = code[q + 1];
  code[ext] = static_cast<uint32_t>(IOp::I32Add);
  code[ext + 1] = d;  // ext + 2 keeps x
  code[ext + 3] = other;
  code.resize(ext + 4);
  sw.resize(n - 2);  // ext + 1, ext + 2, ext + 3
  sw[n - 3] = ext + 3;
  if (!e.source_map.empty() && e.source_map.back().first == q) e.source_map.pop_back();
  if (e.counting) {
    auto& marks = e.count_marks;
    if (!marks.empty() && marks.back().pos == q) marks.pop_back();
    if (!marks.empty() && marks.back().pos == ext && e.seg_pos != UINT32_MAX && marks.back().seg == e.seg_pos)
      marks.back().index = code[e.seg_pos];
  }
  e.last_op = ext;
  e.last_dst = ext + 1;
  e.prev_op = UINT32_MAX;
}

bool fuse_load(Emitter& e, IOp load, uint32_t dst, const Operand& addr, uint64_t offset, bool mem64) {
  // The op just emitted computed the address: the load takes it over,
  // [i32.add t x y] [load dst t offset] -> [load_add dst x y offset],
  // [i32.shl+add t x k c] [load dst t offset] -> [load_shl_add dst x k c offset],
  // [imm(i32.add) t x imm] [i32.load dst t offset] -> [load_add_imm dst x imm offset].
  // An i32 address that is an i64.add's slot was wrapped from it, and
  // the low half of a sum is the sum of the low halves:
  // [i64.add t x y] i32.wrap_i64 [load dst t offset] -> [load_add dst x y offset].
  IOp fused = IOp::Count;
  if (e.last_op_is(IOp::I32Add, 4, addr) || (!mem64 && e.last_op_is(IOp::I64Add, 4, addr)))
    fused = op_tables().load_add[static_cast<size_t>(load)];
  else if (e.last_op_is(IOp::I32ShlAdd, 5, addr)) fused = op_tables().load_shl_add[static_cast<size_t>(load)];
  // [imm(i32.add) t x imm] [i32.load dst t offset] -> [load_add_imm(I32Load)
  // dst x imm offset]: the same words, the immediate in place of y.
  else if (load == IOp::I32Load && e.last_op_is(IOp::Imm_I32Add, 4, addr)) fused = IOp::LoadAddImm_I32Load;
  // [i32.and+shl+add t x m k c] [i32.load dst t offset] -> [load_and_shl_add(I32Load)
  // dst x m k c offset]: Lua's dispatch table read (vm/internal_ops.def).
  else if (load == IOp::I32Load && e.last_op_is(IOp::I32AndShlAdd, 6, addr))
    fused = IOp::LoadAndShlAdd_I32Load;
  if (fused == IOp::Count) return false;
  uint32_t p = e.last_op;
  e.code[p] = static_cast<uint32_t>(fused);
  e.code[p + 1] = dst;
  e.word(static_cast<uint32_t>(offset));
  e.retarget_fused(p);
  e.mark_dst(p + 1);  // last_op stays p: a switch on the loaded value may pair with it (pair_switch_load)
  pair_add_access(e);
  // [i32.add d a b] right before it, whatever its operands: one dispatch for
  // both, in order, each op whole (a dispatch fusion as pair_mem_access's).
  // sha256's rounds and schedule add a term, then load the next (`i32.add ->
  // load_add(I32Load)` 10.3% of its dispatches after the sigma merges). The
  // add is final (an op follows it), and nothing rewrites an i32 load_add.
  // Only the load traps, at its own op word, with its source offset and
  // count mark.
  if (const uint32_t a = e.prev_op; fused == IOp::LoadAdd_I32Load && a != UINT32_MAX && a + 4 == p &&
                                    e.code[a] == static_cast<uint32_t>(IOp::I32Add))
    e.code[a] = static_cast<uint32_t>(IOp::I32AddLoadAdd_I32Load);
  return true;
}

bool fuse_store_add(Emitter& e, IOp store, const Operand& addr, const Operand& v, uint64_t offset) {
  // [i32.add t x y] [store t v offset] -> [store_add v x y offset], as
  // fuse_load's load_add: the add's temporary goes, its words stay where
  // they were (v in t's), and an i64.add's slot as the address was wrapped
  // from it. The value is never that temporary (a stack slot consumed once,
  // as the address); checked all the same, since the op drops its write.
  const IOp fused = op_tables().store_add[static_cast<size_t>(store)];
  if (fused == IOp::Count || !(e.last_op_is(IOp::I32Add, 4, addr) || e.last_op_is(IOp::I64Add, 4, addr)) ||
      v.src == addr.slot)
    return false;
  const uint32_t p = e.last_op;
  e.code[p] = static_cast<uint32_t>(fused);
  e.code[p + 1] = v.src;
  e.word(static_cast<uint32_t>(offset));
  e.retarget_fused(p);
  e.last_dst = UINT32_MAX;  // a store has no result for a local.set to take
  pair_add_access(e);
  return true;
}

// [i64.mul+add d x k c] [i64.load32_u dst d off] -> [i64.mul+add+i64.load32_u
// d x k c] [i64.load32_u dst d off] (vm/internal_ops.def): the load, just
// emitted, reads the address the chain right before it wrote (a local it
// was teed into: a chain is final once redirected). Both whole.
void pair_index_load(Emitter& e) {
  const uint32_t p = e.prev_op, q = e.last_op;
  if (p == UINT32_MAX || q != p + 5 || e.here() != q + 4 ||
      e.code[p] != static_cast<uint32_t>(IOp::I64MulAdd) ||
      e.code[q] != static_cast<uint32_t>(IOp::I64Load32U) || e.code[q + 2] != e.code[p + 1])
    return;
  e.code[p] = static_cast<uint32_t>(IOp::I64MulAddLoad32U);
}

// [load_add(I64Load) ...] [load_add(I64Load) ...] -> [load_add+load_add(I64Load)
// ...] [load_add(I64Load) ...], and the stores alike (vm/internal_ops.def):
// the access just fused at last_op and the one right before it, as
// pair_mem_access pairs plain accesses (both final: nothing rewrites a
// load_add or store_add of these rows once made; the pair's op word is
// the first's, the second keeps its own).
void pair_add_access(Emitter& e) {
  const uint32_t p = e.prev_op, q = e.last_op;
  if (p == UINT32_MAX || q != p + 5 || e.here() != q + 5 || e.code[p] != e.code[q]) return;
  if (e.code[q] == static_cast<uint32_t>(IOp::LoadAdd_I64Load))
    e.code[p] = static_cast<uint32_t>(IOp::LoadAddPair_I64Load);
  else if (e.code[q] == static_cast<uint32_t>(IOp::StoreAdd_I64Store))
    e.code[p] = static_cast<uint32_t>(IOp::StoreAddPair_I64Store);
}

// [const32 t c] [load d t off] -> [load d zero c+off], [const32 t c]
// [store t v off] -> [store zero v c+off]: the same op, its address slot a
// zero of the constant area, so no handler is added. A constant address
// comes as const32 only past the constant area (Lua's and CPython's big
// interpreter functions reading their globals: `const32 -> i32.load` was
// 0.6-0.9% of their ops). The effective address is the same 33-bit sum,
// folded only when it fits the offset word; the constant cannot trap, so
// the op keeps the access's source offset and count mark (retarget_fused),
// and stays an ordinary access for the fusions and pairs that follow.
bool fuse_const_address(Emitter& e, IOp access, uint32_t dst, const Operand& addr, const Operand* v,
                        uint64_t offset, bool in_loop) {
  if (!e.last_op_is(IOp::Const32, 3, addr) || e.slot_words.empty() || e.slot_words.back() != e.last_op + 1)
    return false;
  auto& code = e.code;
  const uint32_t p = e.last_op;
  const uint64_t ea = uint64_t{code[p + 2]} + offset;
  if (ea > UINT32_MAX) return false;
  if (!e.has_const(0) && !e.want_const_slot(in_loop)) return false;
  code[p] = static_cast<uint32_t>(access);
  if (v) {
    code[p + 1] = e.const_ref(0);  // p + 1 stays a slot word
    code[p + 2] = v->src;
    e.slot_words.push_back(p + 2);
  } else {
    code[p + 1] = dst;
    code[p + 2] = e.const_ref(0);
    e.slot_words.push_back(p + 2);
  }
  e.word(static_cast<uint32_t>(ea));
  e.retarget_fused(p);
  e.last_dst = UINT32_MAX;
  if (!v) e.mark_dst(p + 1);  // last_op stays p: the access may pair with the next (pair_mem_access)
  return true;
}

bool fuse_f64_store(Emitter& e, IOp store, const Operand& addr, const Operand& v, uint64_t offset) {
  if (store != IOp::F64Store || e.last_op == UINT32_MAX) return false;
  auto& code = e.code;
  const uint32_t p = e.last_op;
  const IOp last = static_cast<IOp>(code[p]);
  if (op_tables().f64_mem[code[p]].second != IOp::Count && e.last_op_is(last, 4, v)) {
    // [X t a b] [f64.store addr t off] -> [store_bin(X) addr a b off]
    code[p] = static_cast<uint32_t>(op_tables().f64_mem[code[p]].second);
    code[p + 1] = addr.src;
    e.word(static_cast<uint32_t>(offset));
    e.retarget_fused(p);
    e.last_op = UINT32_MAX;
    return true;
  }
  if (op_tables().store_bin_load[code[p]] != IOp::Count && e.last_op_is(last, 5, v)) {
    // [bin_load(X) t a laddr loff] [f64.store saddr t soff] ->
    // [store_bin_load(X) saddr a laddr loff soff]. Two instructions can
    // trap here: the op's source offset and count mark stay the load's,
    // and word 5, where the loop reports a failing store, gets the store's.
    code[p] = static_cast<uint32_t>(op_tables().store_bin_load[code[p]]);
    code[p + 1] = addr.src;
    e.word(static_cast<uint32_t>(offset));
    e.mark_inner_instruction(p + 5);
    e.last_op = UINT32_MAX;
    return true;
  }
  return false;
}

// [copy d1 s1] [copy d2 s2] -> [copy2 d1 s1 d2 s2], and a copy after a
// copy2 or copy3 (the last op, nothing after it) makes it copy3 or copy4:
// the copies still in order, each reading what the ones before wrote. Runs
// are where values move at once: a loop head's phis (CPython's eval loop
// makes seven copies per bytecode at its head: copy2, copy2, copy2, copy),
// a call's arguments, a block's exit. Counted on the full objects.lua and
// calls.py, a copy2 went on into another copy in 1.7% of Lua's dispatches
// and 4.9% of CPython's. No copy traps: the run keeps its first copy's op
// word and takes the last one's source offset and count mark
// (retarget_fused), as copy2 did. A fifth copy starts a run of its own.
bool merge_copy(Emitter& e, uint32_t dst, uint32_t src) {
  uint32_t p = UINT32_MAX, n = 0;
  if (e.last_op != UINT32_MAX && e.here() == e.last_op + 3 &&
      e.code[e.last_op] == static_cast<uint32_t>(IOp::Copy)) {
    p = e.last_op;
    n = 1;
  } else if (const uint32_t q = e.last_copies; q != UINT32_MAX) {
    n = copy_run_length(e.code[q]);
    if (n < 2 || n >= 4 || e.here() != q + 1 + 2 * n) return false;
    p = q;
  } else {
    return false;
  }
  e.code[p] = static_cast<uint32_t>(copy_run_op(n + 1));
  e.slot_word(dst);
  e.src_word(src);
  e.retarget_fused(p);
  e.last_op = UINT32_MAX;  // a run is not an op the other fusions take
  e.last_copies = p;
  return true;
}

bool fuse_cond_jump(Emitter& e, bool if_true, const Operand& cond, bool in_loop, bool to_loop,
                    std::pair<uint32_t, uint32_t>& out) {
  auto& code = e.code;
  if (cond.is_virtual() || e.last_dst == UINT32_MAX || code[e.last_dst] != cond.slot) return false;
  uint32_t p = e.last_dst - 1;
  IOp prev = static_cast<IOp>(code[p]);
  auto [jif, junless] = op_tables().fused[static_cast<size_t>(prev)];
  if (jif != IOp::Count) {  // [X dst a b] -> [Jump*_X a b offset]
    code[p] = static_cast<uint32_t>(if_true ? jif : junless);
    code[p + 1] = code[p + 2];
    code[p + 2] = code[p + 3];
    code[p + 3] = 0;
    e.drop_dst_word(p);
    e.last_dst = UINT32_MAX;
    out = {p, p + 3};
    return true;
  }
  if (prev == IOp::I32Eqz && e.eqz_of_last == p && e.prev_op != UINT32_MAX && e.prev_op + 4 == p &&
      e.here() == p + 3) {
    // [X t a b] [i32.eqz d t] -> [JumpUnless_X a b offset] (br_if; an `if`
    // takes JumpIf_X): the branch on !(a X b), X any op with fused jumps.
    // C tests a flag so, `if (!(x & m))`: Lua's tag tests (`ttisnil`,
    // `l_isfalse`) made `i32.and -> jump_unless` 1.8% of objects.lua's
    // dispatches. Neither traps; the eqz's source offset and count mark go
    // with its op word, and the op keeps X's, as the fusion above does.
    const uint32_t x = e.prev_op;
    auto [xif, xunless] = op_tables().fused[code[x]];
    auto& sw = e.slot_words;
    const size_t n = sw.size();
    // A br_if back to a loop would need jump_unless(X) backward, which has
    // no back form (only jump_if(X) has one): such a branch stays as it was.
    if (xif != IOp::Count && !(to_loop && if_true) && code[x + 1] == code[p + 2] && n >= 5 &&
        sw[n - 2] == p + 1 && sw[n - 1] == p + 2) {
      code.resize(p);
      sw.resize(n - 2);
      if (!e.source_map.empty() && e.source_map.back().first == p) e.source_map.pop_back();
      if (e.counting && !e.count_marks.empty() && e.count_marks.back().pos == p) e.count_marks.pop_back();
      code[x] = static_cast<uint32_t>(if_true ? xunless : xif);
      code[x + 1] = code[x + 2];
      code[x + 2] = code[x + 3];
      code[x + 3] = 0;
      e.drop_dst_word(x);
      // X is the last op again, as after a compare that fuses alone: a step
      // or a load before it may pair with the jump (pair_last_step_jump).
      e.last_op = x;
      e.prev_op = e.prev_op_before_eqz;
      e.fall_op = e.fall_op_before_eqz;
      e.last_dst = e.eqz_of_last = UINT32_MAX;
      out = {x, x + 3};
      return true;
    }
  }
  if (prev == IOp::I32Eqz) {  // [eqz dst a] -> [JumpUnless/JumpIf a offset]
    code[p] = static_cast<uint32_t>(if_true ? IOp::JumpUnless : IOp::JumpIf);
    code[p + 1] = code[p + 2];
    code[p + 2] = 0;
    e.drop_dst_word(p);
    e.last_dst = UINT32_MAX;
    out = {p, p + 2};
    return true;
  }
  if (prev == IOp::I64Eqz && e.here() == p + 3 && e.want_const_slot(in_loop)) {
    // [i64.eqz dst a] -> [JumpIf/JumpUnless_I64Eq a zero offset], zero
    // from the constant area: Go tests its i64 booleans and pointers so
    // (2.8% of the ops compress/flate's tests ran were the pair).
    code[p] = static_cast<uint32_t>(if_true ? IOp::JumpIf_I64Eq : IOp::JumpUnless_I64Eq);
    code[p + 1] = code[p + 2];
    e.drop_dst_word(p);
    code[p + 2] = e.const_ref(0);
    e.slot_words.push_back(p + 2);
    e.word(0);
    e.last_dst = UINT32_MAX;
    out = {p, p + 3};
    return true;
  }
  return false;
}

// [i32.load t a off] [i32.add d t c] i32.store(a, d, off) -> [rmw_add(I32)
// a c off], and with the sum teed or set into a local L (the store's value
// is L): [rmw_add.tee(I32) L a c off]. `c` a constant, from the constant
// area (an operand word naming it) or an immediate (imm(I32Add)), either
// operand of the add. C compilers emit this for `p->count += c`, and
// CPython for every Py_INCREF and Py_DECREF (`ob_refcnt` +1 and -1, the
// DECREF's new value teed for its zero test): in its eval loop 104 such
// sequences, and `i32.load -> i32.add -> i32.store` ran as ~2.5% of
// calls.py's dispatches (docs/RATIONALE.md, "Read-modify-write").
// Only the load can trap: the store writes the bytes the load just read
// (memories never shrink), so the op keeps the load's source offset and
// count mark, and a trap there leaves nothing written; a count mark after
// its op word says the add and the store ran once it is done (the next
// op's `before`). `t` must be a stack temporary (read once, by the add),
// `d` not the address (a tee into the address local would have moved
// the address; the op reads it once).
bool fuse_rmw_add(Emitter& e, IOp store, const Operand& addr, const Operand& v, uint64_t offset,
                  uint32_t local_slots, uint32_t& tee_at) {
  auto& code = e.code;
  const uint32_t p = e.prev_op, q = e.last_op;
  if (store != IOp::I32Store || p == UINT32_MAX || q != p + 4 || e.here() != q + 4 ||
      code[p] != static_cast<uint32_t>(IOp::I32Load))
    return false;
  const IOp add = static_cast<IOp>(code[q]);
  if (add != IOp::I32Add && add != IOp::Imm_I32Add) return false;
  const uint32_t t = code[p + 1], a = code[p + 2], d = code[q + 1];
  if (a != addr.src || code[p + 3] != offset || d == a) return false;
  if (t < local_slots || (t & (kConstTag | kExnTag))) return false;  // the load's result a temporary
  bool tee;
  if (!v.is_virtual() && v.slot == d && e.last_dst == q + 1) tee = false;
  else if (v.is_virtual() && v.src == d && d < local_slots) tee = true;
  else return false;
  uint32_t c, add_slots;
  if (add == IOp::Imm_I32Add) {
    if (code[q + 2] != t) return false;
    c = code[q + 3];
    add_slots = 2;
  } else {
    const uint32_t x = code[q + 2], y = code[q + 3];
    uint32_t k;
    if (x == t && (y & kConstTag)) k = y;
    else if (y == t && (x & kConstTag)) k = x;
    else return false;
    c = static_cast<uint32_t>(e.consts.at(k & ~kConstTag));
    add_slots = 3;
  }
  auto& sw = e.slot_words;
  const size_t n = sw.size(), ns = 2 + add_slots;
  if (n < ns) return false;
  for (size_t i = 0; i < add_slots; ++i)
    if (sw[n - add_slots + i] != q + 1 + i) return false;
  if (sw[n - ns] != p + 1 || sw[n - ns + 1] != p + 2) return false;
  // The load may be the second access of a pair (pair_mem_access): after
  // an i32.store the pair goes on into the op (i32.store+rmw_add(I32):
  // a field set, then a reference counted, 0.7% of calls.py's dispatches),
  // else the first access is one of its own again.
  if (e.mem_pair_at != UINT32_MAX && e.mem_pair_at + 4 == p) {
    code[e.mem_pair_at] = !tee && e.mem_pair_first == static_cast<uint32_t>(IOp::I32Store)
                              ? static_cast<uint32_t>(IOp::I32StoreRmwAdd_I32)
                              : e.mem_pair_first;
    e.mem_pair_at = UINT32_MAX;
  }
  code.resize(p);
  sw.resize(n - ns);
  // The add's source offset and count mark go; the load's stay.
  while (!e.source_map.empty() && e.source_map.back().first > p) e.source_map.pop_back();
  if (e.counting)
    while (!e.count_marks.empty() && e.count_marks.back().pos > p) e.count_marks.pop_back();
  code.push_back(static_cast<uint32_t>(tee ? IOp::RmwAddTee_I32 : IOp::RmwAdd_I32));
  if (tee) e.slot_word(d);
  e.src_word(a);
  e.word(c);
  e.word(static_cast<uint32_t>(offset));
  if (e.counting && !e.count_marks.empty() && e.count_marks.back().pos == p && e.seg_pos != UINT32_MAX &&
      e.count_marks.back().seg == e.seg_pos) {
    Emitter::CountMark done = e.count_marks.back();
    done.pos = e.here() - 1;
    done.index = code[e.seg_pos];
    e.count_marks.push_back(done);
  }
  e.last_op = e.prev_op = e.last_dst = UINT32_MAX;
  tee_at = tee ? p : UINT32_MAX;
  return true;
}

// [i32.load d1 a1 off1] [i32.load d2 a2 off2] -> [i32.load+i32.load d1 a1
// off1] [i32.load d2 a2 off2], and the other rows of vm/mem_pairs.def: one
// dispatch for both, in order, whatever the operands (the chase `p->a->b`,
// where a2 is d1, and two fields of one struct or of two alike), the first
// result written as before. Real programs ran such pairs as 5-6% of their
// ops (Lua, SQLite, CPython: their interpreters walking their structs).
// Both ops keep their source offsets and count marks, and the second its
// op word, where a trap in it stops. One later fusion rewrites an access of
// these rows, an i32.load that an add and a store of the same address
// follow (fuse_rmw_add), and it unpairs the pair first (mem_pair_at);
// f64.load, which bin_load takes over, is in none. In a run of three, the second op heads a pair of its own
// too, which the first one's pair skips over (it reads only its operands).
void pair_mem_access(Emitter& e) {
  const uint32_t p = e.prev_op, q = e.last_op;
  if (p == UINT32_MAX || q != p + 4 || e.here() != q + 4) return;
  const IOp pair = mem_pair(e.code[p], e.code[q]);
  if (pair == IOp::Count) return;
  // [i64.load+i64.store ...] [i64.store ...] right before this
  // i32.load8_u+i32.store8, whole (a label between or not: every op stays
  // whole, so a jump to the second pair runs it alone): Lua's setobj, a
  // TValue's value and then its tag byte (`i64.load+i64.store ->
  // i32.load8_u+i32.store8` was 1.0% of objects.lua's dispatches, 1.3% of
  // numeric.lua's). One op for the four.
  const uint32_t f = e.mem_pair_at;
  if (pair == IOp::I32Load8UI32Store8 && f != UINT32_MAX && f + 8 == p &&
      e.code[f] == static_cast<uint32_t>(IOp::I64LoadI64Store))
    e.code[f] = static_cast<uint32_t>(IOp::I64CopyI8Copy);
  e.mem_pair_at = p;
  e.mem_pair_first = e.code[p];
  e.code[p] = static_cast<uint32_t>(pair);
}

// [copy d s] [call_func f base] -> [copy+call_func d s] [call_func f base],
// and copy2, copy3, copy4 likewise: the copy, then call_func's own code without a
// dispatch between. Arguments that are locals or constants are copied into
// the callee's slots right before the call, and real programs ran such
// pairs as 1.5-3% of their ops (Lua, SQLite, CPython: their interpreters'
// helper calls). A dispatch fusion as pair_mem_access's: the call keeps its
// op word, source offset and count mark, and the call path is not
// instantiated a second time (vm/interp.cc: the fused op jumps into
// call_func's handler). Counted code's call_local.counted pairs alike,
// into the counted forms (vm/counted_ops.def); hooked calls and the other
// counted ones stay apart. Called before call_local.counted's call-site
// word. Both ops are final: nothing rewrites a copy once an op follows
// it, and a run is last_copies until the next label, which jump threading
// takes only when a jump follows it.
void pair_copy_call(Emitter& e) {
  const uint32_t q = e.last_op;
  if (q == UINT32_MAX || e.here() != q + kCallFuncWords) return;
  const bool counted = e.code[q] == static_cast<uint32_t>(IOp::CallLocalCounted);
  if (!counted && e.code[q] != static_cast<uint32_t>(IOp::CallFunc)) return;
  if (const uint32_t p = e.prev_op;
      p != UINT32_MAX && q == p + 3 && e.code[p] == static_cast<uint32_t>(IOp::Copy))
    e.code[p] = static_cast<uint32_t>(counted ? IOp::CopyCallLocalCounted : IOp::CopyCallFunc);
  else if (const uint32_t p2 = e.last_copies; p2 != UINT32_MAX) {
    constexpr IOp kPairs[] = {IOp::Copy2CallFunc, IOp::Copy3CallFunc, IOp::Copy4CallFunc};
    constexpr IOp kCounted[] = {IOp::Copy2CallLocalCounted, IOp::Copy3CallLocalCounted,
                                IOp::Copy4CallLocalCounted};
    const uint32_t n = copy_run_length(e.code[p2]);
    if (n >= 2 && q == p2 + 1 + 2 * n)
      e.code[p2] = static_cast<uint32_t>((counted ? kCounted : kPairs)[n - 2]);
  }
}

// [copy d s] [jump offset] -> [copy+jump d s] [jump offset], and jump_if,
// jump_unless and the back forms alike: one dispatch for the copy and the
// jump after it. Lua's bytecode loop ends each instruction so (`trap = 0`,
// a copy from the constant area, then `if (trap)`; a phi's move, then the
// jump back), and `copy -> jump_unless`, `copy -> jump` were 2.1% of the
// dispatches of Lua's objects.lua, `copy -> jump*` 1.2% of CPython's
// calls.py. Made when the body is done, so that every jump has its final
// form and target (jump threading, rotation and patching rewrite them), and
// a copy that jump threading dropped or moved is no longer a copy. Both
// ops stay whole, so a label between them is no matter: a jump to the jump
// runs it alone. Neither traps; each keeps its source offset and count mark.
// Counted code's jumps pair alike, into the counted forms (copy+jump.counted,
// copy+jump_if.exit, ...: vm/counted_ops.def), which count the jump's edge.
//
// A global.get [d g] before a conditional jump pairs alike (global.get+jump_if,
// global.get+jump_unless): after each call Go reloads its stack pointer
// from global 0 into its local and then tests whether the callee unwound
// (`global.get -> jump_if` was 1.07% of compress/flate's dispatches).
// `copies` also holds where an rmw_add.tee(I32) was made: before a
// jump_if or jump_unless (or a back form) it becomes rmw_add.tee+jump_if
// (+jump_unless), the same way. Py_DECREF tests the count it teed
// (`if (--op->ob_refcnt == 0) dealloc`): `rmw_add.tee(I32) -> jump_if` was
// 1.15% of calls.py's dispatches. The op's trap is the rmw's, at its own
// op word, before the jump. And where an i32.load or i32.load8_u of memory
// 0 was emitted: one still whole before a conditional jump becomes
// i32.load+jump_if, i32.load+jump_unless or i32.load8_u+jump_unless (C's
// `if (p->f)`, `if (!p)`; plain code only), or in counted code the forms
// with the counted jumps; its trap and source offset stay the load's.
// A load a later fusion took over (a pair, rmw_add, a decode) has
// another op word at its place, or code resized to its place and another
// op there, so `p` is always an op word when it still reads as a load.
void pair_copy_jumps(Emitter& e, const std::vector<uint32_t>& copies) {
  auto& code = e.code;
  const uint32_t end = e.here();
  for (const uint32_t p : copies) {
    if (p + 5 < end && code[p] == static_cast<uint32_t>(IOp::RmwAddTee_I32)) {
      const IOp j = static_cast<IOp>(code[p + 5]);
      if (j == IOp::JumpIf || j == IOp::JumpIfBack) code[p] = static_cast<uint32_t>(IOp::RmwAddTeeJumpIf_I32);
      else if (j == IOp::JumpUnless || j == IOp::JumpUnlessBack)
        code[p] = static_cast<uint32_t>(IOp::RmwAddTeeJumpUnless_I32);
      else if (j == IOp::JumpIfExit || j == IOp::JumpIfBackExit)
        code[p] = static_cast<uint32_t>(IOp::RmwAddTeeJumpIfExit_I32);
      else if (j == IOp::JumpUnlessExit || j == IOp::JumpUnlessBackExit)
        code[p] = static_cast<uint32_t>(IOp::RmwAddTeeJumpUnlessExit_I32);
      continue;
    }
    if (const bool word = code[p] == static_cast<uint32_t>(IOp::I32Load);
        (word || code[p] == static_cast<uint32_t>(IOp::I32Load8U)) && p + 4 < end) {
      // A load still whole (no pair or fusion took it: those change its op
      // word), so its four words end where the jump's begin. The plain
      // pairs are the plain loop's alone: not in fuel's code.
      const IOp j = static_cast<IOp>(code[p + 4]);
      if ((j == IOp::JumpIf || j == IOp::JumpIfBack) && !e.counting) {
        if (word) code[p] = static_cast<uint32_t>(IOp::I32LoadJumpIf);
      } else if ((j == IOp::JumpUnless || j == IOp::JumpUnlessBack) && !e.counting) {
        code[p] = static_cast<uint32_t>(word ? IOp::I32LoadJumpUnless : IOp::I32Load8UJumpUnless);
      } else if (j == IOp::JumpIfExit || j == IOp::JumpIfBackExit) {
        if (word) code[p] = static_cast<uint32_t>(IOp::I32LoadJumpIfExit);
      } else if (j == IOp::JumpUnlessExit || j == IOp::JumpUnlessBackExit) {
        code[p] = static_cast<uint32_t>(word ? IOp::I32LoadJumpUnlessExit : IOp::I32Load8UJumpUnlessExit);
      }
      continue;
    }
    if (p + 3 >= end) continue;
    const bool copy = code[p] == static_cast<uint32_t>(IOp::Copy);
    if (!copy && code[p] != static_cast<uint32_t>(IOp::GlobalGet)) continue;
    IOp pair;
    switch (static_cast<IOp>(code[p + 3])) {
      case IOp::Jump:
      case IOp::JumpBack:
        if (!copy) continue;
        pair = IOp::CopyJump;
        break;
      case IOp::JumpIf:
      case IOp::JumpIfBack:
        pair = copy ? IOp::CopyJumpIf : IOp::GlobalGetJumpIf;
        break;
      case IOp::JumpUnless:
      case IOp::JumpUnlessBack:
        pair = copy ? IOp::CopyJumpUnless : IOp::GlobalGetJumpUnless;
        break;
      case IOp::JumpCounted:
      case IOp::JumpBackCounted:
        if (!copy) continue;
        pair = IOp::CopyJumpCounted;
        break;
      case IOp::JumpIfExit:
      case IOp::JumpIfBackExit:
        pair = copy ? IOp::CopyJumpIfExit : IOp::GlobalGetJumpIfExit;
        break;
      case IOp::JumpUnlessExit:
      case IOp::JumpUnlessBackExit:
        pair = copy ? IOp::CopyJumpUnlessExit : IOp::GlobalGetJumpUnlessExit;
        break;
      default:
        continue;
    }
    code[p] = static_cast<uint32_t>(pair);
  }
}

// [global.get d g] [i32.sub+global.set d2 a b] [global.set g2 src] ->
// [global.get+i32.sub+global.set d g] and the two after it whole: a C
// function's prologue in one dispatch. A dispatch fusion as
// pair_copy_jumps's, over the same list (every global.get emitted), once
// every op is final: the pair after it (pair_global_set) is, and a jump to
// it still finds its own op word. Whatever the operands: the op runs the
// three in order.
void pair_stack_prologues(Emitter& e, const std::vector<uint32_t>& copies) {
  auto& code = e.code;
  const uint32_t end = e.here();
  for (const uint32_t p : copies)
    if (p + 3 < end && code[p] == static_cast<uint32_t>(IOp::GlobalGet) &&
        code[p + 3] == static_cast<uint32_t>(IOp::I32SubGlobalSet))
      code[p] = static_cast<uint32_t>(IOp::GlobalGetI32SubGlobalSet);
}

// [global.get d g] [switch ...] -> [global.get+switch d g] [switch ...], and
// [i32.add+global.set ...] [global.set ...] [i32.add+global.set ...]
// [global.set ...] [ret1 ...] -> [i32.add+global.set2+ret1 ...] and the
// rest whole: Go's function entry (the stack pointer into its local, then
// the switch over resume points on local 0) and its return (frame and
// return address popped, `return 0`), each one dispatch (vm/internal_ops.def).
// A final pass over `copies` (every global.get emitted, and every
// i32.add+global.set pair_global_set made, in order), as
// pair_stack_prologues: every op is final, each keeps its op word, so a
// jump to any of them runs the rest alone. Plain code only: counted code
// counts a return's edge before it, and its switch is another op.
void pair_go_frames(Emitter& e, const std::vector<uint32_t>& copies) {
  if (e.counting) return;
  auto& code = e.code;
  const uint32_t end = e.here();
  auto is = [&](uint32_t at, IOp op) { return at < end && code[at] == static_cast<uint32_t>(op); };
  for (const uint32_t p : copies) {
    if (is(p, IOp::GlobalGet) && is(p + 3, IOp::Switch))
      code[p] = static_cast<uint32_t>(IOp::GlobalGetSwitch);
    else if (is(p, IOp::I32AddGlobalSet) && is(p + 7, IOp::I32AddGlobalSet) && is(p + 14, IOp::Ret1))
      code[p] = static_cast<uint32_t>(IOp::I32AddGlobalSet2Ret1);
  }
}

// The stack pointer moves of pair_stack_prologues, pair_go_frames and
// pair_global_set whose global.set stores the add's or sub's own result
// (and whose sub moves the value its global.get read, of the same global;
// whose second add moves the first's result) become their .own ops
// (vm/internal_ops.def), which keep the value in a register. The last pass
// over `copies`: every op is final, each keeps its words. A subtrahend or
// second addend in the slot written before it is read would need the
// slot's new value: those stay as they are.
void own_global_moves(Emitter& e, const std::vector<uint32_t>& copies) {
  auto& code = e.code;
  const uint32_t end = e.here();
  auto is = [&](uint32_t at, IOp op) { return at < end && code[at] == static_cast<uint32_t>(op); };
  // [op d a b][global.set g src] at `at`: src is d
  auto sets_own = [&](uint32_t at) { return code[at + 6] == code[at + 1]; };
  for (const uint32_t p : copies) {
    if (is(p, IOp::I32AddGlobalSet) && sets_own(p)) {
      code[p] = static_cast<uint32_t>(IOp::I32AddGlobalSetOwn);
    } else if (is(p, IOp::I32SubGlobalSet) && sets_own(p)) {
      code[p] = static_cast<uint32_t>(IOp::I32SubGlobalSetOwn);
    } else if (is(p, IOp::GlobalGetI32SubGlobalSet)) {
      // [global.get d g][i32.sub+global.set x a b][global.set g2 src]
      const uint32_t d = code[p + 1], g = code[p + 2], q = p + 3;
      if (sets_own(q) && code[q + 2] == d && code[q + 3] != d && code[q + 5] == g)
        code[p] = static_cast<uint32_t>(IOp::GlobalGetI32SubGlobalSetOwn);
    } else if (is(p, IOp::I32AddGlobalSet2Ret1)) {
      // [i32.add+global.set d a b][..][i32.add+global.set d2 a2 b2][..][ret1]
      const uint32_t d = code[p + 1], q = p + 7;
      if (sets_own(p) && sets_own(q) && code[q + 2] == d && code[q + 3] != d)
        code[p] = static_cast<uint32_t>(IOp::I32AddGlobalSet2Ret1Own);
    }
  }
}

// [i32.load d a off] [switch d n ...] -> [i32.load+switch d a off] [switch
// d n ...], and the other rows of vm/switch_pairs.def: one dispatch for a
// load and the switch on its value, both ops whole, as pair_mem_access's
// pairs. Bytecode interpreters read their opcode so (the loaded value a
// temporary, or teed into a local as SQLite's `pOp->opcode`): after the
// rebased switches, a load feeding a switch was 0.6-1.2% of the dispatches
// of Lua, CPython and SQLite. Only the load can trap, before the switch
// runs: the op keeps its source offset and count mark. The switch must
// read the slot the load writes, so the op may switch on the value it has
// loaded. `q`: the switch just emitted; a counted one (switch.counted)
// pairs into the row's counted twin, which counts the switch's edge. Both
// ops are final: nothing rewrites a load once an op follows it, nor a switch.
void pair_switch_load(Emitter& e, uint32_t q) {
  const uint32_t p = e.prev_op;
  if (p == UINT32_MAX || e.last_op != q) return;
  const bool counted = e.code[q] == static_cast<uint32_t>(IOp::SwitchCounted);
  if (!counted && e.code[q] != static_cast<uint32_t>(IOp::Switch)) return;
  const IOp pair = switch_pair(e.code[p], counted);
  if (pair == IOp::Count || q != p + switch_pair_load_words(static_cast<IOp>(e.code[p])) ||
      e.code[q + 1] != e.code[p + 1])
    return;
  e.code[p] = static_cast<uint32_t>(pair);
  // [i32.shl+add d x k c] right before the pair, its result the load's
  // address: one dispatch for the three (i32.shl+add+load8_u+switch, whose
  // words are the chain's; the pair and the switch stay whole after it).
  // A bytecode loop's fetch `i = &code[pc]; switch (i->op)` with `i` kept
  // in a local (bench/suite interp: `i32.shl+add -> i32.load8_u+switch`
  // 10.2% of its dispatches). The chain cannot trap; a trap in the load is
  // at the pair's op word, its source offset and count mark.
  const uint32_t c = e.prev2_op;
  if (pair == IOp::I32Load8USwitch && c != UINT32_MAX && p == c + 5 &&
      e.code[c] == static_cast<uint32_t>(IOp::I32ShlAdd) && e.code[c + 1] == e.code[p + 2])
    e.code[c] = static_cast<uint32_t>(IOp::I32ShlAddLoad8USwitch);
}

// [i32.add d a b] [global.set g src] -> [i32.add+global.set d a b]
// [global.set g src], and i32.sub alike: one dispatch for both, in order,
// whatever the operands. Go's prologues and epilogues move its stack
// pointer so (`local.tee 1` of SP - frame, then `global.set 0` of the local:
// 3.3-4.2% of the dispatches of Go's strconv and compress/flate tests).
// A dispatch fusion as pair_mem_access's: neither op traps, both keep their
// source offsets and count marks, and the global.set its op word. Both are
// final: the add's result already went into its local (an add whose result
// is still a temporary would be the global.set's operand, and the
// global.set reads it from its slot all the same), and merge_add_pair,
// which takes an add once its result went into a local, ran before the
// global.set was emitted.
uint32_t pair_global_set(Emitter& e) {
  const uint32_t p = e.prev_op, q = e.last_op;
  if (p == UINT32_MAX || q != p + 4 || e.here() != q + 3 ||
      e.code[q] != static_cast<uint32_t>(IOp::GlobalSet))
    return UINT32_MAX;
  if (e.code[p] == static_cast<uint32_t>(IOp::I32Add))
    e.code[p] = static_cast<uint32_t>(IOp::I32AddGlobalSet);
  else if (e.code[p] == static_cast<uint32_t>(IOp::I32Sub))
    e.code[p] = static_cast<uint32_t>(IOp::I32SubGlobalSet);
  else return UINT32_MAX;
  return p;
}

// [i32.add t x c] [switch t n ...] with c = -k, 0 <= k <= kMaxSwitchRebase:
// the add goes, and the switch takes x itself with its table k entries
// longer at the front, those k going where the default goes. Exact for every
// x: x < k made t wrap past the table (the default), x in [k, n + k) is
// entry x - k, and from n + k on x clamps to the default as t did. Lua's
// and CPython's bytecode loops switch so (`switch (op)` over cases numbered
// from 1 or 2, clang subtracting first: `i32.add -> switch` was 1.7% of
// Lua's dispatches). Neither instruction traps, and the add's source
// offset and count mark go with it (a sample or an interrupt at the switch
// is before both). Counted code's switch counts an edge per entry of its
// table, the k new ones too, each from the switch to the default: the
// ranges, and so the counts, are the unrebased switch's. Not in fuel's
// code, which keeps its segments as they were.
uint32_t rebase_switch_index(Emitter& e, const Operand& index, Operand& x) {
  auto& code = e.code;
  auto& sw = e.slot_words;
  const uint32_t p = e.last_op;
  const size_t n = sw.size();
  uint32_t c, src, nslots;
  if (e.last_op_is(IOp::I32Add, 4, index)) {
    // The constant is either operand: an entry of the constant area.
    const bool b_const = (code[p + 3] & kConstTag) != 0;
    const uint32_t k = code[p + (b_const ? 3 : 2)];
    if (!(k & kConstTag)) return UINT32_MAX;
    c = static_cast<uint32_t>(e.consts.at(k & ~kConstTag));
    src = code[p + (b_const ? 2 : 3)];
    nslots = 3;
  } else if (e.last_op_is(IOp::Imm_I32Add, 4, index)) {
    c = code[p + 3];
    src = code[p + 2];
    nslots = 2;
  } else {
    return UINT32_MAX;
  }
  const uint32_t k = 0u - c;
  if (k > kMaxSwitchRebase || n < nslots) return UINT32_MAX;
  for (uint32_t i = 0; i < nslots; ++i)
    if (sw[n - nslots + i] != p + 1 + i) return UINT32_MAX;
  code.resize(p);
  sw.resize(n - nslots);
  if (!e.source_map.empty() && e.source_map.back().first == p) e.source_map.pop_back();
  if (!e.count_marks.empty() && e.count_marks.back().pos == p) e.count_marks.pop_back();
  // The op before the add is the last one again: a load of x may pair
  // with the switch (pair_switch_load; Lua's `(op = *pc) - 2`).
  e.last_op = e.prev_op;
  e.prev_op = e.last_dst = UINT32_MAX;
  x = Operand{ValType::I32, index.slot, src};
  return k;
}

// [i32.add d1 a1 b1] [i32.add d2 a2 b2] -> [i32.add2 d1 a1 b1 d2 a2 b2],
// in order, once the second one's result has gone into a local: then
// nothing can fuse with it any more (every fusion takes a result still on
// the stack), and the pair costs one dispatch instead of two. Compiled
// loops step their induction variables and pointers in such pairs
// (bench/suite: 18% of gemm's ops, 3.5-4.6% of nbody's, sha256's, interp's).
// Neither add traps, so a position captured between the two (a try
// region's bound) only decides whether a non-throwing op is inside it.
void merge_add_pair(Emitter& e) {
  const uint32_t p = e.prev_op, q = e.last_op;
  if (p == UINT32_MAX || q != p + 4 || e.here() != q + 4 || e.code[p] != static_cast<uint32_t>(IOp::I32Add) ||
      e.code[q] != static_cast<uint32_t>(IOp::I32Add))
    return;
  if (e.absorb_last_op(q, 3)) {
    e.code[p] = static_cast<uint32_t>(IOp::I32Add2);
    e.add2_at = p;  // a back jump right after may take it (merge_add2_into_back_jump)
  }
}

namespace {
// [i32.add2 d1 a1 b1 d2 a2 b2] [jump_if.back(I32Ne) x y offset] ->
// [i32.add2+jump_if.back(I32Ne) d1 a1 b1 d2 a2 b2 x y offset], and
// jump_if.back on a slot alike: a loop closed by stepping a pointer and its
// counter (gemm, nbody). The add2 was made by merge_add_pair and is right
// before the jump (no op, no label between: Emitter::add2_at). Nothing traps.
void merge_add2_into_back_jump(Emitter& e, uint32_t q, uint32_t target) {
  const uint32_t p = e.add2_at;
  if (p == UINT32_MAX || e.last_op != q || q != p + 7) return;
  IOp merged;
  size_t nslots;
  if (e.code[q] == static_cast<uint32_t>(IOp::JumpIfBack_I32Ne) && e.here() == q + 4) {
    merged = IOp::I32Add2JumpIfNeBack;
    nslots = 2;
  } else if (e.code[q] == static_cast<uint32_t>(IOp::JumpIfBack) && e.here() == q + 3) {
    merged = IOp::I32Add2JumpIfBack;
    nslots = 1;
  } else {
    return;
  }
  if (!e.absorb_last_op(q, nslots)) return;
  e.add2_at = UINT32_MAX;
  e.code[p] = static_cast<uint32_t>(merged);
  // The offset was relative to the jump's op word, now to the add2's.
  e.code[p + 7 + nslots] = static_cast<uint32_t>(static_cast<int32_t>(target) - static_cast<int32_t>(p));
}

}  // namespace

// [i32.add d a b] [jump_if.back(I32Ne) x y offset] -> [i32.add+jump_if.back(I32Ne)
// d a b x y offset]: the step and test that close most of clang's loops
// (`i += s; if (i != n) continue`; bench/suite lz: 10% of its ops were
// such pairs, sha256 2%).
void merge_add_into_back_jump(Emitter& e, uint32_t q, uint32_t target) {
  merge_add2_into_back_jump(e, q, target);
  const uint32_t p = e.prev_op;
  if (p == UINT32_MAX || e.last_op != q || q != p + 4 || e.here() != q + 4 ||
      e.code[p] != static_cast<uint32_t>(IOp::I32Add) ||
      e.code[q] != static_cast<uint32_t>(IOp::JumpIfBack_I32Ne))
    return;
  if (!e.absorb_last_op(q, 2)) return;
  e.code[p] = static_cast<uint32_t>(IOp::I32AddJumpIfNeBack);
  // The offset was relative to the jump's op word, now to the add's.
  e.code[p + 6] = static_cast<uint32_t>(static_cast<int32_t>(target) - static_cast<int32_t>(p));
}

// [i64.add d a b] [jump_if.back(I64LtS) x y offset] -> [i64.add+jump_if.back(I64LtS)
// d a b] [jump_if.back(I64LtS) x y offset], and the other rows of
// vm/step_jumps.def: one dispatch for a loop's step and its test, both ops
// whole, as pair_mem_access's pairs. Go 1.23 closes a counted loop with
// `i++` into a local and the test at the rotated back edge (`i64.add ->
// jump_if.back(I64LtS)` was 3.2% of strconv's tests' dispatches), or tests
// first and steps after (`i64.add -> jump_unless(I64GeS)`, flate 1.8%).
// `p` the step's op word and `q` the jump's, the jump with its target set
// or to be patched forward (a patch never changes a forward jump's op); the
// step falls through into the jump (the caller knows: Emitter::fall_op, or
// a dropped write that stood between). A label between may stay: the pair
// runs both ops, a jump to the label the test alone. Neither op traps; both
// keep their source offsets and count marks. Counted jumps are other ops
// (with an edge word), never paired; with fuel, a label between starts a
// segment with its own op. The pair is final: nothing rewrites an add once
// an op follows it, nor a jump but its offset.
void pair_step_jump(Emitter& e, uint32_t p, uint32_t q) {
  if (p == UINT32_MAX || q != p + 4 || q + 4 > e.here()) return;
  if (const IOp pair = step_jump(e.code[p], e.code[q]); pair != IOp::Count)
    e.code[p] = static_cast<uint32_t>(pair);
}

// The compare-and-branch just emitted at `q`, its op final (a back edge
// already patched): paired with the step just before it, a label between
// or not (both ops stay whole, and a jump to the label runs the test alone:
// flate's loops step at a resume point the head's test follows).
void pair_last_step_jump(Emitter& e, uint32_t q) {
  // Four words, or five for a counted jump's (its edge: vm/code.h,
  // JumpIfExit_X); step_jump takes only those ops.
  if (e.last_op != q || (e.here() != q + 4 && e.here() != q + 5)) return;
  pair_step_jump(e, e.fall_op, q);
}

// ---- CPython 3.11's bytecode dispatch (_PyEval_EvalFrameDefault).
// Its loop head switches on `(opcode & 255) - 1`, an i32.and+add chain whose
// -1 the rebase above cannot take (it takes a lone add), and each bytecode
// ends decoding the next: `word = *next_instr` (teed into a local), `opcode =
// word | use_tracing`, `oparg = word >> 8`, then the jump back to the head.
// Op pairs of calls.py (3,841 M dispatches): `i32.and+add -> switch` 1.59%,
// `i32.load16_u -> i32.or` 1.03%, `i32.or -> i32.shr_u` 0.91%.

// [i32.and+add d x m c] [switch d n ...] -> [i32.and+add+switch d x m c]
// [switch d n ...]: one dispatch, both ops whole, as pair_switch_load's
// pairs (the same conditions: no label between, the switch reads the slot
// the chain writes, a counted switch never paired). Neither traps.
// The i32.and+add right before `q` (just emitted, an op of kind `next`
// whose first operand is the chain's result) becomes `paired`.
namespace {
void pair_chain_before(Emitter& e, uint32_t q, IOp next, IOp paired) {
  const uint32_t p = e.prev_op;
  if (p == UINT32_MAX || e.last_op != q || q != p + 5 || e.code[q] != static_cast<uint32_t>(next) ||
      e.code[p] != static_cast<uint32_t>(IOp::I32AndAdd) || e.code[q + 1] != e.code[p + 1])
    return;
  e.code[p] = static_cast<uint32_t>(paired);
}
}  // namespace

void pair_switch_chain(Emitter& e, uint32_t q) { pair_chain_before(e, q, IOp::Switch, IOp::I32AndAddSwitch); }

// [copy3 ...] [i32.and+add+switch ...] [switch ...] -> [copy3+i32.and+add+switch
// ...] [i32.and+add+switch ...] [switch ...]: the loop head's last copies
// (copy4 -> copy3 -> i32.and+add+switch: 1.6% of calls.py's dispatches
// each) and its switch in one dispatch, every op whole; with the copy4
// before them, copy4+copy3+i32.and+add+switch, the whole head (plain code
// only: vm/internal_ops.def). Counted code's head has the probe between the
// chain and the switch, paired with the chain (i32.and+add+probe.counted):
// the copies pair with that alike.
// Made when the body is done (a run's length is final once jump threading
// has shortened it). `copies`: where copies were emitted (a run is at its
// first copy's word, the copy3 after a copy4 a run of its own), in order.
void pair_copy_switch(Emitter& e, const std::vector<uint32_t>& copies) {
  auto& code = e.code;
  const uint32_t end = e.here();
  auto is = [&](uint32_t at, IOp op) { return at < end && code[at] == static_cast<uint32_t>(op); };
  for (const uint32_t p : copies) {
    if (is(p, IOp::Copy3) && is(p + 7, IOp::I32AndAddSwitch)) {
      code[p] = static_cast<uint32_t>(IOp::Copy3AndAddSwitch);
    } else if (is(p, IOp::Copy3) && is(p + 7, IOp::I32AndAddProbeCounted)) {
      code[p] = static_cast<uint32_t>(IOp::Copy3AndAddProbeCounted);
    } else if (!e.counting && is(p, IOp::Copy4) && is(p + 16, IOp::I32AndAddSwitch) &&
               (is(p + 9, IOp::Copy3) || is(p + 9, IOp::Copy3AndAddSwitch))) {
      // plain code's (fuel's has no handler for it); the copy3, a run of its own, pairs too
      code[p] = static_cast<uint32_t>(IOp::Copy7AndAddSwitch);
    } else if (is(p, IOp::Copy4) && is(p + 16, IOp::I32AndAddProbeCounted) &&
               (is(p + 9, IOp::Copy3) || is(p + 9, IOp::Copy3AndAddProbeCounted))) {
      code[p] = static_cast<uint32_t>(IOp::Copy7AndAddProbeCounted);
    }
  }
}

// [i32.and+add d x m c] [probe.counted d ...] -> [i32.and+add+probe.counted
// d x m c] [probe.counted d ...]: counted CPython's chain and the probe on
// its result, right after it (`q`, just emitted), as pair_switch_chain
// pairs the chain with the switch in plain code.
void pair_probe_chain(Emitter& e, uint32_t q) {
  pair_chain_before(e, q, IOp::ProbeCounted, IOp::I32AndAddProbeCounted);
}

// [i32.load16_u d a off] [i32.or d2 x y] [i32.shr_u d3 z k] ->
// [i32.load16_u+or+shr_u d a off] [i32.or ...] [i32.shr_u ...]: the three in
// order in one dispatch, whatever their operands (the or and the shift read
// the loaded word from its local), each op whole, so a label between them
// is no matter: a jump to the or runs the or and the shift alone. With a
// jump (forward or back) right after them, the op takes it too
// (i32.load16_u+or+shr_u+jump); the shift-first order (load16_u, shr_u,
// load8_u, or) likewise. Made when the body is done: every jump has its
// final form and target, an op rewritten later (a chain takes a shift
// whose result is still a temporary) is no longer the row's, and a load
// kept at its place is never moved. Only the loads trap, each at its own op
// word (a trap in the second leaves ip there), which keeps its source
// offset and count mark. Counted code's jumps are their counted forms and
// never taken; its count ops stand between ops only at labels.
void pair_decode(Emitter& e, const std::vector<uint32_t>& loads) {
  auto& code = e.code;
  const uint32_t end = e.here();
  auto is = [&](uint32_t at, IOp op) { return at < end && code[at] == static_cast<uint32_t>(op); };
  // 1: a plain jump, 2: a counted one ([jump.counted offset edge]), 0: neither
  auto jump_at = [&](uint32_t at) {
    if (at + 2 <= end && (is(at, IOp::Jump) || is(at, IOp::JumpBack))) return 1;
    return at + 3 <= end && (is(at, IOp::JumpCounted) || is(at, IOp::JumpBackCounted)) ? 2 : 0;
  };
  auto pick = [](int jump, IOp alone, IOp plain, IOp counted) {
    return jump == 0 ? alone : jump == 1 ? plain : counted;
  };
  for (const uint32_t p : loads) {
    if (!is(p, IOp::I32Load16U)) continue;
    if (is(p + 4, IOp::I32Or) && is(p + 8, IOp::I32ShrU))
      code[p] = static_cast<uint32_t>(pick(jump_at(p + 12), IOp::I32Load16UOrShrU, IOp::I32Load16UOrShrUJump,
                                           IOp::I32Load16UOrShrUJumpCounted));
    else if (is(p + 4, IOp::I32ShrU) && is(p + 8, IOp::I32Load8U) && is(p + 12, IOp::I32Or))
      code[p] = static_cast<uint32_t>(pick(jump_at(p + 16), IOp::I32Load16UShrULoad8UOr,
                                           IOp::I32Load16UShrULoad8UOrJump,
                                           IOp::I32Load16UShrULoad8UOrJumpCounted));
  }
}

// [i32.add d a b] [jump offset] -> [i32.add+jump d a b] [jump offset], and
// [i32.load+shr_u+and+add ...] [i32.shr_u+and+add ...] [jump offset] ->
// [i32.load+shr_u+and+add+jump ...] (the back forms alike): one dispatch
// for the add and the jump, one for the load, the decode and the jump.
// Lua 5.4's luaV_execute ends an instruction with `pc++` (the add, into its
// local) and a jump to the shared tail, which reads and decodes the next
// instruction and jumps back to the switch: `i32.add -> jump`, `jump ->
// i32.load` and `i32.shr_u+and+add -> jump.back` were 1.1-1.2% of
// objects.lua's dispatches each, 3.5-3.9% of numeric.lua's. `ops` holds
// where an op was the last one emitted right before an unconditional jump
// (FunctionCompiler::note_op_before_jump); made when the body is done, as
// pair_copy_jumps's pairs, when every jump has its final form. Only the
// load traps, at the op word, before the rest runs; each op keeps its
// source offset and count mark. Counted code's jumps (jump.counted, its
// back form) pair as well, into the counted forms of the three
// (vm/counted_ops.def), which count the jump's edge; fuel's are these
// and pair. A copy2 noted right
// before such an add (its handler's last moves) becomes
// copy2+i32.add+jump: the three in one dispatch.
void pair_lua_tail(Emitter& e, const std::vector<uint32_t>& ops) {
  auto& code = e.code;
  const uint32_t end = e.here();
  // 1: a plain jump, 2: a counted one ([jump.counted offset edge]), 0: neither
  auto jump_at = [&](uint32_t at) {
    if (at >= end) return 0;
    const IOp op = static_cast<IOp>(code[at]);
    if (op == IOp::Jump || op == IOp::JumpBack) return 1;
    return op == IOp::JumpCounted || op == IOp::JumpBackCounted ? 2 : 0;
  };
  auto set = [&](uint32_t p, int jump, IOp plain, IOp counted) {
    if (jump) code[p] = static_cast<uint32_t>(jump == 1 ? plain : counted);
  };
  for (const uint32_t p : ops) {
    const IOp op = static_cast<IOp>(code[p]);
    if (op == IOp::I32Add) {
      set(p, jump_at(p + 4), IOp::I32AddJump, IOp::I32AddJumpCounted);
    } else if (op == IOp::Copy2) {  // (noted after its add: paired by now)
      const IOp next = static_cast<IOp>(code[p + 5]);
      set(p,
          next == IOp::I32AddJump          ? 1
          : next == IOp::I32AddJumpCounted ? 2
                                           : 0,
          IOp::Copy2I32AddJump, IOp::Copy2I32AddJumpCounted);
    } else if (op == IOp::I32LoadShrUAndAdd && code[p + 4] == static_cast<uint32_t>(IOp::I32ShrUAndAdd)) {
      set(p, jump_at(p + 10), IOp::I32LoadShrUAndAddJump, IOp::I32LoadShrUAndAddJumpCounted);
    }
  }
  // The pairs whose jump lands on the tail, and the tail's on the switch
  // (vm/internal_ops.def, vm/counted_ops.def): the tails first, then what
  // jumps to them. A jump's offset is relative to its op word, `j`. Not
  // fuel's code: the plain forms' handlers are the plain loop's alone.
  auto lands_on = [&](uint32_t j, IOp target) {
    const uint32_t t = j + code[j + 1];
    return t < end && code[t] == static_cast<uint32_t>(target);
  };
  auto is = [&](uint32_t p, IOp op) { return code[p] == static_cast<uint32_t>(op); };
  auto make = [&](uint32_t p, IOp op) { code[p] = static_cast<uint32_t>(op); };
  // [i32.load d a off][i32.shr_u+and+add d2 x ...][jump]: the plain tail
  // ops keep the instruction loaded in a register for the decode and the
  // switch's load, so both must read d (x, and the switch load's x), and
  // the decode must write another slot (vm/interp.cc, WZVM_LUA_TAIL), as
  // Lua's `i = *pc; ra = RA(i); switch (GET_OPCODE(i))` does.
  auto reads_loaded = [&](uint32_t p) {
    const uint32_t d = code[p + 1], t = p + 10 + code[p + 11];
    return code[p + 6] == d && code[p + 5] != d && code[t + 2] == d;
  };
  for (const uint32_t p : ops) {
    if (!e.counting && is(p, IOp::I32LoadShrUAndAddJump) &&
        lands_on(p + 10, IOp::LoadAndShlAddI32LoadSwitch) && reads_loaded(p))
      make(p, IOp::I32LoadShrUAndAddJumpSwitch);
    else if (is(p, IOp::I32LoadShrUAndAddJumpCounted) &&
             lands_on(p + 10, IOp::LoadAndShlAddI32LoadSwitchCounted))
      make(p, IOp::I32LoadShrUAndAddJumpSwitchCounted);
  }
  for (const uint32_t p : ops) {
    if (is(p, IOp::I32AddJump) && lands_on(p + 4, IOp::I32LoadShrUAndAddJumpSwitch))
      make(p, IOp::I32AddJumpTail);
    else if (is(p, IOp::Copy2I32AddJump) && lands_on(p + 9, IOp::I32LoadShrUAndAddJumpSwitch))
      make(p, IOp::Copy2I32AddJumpTail);
    else if (is(p, IOp::I32AddJumpCounted) && lands_on(p + 4, IOp::I32LoadShrUAndAddJumpSwitchCounted))
      make(p, IOp::I32AddJumpTailCounted);
    else if (is(p, IOp::Copy2I32AddJumpCounted) && lands_on(p + 9, IOp::I32LoadShrUAndAddJumpSwitchCounted))
      make(p, IOp::Copy2I32AddJumpTailCounted);
  }
}

}  // namespace wzvm::vm::lower
