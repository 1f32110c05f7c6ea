// What lowering knows about each wasm instruction, expanded once from
// vm/opcodes.def: its internal op, how it is lowered (Kind), its operand and
// result types, and the maps from an op to its fused and counted forms that
// the peephole (fusion.cc) and instrumentation (instrument.cc) rewrite to.

#pragma once

#include <array>
#include <cstdint>
#include <utility>

#include "vm/code.h"
#include "vm/module.h"

namespace wzvm::vm::lower {

// Simple kinds are lowered by their row alone (values.cc, memory.cc,
// atomic_ops.cc); Special rows by code of their own (FunctionCompiler::special).
enum class Kind : uint8_t {
  Special,
  Unary,
  Binary,
  Load,
  Store,
  AtomicLoad,
  AtomicStore,
  AtomicRmw,
  AtomicCmpxchg
};

// Operand types as the validator sees them; Unknown is the spec's bottom type
// on a polymorphic (unreachable) stack.
constexpr ValType kUnknown = static_cast<ValType>(0);
constexpr ValType kNone = static_cast<ValType>(1);

struct OpInfo {
  bool valid = false;
  IOp op = IOp::Count;
  Kind kind = Kind::Special;
  ValType result = kNone, p1 = kNone, p2 = kNone;
  uint8_t mem_bytes = 0;  // Load/Store: access size (natural alignment)
  int8_t feature = -1;    // the proposal it needs (vm/features.def), -1 for wasm 2.0
  const char* name = "";
};

// Per-prefix lookup tables, and maps from an op to its other forms (IOp::Count: none).
struct OpTables {
  OpTables();
  std::array<OpInfo, 256> single{};
  std::array<OpInfo, 32> fc{};
  std::array<OpInfo, 512> fd{};
  std::array<OpInfo, 80> fe{};  // threads: up to i64.atomic.rmw32.cmpxchg_u (0x4E)
  // JumpIf_X / JumpUnless_X for each IOp X that can fuse with a following branch.
  std::array<std::pair<IOp, IOp>, static_cast<size_t>(IOp::Count)> fused{};
  // The other way: the X of each JumpIf_X (true) and JumpUnless_X (false),
  // else (Count, false). A loop's back edge repeats its exit test
  // (FunctionCompiler::rotate_back_edge).
  std::array<std::pair<IOp, bool>, static_cast<size_t>(IOp::Count)> fused_test{};
  // The back-edge form of each jump op that a backward jump can be (itself
  // for Switch, which tests the direction, and for the back-edge forms).
  std::array<IOp, static_cast<size_t>(IOp::Count)> back_edge{};
  // LoadAdd_X and LoadShlAdd_X for each load X (vm/code.h).
  std::array<IOp, static_cast<size_t>(IOp::Count)> load_add{};
  std::array<IOp, static_cast<size_t>(IOp::Count)> load_shl_add{};
  // StoreAdd_X for each store X (vm/code.h).
  std::array<IOp, static_cast<size_t>(IOp::Count)> store_add{};
  // BinLoad_X / StoreBin_X for each f64 binary X (vm/code.h), and
  // StoreBinLoad_X for BinLoad_X.
  std::array<std::pair<IOp, IOp>, static_cast<size_t>(IOp::Count)> f64_mem{};
  std::array<IOp, static_cast<size_t>(IOp::Count)> store_bin_load{};
  // BinLoadAdd_X for each f64 binary X (vm/code.h).
  std::array<IOp, static_cast<size_t>(IOp::Count)> bin_load_add{};
  // The counted form (JumpIfExit, JumpCounted, ...) of each jump, for code
  // counted without fuel (vm/counted_ops.def).
  std::array<IOp, static_cast<size_t>(IOp::Count)> counted{};
  // The integer comparison that is `i32.eqz` of each one (lt_u <-> ge_u,
  // eq <-> ne, ...). Floats have none: with a NaN operand both f64.lt and
  // f64.ge are 0.
  std::array<IOp, static_cast<size_t>(IOp::Count)> negated{};
  // Imm_X for each integer binary X (vm/code.h).
  std::array<IOp, static_cast<size_t>(IOp::Count)> imm{};
  // The comparisons (i32.eqz to f64.ge) and their Imm_ forms: their handlers
  // leave the 0 or 1 zero-extended in the whole slot (vm/interp.cc,
  // wr_result), so `i64.extend_i32_u` of one emits nothing (Go makes an i64
  // of every bool it keeps: 1.8% of compress/flate's ops were that extend).
  std::array<bool, static_cast<size_t>(IOp::Count)> zext{};

  OpInfo* table_for(int prefix) {
    return prefix == 0xFC   ? fc.data()
           : prefix == 0xFD ? fd.data()
           : prefix == 0xFE ? fe.data()
                            : single.data();
  }

 private:
  void init_negated();
  void init_fused();
};

const OpTables& op_tables();

}  // namespace wzvm::vm::lower
