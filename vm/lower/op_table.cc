// The lowering tables, expanded from vm/opcodes.def and the fused-op
// families of vm/code.h (see op_table.h).

#include "vm/lower/op_table.h"

#include "vm/atomics.h"  // the access types of the AtomicRmw rows (their sizes)
#include "vm/simd.h"     // v128_t and the v128 load types of the Load rows (their sizes)

namespace wzvm::vm::lower {

// Load/Store rows name the C type of the access in their Extra column; the
// other kinds name a functor there, which lowering does not need.
#define WZVM_MEM_BYTES_Load(T) sizeof(T)
#define WZVM_MEM_BYTES_Store(T) sizeof(T)
#define WZVM_MEM_BYTES_Unary(T) 0
#define WZVM_MEM_BYTES_Binary(T) 0
#define WZVM_MEM_BYTES_Special(T) 0
#define WZVM_MEM_BYTES_AtomicLoad(T) sizeof(T)
#define WZVM_MEM_BYTES_AtomicStore(T) sizeof(T)
#define WZVM_MEM_BYTES_AtomicRmw(F) sizeof(F::type)
#define WZVM_MEM_BYTES_AtomicCmpxchg(T) sizeof(T)

OpTables::OpTables() {
  constexpr ValType I32 = ValType::I32, I64 = ValType::I64, F32 = ValType::F32, F64 = ValType::F64,
                    V128 = ValType::V128, ___ = kNone;
#define WZVM_OP(Name, prefix, code, text, K, R, P1, P2, Extra) \
  {                                                            \
    OpInfo& info = table_for(prefix)[code];                    \
    info.valid = true;                                         \
    info.op = IOp::Name;                                       \
    info.kind = Kind::K;                                       \
    info.result = R;                                           \
    info.p1 = P1;                                              \
    info.p2 = P2;                                              \
    info.mem_bytes = WZVM_MEM_BYTES_##K(Extra);                \
    info.name = text;                                          \
  }
#define WZVM_PROPOSAL_OP(F, Name, prefix, code, ...) \
  WZVM_OP(Name, prefix, code, __VA_ARGS__)           \
  table_for(prefix)[code].feature = static_cast<int8_t>(Feature::F);
#include "vm/opcodes.def"
#undef WZVM_PROPOSAL_OP
#undef WZVM_OP
  init_fused();
}

void OpTables::init_negated() {
  negated.fill(IOp::Count);
  const std::pair<IOp, IOp> pairs[] = {{IOp::I32Eq, IOp::I32Ne},   {IOp::I32LtS, IOp::I32GeS},
                                       {IOp::I32LtU, IOp::I32GeU}, {IOp::I32GtS, IOp::I32LeS},
                                       {IOp::I32GtU, IOp::I32LeU}, {IOp::I64Eq, IOp::I64Ne},
                                       {IOp::I64LtS, IOp::I64GeS}, {IOp::I64LtU, IOp::I64GeU},
                                       {IOp::I64GtS, IOp::I64LeS}, {IOp::I64GtU, IOp::I64LeU}};
  for (auto [a, b] : pairs) {
    negated[static_cast<size_t>(a)] = b;
    negated[static_cast<size_t>(b)] = a;
  }
}
void OpTables::init_fused() {
  init_negated();
  imm.fill(IOp::Count);
#define WZVM_IMM_MAP_(Name, R, P1) imm[static_cast<size_t>(IOp::Name)] = IOp::Imm_##Name;
#define WZVM_OP(Name, prefix, code, text, K, R, P1, P2, Extra) WZVM_IMM_ROW_(WZVM_IMM_MAP_, Name, K, R, P1)
#include "vm/opcodes.def"
#undef WZVM_OP
#undef WZVM_IMM_MAP_
  zext.fill(false);
  for (auto op = static_cast<size_t>(IOp::I32Eqz); op <= static_cast<size_t>(IOp::F64Ge); ++op) {
    zext[op] = true;
    if (imm[op] != IOp::Count) zext[static_cast<size_t>(imm[op])] = true;
  }
  f64_mem.fill({IOp::Count, IOp::Count});
  store_bin_load.fill(IOp::Count);
  bin_load_add.fill(IOp::Count);
#define WZVM_F64BIN_MAP_(Name, Extra)                                                    \
  f64_mem[static_cast<size_t>(IOp::Name)] = {IOp::BinLoad_##Name, IOp::StoreBin_##Name}; \
  store_bin_load[static_cast<size_t>(IOp::BinLoad_##Name)] = IOp::StoreBinLoad_##Name;   \
  bin_load_add[static_cast<size_t>(IOp::Name)] = IOp::BinLoadAdd_##Name;
#define WZVM_OP(Name, prefix, code, text, K, R, P1, P2, Extra) \
  WZVM_F64BIN_ROW_(WZVM_F64BIN_MAP_, Name, K, R, Extra)
#include "vm/opcodes.def"
#undef WZVM_OP
#undef WZVM_F64BIN_MAP_
  load_add.fill(IOp::Count);
  load_shl_add.fill(IOp::Count);
#define WZVM_LOADADD_MAP_(Name, R, Extra)                         \
  load_add[static_cast<size_t>(IOp::Name)] = IOp::LoadAdd_##Name; \
  load_shl_add[static_cast<size_t>(IOp::Name)] = IOp::LoadShlAdd_##Name;
#define WZVM_OP(Name, prefix, code, text, K, R, P1, P2, Extra) \
  WZVM_LOADADD_ROW_(WZVM_LOADADD_MAP_, Name, K, R, Extra)
#include "vm/opcodes.def"
#undef WZVM_OP
#undef WZVM_LOADADD_MAP_
  store_add.fill(IOp::Count);
#define WZVM_STOREADD_MAP_(Name, P2, Extra) store_add[static_cast<size_t>(IOp::Name)] = IOp::StoreAdd_##Name;
#define WZVM_OP(Name, prefix, code, text, K, R, P1, P2, Extra) \
  WZVM_STOREADD_ROW_(WZVM_STOREADD_MAP_, Name, K, P2, Extra)
#include "vm/opcodes.def"
#undef WZVM_OP
#undef WZVM_STOREADD_MAP_
  fused.fill({IOp::Count, IOp::Count});
  fused_test.fill({IOp::Count, false});
  back_edge.fill(IOp::Count);
  for (IOp op : {IOp::Switch, IOp::JumpBack, IOp::JumpIfBack, IOp::JumpUnlessBack})
    back_edge[static_cast<size_t>(op)] = op;
  back_edge[static_cast<size_t>(IOp::Jump)] = IOp::JumpBack;
  back_edge[static_cast<size_t>(IOp::JumpIf)] = IOp::JumpIfBack;
  back_edge[static_cast<size_t>(IOp::JumpUnless)] = IOp::JumpUnlessBack;
  counted.fill(IOp::Count);
  // A jump's counted form, and the counted form's back-edge form (patch()
  // runs after add_edge), as for the plain ones; back = Count: none.
  auto count_as = [&](IOp plain, IOp back, IOp c, IOp c_back) {
    counted[static_cast<size_t>(plain)] = c;
    back_edge[static_cast<size_t>(c)] = c_back;
    if (back == IOp::Count) return;
    counted[static_cast<size_t>(back)] = c_back;
    back_edge[static_cast<size_t>(c_back)] = c_back;
  };
  count_as(IOp::Jump, IOp::JumpBack, IOp::JumpCounted, IOp::JumpBackCounted);
  count_as(IOp::JumpIf, IOp::JumpIfBack, IOp::JumpIfExit, IOp::JumpIfBackExit);
  count_as(IOp::JumpUnless, IOp::JumpUnlessBack, IOp::JumpUnlessExit, IOp::JumpUnlessBackExit);
  count_as(IOp::Switch, IOp::Count, IOp::SwitchCounted, IOp::SwitchCounted);
#define WZVM_FUSED_MAP_(Name, R, P1, Extra)                                                                 \
  fused[static_cast<size_t>(IOp::Name)] = {IOp::JumpIf_##Name, IOp::JumpUnless_##Name};                     \
  fused_test[static_cast<size_t>(IOp::JumpIf_##Name)] = {IOp::Name, true};                                  \
  fused_test[static_cast<size_t>(IOp::JumpUnless_##Name)] = {IOp::Name, false};                             \
  back_edge[static_cast<size_t>(IOp::JumpIf_##Name)] = IOp::JumpIfBack_##Name;                              \
  back_edge[static_cast<size_t>(IOp::JumpIfBack_##Name)] = IOp::JumpIfBack_##Name;                          \
  count_as(IOp::JumpIf_##Name, IOp::JumpIfBack_##Name, IOp::JumpIfExit_##Name, IOp::JumpIfBackExit_##Name); \
  count_as(IOp::JumpUnless_##Name, IOp::Count, IOp::JumpUnlessExit_##Name, IOp::Count);
#define WZVM_OP(Name, prefix, code, text, K, R, P1, P2, Extra) \
  WZVM_FUSED_ROW_(WZVM_FUSED_MAP_, Name, K, R, P1, Extra)
#include "vm/opcodes.def"
#undef WZVM_OP
#undef WZVM_FUSED_MAP_
}

const OpTables& op_tables() {
  static const OpTables tables;
  return tables;
}

}  // namespace wzvm::vm::lower
