// The interpreter loop. One function, `execute`, runs the internal code of
// vm/code.h with computed-goto dispatch (or a switch when built with
// WZVM_SWITCH_DISPATCH, e.g. for sanitizers). The hot state lives in locals
// the compiler keeps in registers: ip, fp, and the cached base and size of
// memory 0. Calls between wasm functions push a Frame on the thread's frame
// stack and continue in the same loop; host functions are entered through
// one boundary (`call_host`; `host_boundary_profiled` when profiling).

#include "vm/interp.h"

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "vm/atomics.h"
#include "vm/numerics.h"
#include "vm/simd.h"

namespace wzvm::vm {

#if !defined(WZVM_INTERP_COUNTED_LOOP)  // vm/interp_counted.cc: the counting loop alone
const char* trap_message(TrapCode code) {
  switch (code) {
    case TrapCode::None:
      return "";
#define WZVM_TRAP(Name, Message) \
  case TrapCode::Name:           \
    return Message;
#include "vm/traps.def"
#undef WZVM_TRAP
  }
  return "unknown trap";
}

Thread::Thread(const StoreLimits& limits)
    : stack(new uint64_t[limits.value_stack_slots]),
      stack_end(stack.get() + limits.value_stack_slots),
      frames(limits.max_call_depth + 1),
      max_depth(limits.max_call_depth),
      top(stack.get()) {
  // Frame::callee_limit: from frames[max_depth - 1] on, any frame fails the
  // check (frame_slots >= 4, so nfp + frame_slots > stack.get()).
  for (uint32_t i = 0; i < frames.size(); ++i)
    frames[i].callee_limit = i + 1 < max_depth ? stack_end : stack.get();
}

namespace {
// threads: the Thread a ThreadScope set on this OS thread, for its store.
thread_local Store* t_scope_store = nullptr;
thread_local Thread* t_scope_thread = nullptr;
}  // namespace

Thread* Store::thread() { return t_scope_store == this ? t_scope_thread : thread_.get(); }

ThreadScope::ThreadScope(Store& store, Thread& thread) {
  t_scope_store = &store;
  t_scope_thread = &thread;
}

ThreadScope::~ThreadScope() {
  t_scope_store = nullptr;
  t_scope_thread = nullptr;
}
#endif

namespace {

using C_I32 = uint32_t;
using C_I64 = uint64_t;
using C_F32 = float;
using C_F64 = double;
using C_V128 = v128_t;  // two slots

// Slots are 8 bytes; narrower values use the low bytes (little-endian host).
template <class T>
__attribute__((always_inline)) inline T rd(const uint64_t* fp, uint32_t slot) {
  T v;
  std::memcpy(&v, fp + slot, sizeof(T));
  return v;
}
// An i32 is written zero-extended, the whole slot. The 32-bit operation has
// already zeroed the register's high half, so the 8-byte store costs what a
// 4-byte one does; and an 8-byte read of the slot soon after (a copy, a
// call's argument, a return's result, a global.set) is forwarded from the
// store, where a 4-byte store under an 8-byte load cannot be and stalls the
// load until the store retires (docs/RATIONALE.md, "An i32 fills its slot").
// A comparison's slot then also holds what i64.extend_i32_u would make of
// it, which lowering leaves out (vm/lower/values.cc, OpTables::zext).
template <class T>
__attribute__((always_inline)) inline void wr(uint64_t* fp, uint32_t slot, T v) {
  if constexpr (std::is_integral_v<T> && sizeof(T) == sizeof(uint32_t)) {
    const uint64_t w = static_cast<uint32_t>(v);
    std::memcpy(fp + slot, &w, sizeof w);
  } else {
    std::memcpy(fp + slot, &v, sizeof(T));
  }
}

// The moves of a copy run [op d1 s1 .. dN sN] at ip, slot to slot and in
// order (a later source may be an earlier destination): copy2..copy4 and
// every op that begins with copies (copy3+call_func, copy+jump_if, ...).
template <size_t... I>
__attribute__((always_inline)) inline void copies_(uint64_t* fp, const uint32_t* ip,
                                                   std::index_sequence<I...>) {
  ((fp[ip[1 + 2 * I]] = fp[ip[2 + 2 * I]]), ...);
}
template <size_t N>
__attribute__((always_inline)) inline void copies(uint64_t* fp, const uint32_t* ip) {
  copies_(fp, ip, std::make_index_sequence<N>{});
}

// call_indirect's checks, in the spec's order, for [op table type elem ...]:
// the element fp[elem] of table `table` exists, is not null (table_elem)
// and has the expected type (table_target, the store's type ids; CallTable
// compares a function of its own instance by its module's type index).
// Return it, or null with `why` set. The one copy for every indirect call op.
__attribute__((always_inline)) inline FuncInst* table_elem(const Instance* inst, const uint32_t* ip,
                                                           const uint64_t* fp, TrapCode& why) {
  const TableInst* table = inst->tables[ip[1]];
  // The element's address against the end: comparing the index with
  // size() divides the vector's byte length first (two instructions more).
  const Ref* e = table->elems.data() + rd<uint32_t>(fp, ip[3]);
  if (e >= std::to_address(table->elems.end())) return why = TrapCode::UndefinedElement, nullptr;
  FuncInst* f = reinterpret_cast<FuncInst*>(*e);
  if (!f) return why = TrapCode::UninitializedElement, nullptr;
  return f;
}
__attribute__((always_inline)) inline FuncInst* table_target(const Instance* inst, const uint32_t* ip,
                                                             const uint64_t* fp, TrapCode& why) {
  FuncInst* f = table_elem(inst, ip, fp, why);
  if (f && f->type_id != inst->type_ids[ip[2]]) return why = TrapCode::IndirectCallMismatch, nullptr;
  return f;
}

template <class F, class R, class A>
__attribute__((always_inline)) inline TrapCode unary(uint64_t* fp, const uint32_t* ip) {
  if constexpr (F::kTraps) {
    R r;
    TrapCode t = F::template op<R, A>(rd<A>(fp, ip[2]), r);
    if (t == TrapCode::None) wr<R>(fp, ip[1], r);
    return t;
  } else {
    wr<R>(fp, ip[1], F::template op<R, A>(rd<A>(fp, ip[2])));
    return TrapCode::None;
  }
}

// fp[dst] = F(a, b), unless F traps.
template <class F, class R, class A, class B>
__attribute__((always_inline)) inline TrapCode binary_into(uint64_t* fp, uint32_t dst, A a, B b) {
  if constexpr (F::kTraps) {
    R r;
    TrapCode t = F::template op<R, A>(a, b, r);
    if (t == TrapCode::None) wr<R>(fp, dst, r);
    return t;
  } else {
    wr<R>(fp, dst, F::template op<R, A>(a, b));
    return TrapCode::None;
  }
}

// [X dst a b]. B is the second operand's type: A, except for SIMD shifts (v128 x i32).
template <class F, class R, class A, class B>
__attribute__((always_inline)) inline TrapCode binary(uint64_t* fp, const uint32_t* ip) {
  return binary_into<F, R, A, B>(fp, ip[1], rd<A>(fp, ip[2]), rd<B>(fp, ip[3]));
}

// A 64-bit immediate: two code words at p, low first. One 8-byte load: as
// `p[0] | p[1] << 32`, GCC merged the two loads in some builds of the loop
// and not in others (three instructions more per const64, callgrind).
__attribute__((always_inline)) inline uint64_t imm64(const uint32_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// [Imm_X dst a imm] (vm/code.h): the second operand is in the code, one word
// for 32-bit types, two (low first) for 64-bit ones.
template <class F, class R, class A>
__attribute__((always_inline)) inline TrapCode binary_imm(uint64_t* fp, const uint32_t* ip) {
  const A b = sizeof(A) == 8 ? static_cast<A>(imm64(ip + 3)) : static_cast<A>(ip[3]);
  return binary_into<F, R, A, A>(fp, ip[1], rd<A>(fp, ip[2]), b);
}

// A scalar Load or Store row of vm/opcodes.def as one half of a paired
// memory access (vm/mem_pairs.def): the value's C type and the memory's.
template <IOp op>
struct MemRow;
#define WZVM_MEMROW_Special(Name, R, P2, T)
#define WZVM_MEMROW_Unary(Name, R, P2, T)
#define WZVM_MEMROW_Binary(Name, R, P2, T)
#define WZVM_MEMROW_AtomicLoad(Name, R, P2, T)
#define WZVM_MEMROW_AtomicStore(Name, R, P2, T)
#define WZVM_MEMROW_AtomicRmw(Name, R, P2, T)
#define WZVM_MEMROW_AtomicCmpxchg(Name, R, P2, T)
#define WZVM_MEMROW_Load(Name, R, P2, T) \
  template <>                            \
  struct MemRow<IOp::Name> {             \
    static constexpr bool kLoad = true;  \
    using Val = C_##R;                   \
    using Mem = T;                       \
  };
#define WZVM_MEMROW_Store(Name, R, P2, T) \
  template <>                             \
  struct MemRow<IOp::Name> {              \
    static constexpr bool kLoad = false;  \
    using Val = C_##P2;                   \
    using Mem = T;                        \
  };
#define WZVM_OP(Name, prefix, code, text, K, R, P1, P2, Extra) WZVM_MEMROW_##K(Name, R, P2, Extra)
#include "vm/opcodes.def"
#undef WZVM_OP
#undef WZVM_MEMROW_Special
#undef WZVM_MEMROW_Unary
#undef WZVM_MEMROW_Binary
#undef WZVM_MEMROW_Load
#undef WZVM_MEMROW_Store
#undef WZVM_MEMROW_AtomicLoad
#undef WZVM_MEMROW_AtomicStore
#undef WZVM_MEMROW_AtomicRmw
#undef WZVM_MEMROW_AtomicCmpxchg

// rmw_add(I32)'s access for its words [a c offset] at ip + kAt: the i32 at
// a + offset gets c added, `v` its new value. False: out of bounds, nothing
// read or written. Words read as ip[kAt + i], as mem_access's are.
template <size_t kAt>
__attribute__((always_inline)) inline bool rmw_add_i32(uint64_t* fp, const uint32_t* ip, uint8_t* mem,
                                                       uint64_t memsize, uint32_t& v) {
  const uint64_t ea = static_cast<uint64_t>(rd<uint32_t>(fp, ip[kAt])) + ip[kAt + 2];
  if (__builtin_expect(ea + sizeof(uint32_t) > memsize, 0)) return false;
  std::memcpy(&v, mem + ea, sizeof v);
  v += ip[kAt + 1];
  std::memcpy(mem + ea, &v, sizeof v);
  return true;
}

// Row `op`'s access for its four words at ip + kAt ([op dst addr offset] or
// [op addr value offset]), as its own handler does it. False: out of bounds,
// nothing read or written. The words are read as ip[kAt + i]: given ip + 4
// as a pointer, GCC kept that pointer in a register in some builds of the
// loop and not in others (one instruction per pair, callgrind).
template <IOp op, size_t kAt>
__attribute__((always_inline)) inline bool mem_access(uint64_t* fp, const uint32_t* ip, uint8_t* mem,
                                                      uint64_t memsize) {
  using Row = MemRow<op>;
  using T = typename Row::Mem;
  const uint64_t ea = static_cast<uint64_t>(rd<uint32_t>(fp, ip[kAt + (Row::kLoad ? 2 : 1)])) + ip[kAt + 3];
  if (__builtin_expect(ea + sizeof(T) > memsize, 0)) return false;
  if constexpr (Row::kLoad) {
    T v;
    std::memcpy(&v, mem + ea, sizeof(T));
    wr<typename Row::Val>(fp, ip[kAt + 1], static_cast<typename Row::Val>(v));
  } else {
    T v = static_cast<T>(rd<typename Row::Val>(fp, ip[kAt + 2]));
    std::memcpy(mem + ea, &v, sizeof(T));
  }
  return true;
}

// The condition of a fused compare-and-branch (vm/code.h): operands at ip[1], ip[2].
template <class F, class R, class A>
__attribute__((always_inline)) inline TrapCode condition(const uint64_t* fp, const uint32_t* ip, bool& c) {
  if constexpr (F::kTraps) {
    R r{};
    TrapCode t = F::template op<R, A>(rd<A>(fp, ip[1]), rd<A>(fp, ip[2]), r);
    c = r != 0;
    return t;
  } else {
    c = F::template op<R, A>(rd<A>(fp, ip[1]), rd<A>(fp, ip[2])) != 0;
    return TrapCode::None;
  }
}

// A new frame's declared locals (zero) and constant area: one copy of the
// function's frame image. A plain loop, on purpose: frames are a few slots,
// and the memset/memcpy calls GCC would make of two loops cost more than
// they copy in call-heavy code. The empty asm keeps it a loop. Four words per
// iteration (two 16-byte moves), and no test before the first: the image is
// never empty. One index, a negative byte offset from both ends counting up
// to zero, moves both pointers and is the loop's test: six instructions per
// four words where two pointers and a compare took twelve (CPython's calls.py
// copies about 12 slots a call; docs/RATIONALE.md, "Calls copy one frame
// image"). An image of up to CompiledFunc::kInlineImage words is read from
// inside the CompiledFunc, at an offset fixed at compile time (no load of
// frame_init's buffer on the way to it); a longer one from frame_init, out of
// line.
__attribute__((noinline, cold)) void init_frame_long(uint64_t* fp, const CompiledFunc& code) {
  const char* const src_end = reinterpret_cast<const char*>(std::to_address(code.frame_init.end()));
  char* const dst_end = reinterpret_cast<char*>(fp + code.frame_init_end);
  for (intptr_t i = code.frame_init_neg_bytes; i != 0; i += 4 * sizeof(uint64_t))
    std::memcpy(dst_end + i, src_end + i, 4 * sizeof(uint64_t));
}
__attribute__((always_inline)) inline void init_frame(uint64_t* fp, const CompiledFunc& code) {
  // a multiple of 4, at least 4 (vm/lower/function_compiler.cc)
  intptr_t i = code.frame_init_neg_bytes;
  if (__builtin_expect(i < -static_cast<intptr_t>(sizeof code.image_inline), 0))
    return init_frame_long(fp, code);
  const char* const src_end = reinterpret_cast<const char*>(std::end(code.image_inline));
  char* const dst_end = reinterpret_cast<char*>(fp + code.frame_init_end);
  do {
    std::memcpy(dst_end + i, src_end + i, 2 * sizeof(uint64_t));
    std::memcpy(dst_end + i + 16, src_end + i + 16, 2 * sizeof(uint64_t));
    i += 4 * sizeof(uint64_t);
    asm volatile("");
  } while (i != 0);
}

// The semantics functor of each binary instruction, for the chained ops of
// vm/chains.def.
template <IOp>
struct BinaryFunctor;
#define WZVM_BINARY_FUNCTOR_Binary(Name, Fn) \
  template <>                                \
  struct BinaryFunctor<IOp::Name> {          \
    using F = num::Fn;                       \
  };
#define WZVM_BINARY_FUNCTOR_Special(Name, Fn)
#define WZVM_BINARY_FUNCTOR_Unary(Name, Fn)
#define WZVM_BINARY_FUNCTOR_Load(Name, Fn)
#define WZVM_BINARY_FUNCTOR_Store(Name, Fn)
#define WZVM_BINARY_FUNCTOR_AtomicLoad(Name, Fn)
#define WZVM_BINARY_FUNCTOR_AtomicStore(Name, Fn)
#define WZVM_BINARY_FUNCTOR_AtomicRmw(Name, Fn)
#define WZVM_BINARY_FUNCTOR_AtomicCmpxchg(Name, Fn)
#define WZVM_OP(Name, prefix, code, text, K, R, P1, P2, Extra) WZVM_BINARY_FUNCTOR_##K(Name, Extra)
#include "vm/opcodes.def"
#undef WZVM_OP
#undef WZVM_BINARY_FUNCTOR_Binary
#undef WZVM_BINARY_FUNCTOR_Special
#undef WZVM_BINARY_FUNCTOR_Unary
#undef WZVM_BINARY_FUNCTOR_Load
#undef WZVM_BINARY_FUNCTOR_Store
#undef WZVM_BINARY_FUNCTOR_AtomicLoad
#undef WZVM_BINARY_FUNCTOR_AtomicStore
#undef WZVM_BINARY_FUNCTOR_AtomicRmw
#undef WZVM_BINARY_FUNCTOR_AtomicCmpxchg

// An i32 binary instruction `Op` of the opcode table on the slots named at
// ip[k] and ip[k + 1] (the operand pairs of a fused op such as SHA-2's sigmas).
template <IOp Op>
__attribute__((always_inline)) inline uint32_t i32_binary_at(const uint64_t* fp, const uint32_t* ip,
                                                             size_t k) {
  return BinaryFunctor<Op>::F::template op<uint32_t, uint32_t>(rd<uint32_t>(fp, ip[k]),
                                                               rd<uint32_t>(fp, ip[k + 1]));
}

// i32.shr_u+and+add's words [d x s m b] at ip + kAt: fp[d] = ((x >> s) & m) + b,
// read as ip[kAt + i] (as mem_access's are). shr_u_and_add_of: with x given,
// the value the op before it wrote to fp[x] (Lua's tail).
template <size_t kAt>
__attribute__((always_inline)) inline void shr_u_and_add_of(uint64_t* fp, const uint32_t* ip, uint32_t x) {
  using ShrU = BinaryFunctor<IOp::I32ShrU>::F;
  const uint32_t field = ShrU::template op<uint32_t, uint32_t>(x, rd<uint32_t>(fp, ip[kAt + 3]));
  wr<uint32_t>(fp, ip[kAt + 1], (field & rd<uint32_t>(fp, ip[kAt + 4])) + rd<uint32_t>(fp, ip[kAt + 5]));
}
template <size_t kAt>
__attribute__((always_inline)) inline void shr_u_and_add(uint64_t* fp, const uint32_t* ip) {
  shr_u_and_add_of<kAt>(fp, ip, rd<uint32_t>(fp, ip[kAt + 2]));
}

// The case a switch [switch dst n off0..off(n)] at ip takes for index v,
// and its offset: off(v), or off(n), the default, past the end. Selected as a value: with
// std::min's reference GCC put v in the stack frame to take its address, a
// store and a reload on the way to every switch's jump.
__attribute__((always_inline)) inline uint32_t switch_index(const uint32_t* ip, uint32_t v) {
  const uint32_t n = ip[2];
  return v < n ? v : n;
}
// The select written into the offset's index, not through switch_index:
// so GCC branches on the default (rarely taken) and loads the offset
// speculatively; through switch_index it chose a cmov, the compare on the
// way to the load (Go strconv 1.04).
__attribute__((always_inline)) inline int32_t switch_offset(const uint32_t* ip, uint32_t v) {
  const uint32_t n = ip[2];
  return static_cast<int32_t>(ip[3 + (v < n ? v : n)]);
}

// The T at mem + ea into m; false: out of bounds (ea is a 32-bit address
// plus an offset, so ea + size cannot wrap), nothing read.
template <class T>
__attribute__((always_inline)) inline bool load_at(const uint8_t* mem, uint64_t memsize, uint64_t ea, T& m) {
  if (__builtin_expect(ea + sizeof(T) > memsize, 0)) return false;
  std::memcpy(&m, mem + ea, sizeof(T));
  return true;
}

// The address [LoadAndShlAdd_I32Load dst x m k c offset] at ip loads from,
// ((x & m) << k) + c + offset, with x given: fp[x]'s value, or what the op
// before it wrote there (Lua's tail).
__attribute__((always_inline)) inline uint64_t load_and_shl_add_ea(const uint64_t* fp, const uint32_t* ip,
                                                                   uint32_t x) {
  using Shl = BinaryFunctor<IOp::I32Shl>::F;
  const uint32_t a =
      Shl::template op<uint32_t, uint32_t>(x & rd<uint32_t>(fp, ip[3]), rd<uint32_t>(fp, ip[4]));
  return static_cast<uint64_t>(a + rd<uint32_t>(fp, ip[5])) + ip[6];
}

// The load of a switch pair (vm/switch_pairs.def) at ip: row `Load`'s access
// at [First dst a offset], at (x << k) + c for [LoadShlAdd_Load dst x k c
// offset], or at ((x & m) << k) + c for [LoadAndShlAdd_I32Load dst x m k c offset], written to fp[dst] as the
// load writes it and returned in `v`. False: out of bounds, nothing read.
template <IOp First, IOp Load>
__attribute__((always_inline)) inline bool switch_load(uint64_t* fp, const uint32_t* ip, uint8_t* mem,
                                                       uint64_t memsize, uint32_t& v) {
  using Row = MemRow<Load>;
  using T = typename Row::Mem;
  static_assert(Row::kLoad && std::is_same_v<typename Row::Val, uint32_t>, "a switch takes an i32");
  uint64_t ea;
  if constexpr (First == Load) {
    ea = static_cast<uint64_t>(rd<uint32_t>(fp, ip[2])) + ip[3];
  } else if constexpr (First == IOp::LoadAndShlAdd_I32Load) {
    ea = load_and_shl_add_ea(fp, ip, rd<uint32_t>(fp, ip[2]));
  } else {
    using Shl = BinaryFunctor<IOp::I32Shl>::F;
    const uint32_t a = Shl::template op<uint32_t, uint32_t>(rd<uint32_t>(fp, ip[2]), rd<uint32_t>(fp, ip[3]));
    ea = static_cast<uint64_t>(a + rd<uint32_t>(fp, ip[4])) + ip[5];
  }
  T m;
  if (!load_at(mem, memsize, ea, m)) return false;
  v = static_cast<uint32_t>(m);
  wr<uint32_t>(fp, ip[1], v);
  return true;
}

void slots_to_values(const std::vector<ValType>& types, const uint64_t* slots, std::vector<Value>& out) {
  out.resize(types.size());
  for (size_t i = 0; i < types.size(); ++i) {
    Value& v = out[i];
    v = Value::zero(types[i]);
    std::memcpy(v.v128, slots, slot_count(types[i]) * 8);
    if (types[i] == ValType::I32 || types[i] == ValType::F32) std::memset(v.v128 + 4, 0, 12);
    slots += slot_count(types[i]);
  }
}

void values_to_slots(std::span<const Value> values, uint64_t* slots) {
  for (const Value& v : values) {
    uint32_t n = slot_count(v.type);
    if (v.type == ValType::I32 || v.type == ValType::F32) slots[0] = v.i32;
    else std::memcpy(slots, v.v128, n * 8);
    slots += n;
  }
}

// The one boundary through which every host function is entered.
Trap call_host(Store& store, Instance* caller, FuncInst* f, uint64_t* slots) {
  std::vector<Value> args;
  slots_to_values(f->type.params, slots, args);
  std::vector<Value> results(f->type.results.size());
  for (size_t i = 0; i < results.size(); ++i) results[i] = Value::zero(f->type.results[i]);
  MemInst* mem = caller && !caller->memories.empty() ? caller->memories[0] : nullptr;
  HostContext ctx{store, caller, mem};
  Trap t = f->host(ctx, args, results);
  if (t) return t;
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].type != f->type.results[i])
      return Trap::make(TrapCode::HostError, "host function " + f->host_module + "." + f->host_field +
                                                 " returned a value of the wrong type");
  }
  values_to_slots(results, slots);
  return {};
}

// A host call made by wasm code. Out of line so that no object with a
// destructor is in scope of the dispatch loop's indirect gotos. A nested
// entry into wasm (the host calling back) builds above the arguments.
__attribute__((noinline)) bool host_boundary(Store& store, Thread& th, Instance* caller, FuncInst* f,
                                             uint64_t* slots, Trap& trap) {
  th.top = slots + 2 * std::max(f->type.params.size(), f->type.results.size());
  trap = call_host(store, caller, f, slots);
  return !trap;
}

// Byte offset in the module of the instruction at word `pos` of `code`.
int64_t source_offset(const CompiledFunc& code, size_t pos) {
  const auto& map = code.source_map;
  auto it = std::upper_bound(map.begin(), map.end(), std::make_pair(static_cast<uint32_t>(pos), UINT32_MAX));
  if (it == map.begin()) return -1;
  return std::prev(it)->second;
}

// While a function entered by a hooked call (memory profiling) runs, its
// caller's resume point is this stub: returning through it reports the
// return to the profiler and then continues at the real resume point, kept
// in the callee's frame. Plain calls and returns thus never test for hooks.
const uint32_t kHookedReturnStub[1] = {static_cast<uint32_t>(IOp::HookedReturn)};

// Where a frame that is not the top one continues when its callee returns.
const uint32_t* resume_ip(const Frame* f) { return f->ip == kHookedReturnStub ? f[1].hook_ret : f->ip; }

// A new frame's node (unknown), call_hook (none) and ret_check, as one
// 8-byte store of a sign-extended 32-bit immediate when `check` is false:
// one store per call for the three fields (Frame::ret_check).
__attribute__((always_inline)) inline void fresh_frame(Frame* f, bool check) {
  static_assert(offsetof(Frame, call_hook) == offsetof(Frame, node) + 4 &&
                offsetof(Frame, ret_check) == offsetof(Frame, node) + 5 &&
                offsetof(Frame, hook_ret) == offsetof(Frame, node) + 8 && kUnknownNode <= INT32_MAX);
  const uint64_t w = kUnknownNode | uint64_t{check} << 40;
  std::memcpy(reinterpret_cast<char*>(f) + offsetof(Frame, node), &w, sizeof w);
}

// CALL's `kid` of call ops that have no call-site entry.
constexpr uint32_t kNoKid = UINT32_MAX;

// Counting builds charge a whole segment on entry; frames unwound by a trap
// or proc_exit did not run the rest of theirs. `ip` is the current
// instruction of the top frame, the others resume after their call. A
// trapping instruction has run (it counts); with `top_not_run` (an
// interrupt, taken before the instruction at `ip`) the top one has not.
// Counting loop only (maybe_unused: interp.cc compiles the plain loop alone).
[[maybe_unused]] __attribute__((noinline)) void uncount_unwound(Profiling& p, const Frame* entry,
                                                                const Frame* top, const uint32_t* ip,
                                                                bool top_not_run) {
  for (const Frame* f = top; f >= entry; --f) {
    const CompiledFunc* code = f->func->code;
    if (code->count_marks.empty()) continue;
    const uint32_t* at = f == top ? ip : resume_ip(f) - 1;
    uint32_t pos = static_cast<uint32_t>(at - code->code.data());
    const auto& marks = code->count_marks;
    auto it = std::upper_bound(marks.begin(), marks.end(), pos,
                               [](uint32_t p, const CompiledFunc::CountMark& m) { return p < m.pos; });
    if (it != marks.begin() && std::prev(it)->seg != UINT32_MAX) {
      auto m = std::prev(it);
      uint32_t ran = m->ran;
      // Before the instruction: what ran up to the one it starts.
      if (f == top && top_not_run) ran = m->before;
      // The segment was counted as a whole run on entry: make it a partial one.
      f->counters[m->seg] -= 1;
      p.partial.push_back({Profiling::block_node(f->counters), m->seg, ran});
      if (code->charges_fuel) p.fuel += code->segment_size(m->seg) - ran;  // charged, never run
    }
    if (f == entry) break;
  }
}

// Fills the trap's backtrace from frames [entry, top]; `ip` is the current
// instruction of the top frame, the others resume after their call.
void add_backtrace(Trap& trap, const Frame* entry, const Frame* top, const uint32_t* ip) {
  for (const Frame* f = top; f >= entry; --f) {
    const FuncInst* fn = f->func;
    FrameInfo info;
    info.func_index = fn->func_index;
    if (fn->instance) info.name = fn->instance->module->function_name(fn->func_index);
    const uint32_t* at = f == top ? ip : resume_ip(f) - 1;
    if (fn->code && at)
      info.offset = source_offset(*fn->code, static_cast<size_t>(at - fn->code->code.data()));
    trap.backtrace.push_back(std::move(info));
    if (f == entry) break;
  }
}

// exception-handling, out of line (throwing is rare; the loop stays lean).
// Records a new exception with the `tag->slots` values at `values`; returns
// its number (index + 1), what exception slots hold.
__attribute__((noinline)) uint64_t new_exception(Thread& th, const TagInst* tag, const uint64_t* values) {
  th.exceptions.push_back({tag, std::vector<uint64_t>(values, values + tag->slots)});
  return th.exceptions.size();
}

// The handler in `code` for exception `exn` raised at word `pos` of a frame
// of `inst`: the innermost try region whose body holds `pos`, then the
// regions each one passes on to (enclosing try, or a delegate's target).
const TryRegion::Handler* find_handler(const CompiledFunc& code, uint32_t pos, const TagInst* tag,
                                       const Instance& inst, const TryRegion*& region) {
  const auto& regions = code.try_regions;
  int32_t r = -1;
  for (size_t i = 0; i < regions.size(); ++i)  // outer regions come first: the last match is innermost
    if (regions[i].start <= pos && pos < regions[i].end) r = static_cast<int32_t>(i);
  for (; r >= 0; r = regions[r].next) {
    for (const TryRegion::Handler& h : regions[r].handlers) {
      if (h.tag == TryRegion::kCatchAll || inst.tags[h.tag] == tag) {
        region = &regions[r];
        return &h;
      }
    }
  }
  return nullptr;
}

// threads: a wait's timeout under StoreLimits::max_wait_ns (negative: none).
int64_t wait_timeout(const Store& store, int64_t asked) {
  const int64_t cap = store.limits().max_wait_ns;
  if (cap < 0) return asked;
  return asked < 0 ? cap : std::min(asked, cap);
}

uint64_t clock_ns(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

// Guest CPU time since the last mark goes to the running total, up to `now`
// (the thread CPU clock; 0: read it here). A sampler's reading can be older
// than a mark set since (a host call returned in between): that is no time.
void charge_guest_cpu(Profiling& p, uint64_t now = 0) {
  if (!now) now = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  if (now <= p.cpu_mark) return;
  p.guest_cpu += now - p.cpu_mark;
  p.cpu_mark = now;
}

// Where the current call stack sits in the call tree. The counting loop keeps
// every frame's node block up to date (its counts need it on every segment),
// which names the node (Profiling::block_node). The plain loop only marks
// each new frame's node unknown (one store per call) and fills nodes in
// when a sample, a host call, an allocation or a memory.grow needs one: from
// the nearest frame below that has its node, up to the frame asked about, so
// the frames below are looked up once per frame and not again for every
// allocation they make (a loop calling malloc costs one call-tree lookup per
// call, not a walk from the entry).
struct NodeContext {
  Frame* entry;   // first frame of this entry into the VM
  uint32_t base;  // call-tree node the entry hangs from (Thread::entry_node)
  bool eager;     // frames carry their node's block (counting loop)
  // For host_boundary_profiled, which must take at most six arguments (see
  // there): the store the loop runs in.
  Store* store;
};
uint32_t node_of(Profiling& p, const NodeContext& nc, Frame* frame) {
  if (nc.eager) return Profiling::block_node(frame->counters);
  if (frame->node != kUnknownNode) return frame->node;
  Frame* f = frame;
  while (f > nc.entry && f[-1].node == kUnknownNode) --f;
  uint32_t node = f == nc.entry ? nc.base : f[-1].node;
  // Each frame's call site is where the frame below it resumes.
  for (; f <= frame; ++f) f->node = node = p.enter(node, f->func, f == nc.entry ? nullptr : resume_ip(f - 1));
  return node;
}

// ProbeCounted's question to the sink (vm/counted_ops.def), out of line:
// the counter block the frame counts in from here on.
// Counting loop only (maybe_unused: interp.cc compiles the plain loop alone).
[[maybe_unused]] __attribute__((noinline)) uint64_t* probe_counters(Profiling& p, const Frame* frame,
                                                                    const uint64_t* fp, const uint32_t* ip,
                                                                    uint64_t* counters) {
  const uint32_t node = Profiling::block_node(counters);
  p.probe_stay.frame = nullptr;
  const uint32_t to = p.sink->probe(p, node, frame->func, frame, rd<uint32_t>(fp, ip[1]), fp, ip + 5, ip[4]);
  uint64_t* const out = to == node || !p.tree.node(to).counters ? counters : p.tree.node(to).counters;
  p.probe_stay.counters = out;
  return out;
}

// Whether the sink's promise (Profiling::ProbeStay) covers a ProbeCounted
// op at `ip` in `frame`, counting in `counters`: its answer would be to stay.
// Counting loop only (maybe_unused: interp.cc compiles the plain loop alone).
[[maybe_unused]] __attribute__((always_inline)) inline bool probe_stays(
    const Profiling::ProbeStay& st, const Frame* frame, const uint64_t* counters, const uint64_t* fp,
    const uint32_t* ip, const uint8_t* mem, uint64_t memsize) {
  if (st.frame != frame || st.counters != counters) return false;
  const uint32_t* const slots = ip + 5;
  const uint32_t f = rd<uint32_t>(fp, slots[st.frame_k]);
  if (f != st.frame_value) return false;
  const uint64_t at = uint64_t{f} + st.field;
  if (at + sizeof(uint32_t) > memsize) return false;
  uint32_t v;
  std::memcpy(&v, mem + at, sizeof v);
  return v == st.field_value && rd<uint32_t>(fp, slots[st.next_k]) - st.lo < st.span;
}

// The node of `callee` called by a grafting function (call_table.graft,
// LoadOptions::graft_calls) from the frame whose node is `caller`: under the
// callers the sink reads from outside the wasm stack, hung from the root,
// or under `caller` when it knows none. Out of line: grafted calls are
// goroutine switches, not the common path.
__attribute__((noinline)) uint32_t graft_node(Profiling& p, uint32_t caller, const FuncInst* callee,
                                              const uint32_t* ret) {
  uint32_t node;
  if (p.sink && p.sink->graft(p, callee, node)) return node;
  return p.enter(caller, callee, ret);
}

// A safe point found the sampling flag raised: report the current stack and
// the guest CPU time since the previous sample. Out of line: rare and cold.
// Returns true when the flag was an interrupt request rather than (or as well
// as) a sampling tick: the caller then traps.
__attribute__((noinline)) bool take_sample(Profiling& p, const NodeContext& nc, Frame* frame,
                                           const uint32_t* ip) {
  // Cleared with a full barrier before interrupt_requested is read: with a
  // plain (release) store, x86-64 may read interrupt_requested before the
  // clear is visible, and a raise() in between (interrupt_requested, then
  // sample_pending) would have its flag cleared and its interrupt missed.
  __atomic_exchange_n(&p.sample_pending, 0, __ATOMIC_SEQ_CST);
  if (!p.cpu) return flag_set(p.interrupt_requested);
  // The sampler's reading of this thread's CPU clock (Profiling::tick_cpu):
  // no system call here.
  charge_guest_cpu(p, __atomic_exchange_n(&p.tick_cpu, 0, __ATOMIC_ACQUIRE));
  if (p.tick_in_host) {
    p.tick_in_host = false;
    return flag_set(p.interrupt_requested);
  }
  const CompiledFunc* code = frame->func->code;
  int64_t offset = source_offset(*code, static_cast<size_t>(ip - code->code.data()));
  if (p.sink) p.sink->on_cpu_sample(node_of(p, nc, frame), frame->func, offset, p.guest_cpu);
  p.guest_cpu = 0;
  return flag_set(p.interrupt_requested);
}

// The outermost call ends (returns, traps, throws): the guest CPU time since
// the last sample goes into a last one, at the stack it left, even when the
// tick that raised the flag last came during a host call.
bool final_sample(Profiling& p, const NodeContext& nc, Frame* frame, const uint32_t* ip) {
  p.tick_in_host = false;
  // Up to now, not to the last tick's reading: the clock is read here.
  __atomic_store_n(&p.tick_cpu, 0, __ATOMIC_RELAXED);
  set_flag(p.sample_pending, 1);
  return take_sample(p, nc, frame, ip);
}

// The host-call boundary with the profiler's hook: the host function gets a
// node of its own under its caller, its wall time is measured exactly here,
// and guest CPU accounting pauses while it runs. Wasm code the host calls
// back into appears under the host function's node.
// At most six arguments, all in registers: with a seventh passed on the
// stack, GCC gives each profiling loop a frame pointer, which takes the
// register that held `fp`, so every handler reloaded `fp` from the stack
// (callgrind: one more instruction per dispatch, the then separate sampling
// loop ~13% slower on gemm than the plain one). The caller's instance is the calling
// frame's, and the store comes with `nc`.
__attribute__((noinline)) bool host_boundary_profiled(Thread& th, FuncInst* f, uint64_t* slots, Trap& trap,
                                                      const NodeContext& nc, Frame* frame) {
  Profiling& p = *th.profiling;
  Store& store = *nc.store;
  Instance* caller = frame->func->instance;
  uint32_t node = p.enter(node_of(p, nc, frame), f, frame->ip);  // frame->ip: after the call
  if (p.cpu) charge_guest_cpu(p);
  uint32_t saved_entry = th.entry_node;
  th.entry_node = node;
  if (p.sink) p.sink->on_host_enter(node);
  uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
  bool ok = host_boundary(store, th, caller, f, slots, trap);
  uint64_t wall = clock_ns(CLOCK_MONOTONIC) - t0;
  th.entry_node = saved_entry;
  if (p.cpu) {
    p.cpu_mark = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    p.tick_in_host = flag_set(p.sample_pending);
  }
  if (p.sink) p.sink->on_host_call(node, wall);
  return ok;
}

// Memory profiling hooks (vm/profiling.h), out of line: only calls to the
// few hooked functions get here. node_of leaves the node in the hooked frame,
// so the return reports it without another lookup: allocation-heavy programs
// make millions of these pairs.
__attribute__((noinline)) void hooked_call(Profiling& p, const NodeContext& nc, Frame* frame,
                                           MemInst* memory) {
  const uint32_t node = node_of(p, nc, frame);
  if (p.sink) p.sink->on_hooked_call(frame->call_hook, node, frame->fp, memory, frame->func);
}
__attribute__((noinline)) void hooked_return(Profiling& p, const Frame* frame, uint32_t node,
                                             MemInst* memory) {
  if (p.sink) p.sink->on_hooked_return(frame->call_hook, node, frame->fp, memory, frame->func);
}

// memory.grow made `memory` larger than `old_bytes` (memory profiling).
__attribute__((noinline)) void memory_grown(Profiling& p, const NodeContext& nc, Frame* frame,
                                            const uint32_t* ip, MemInst* memory, uint64_t old_bytes) {
  if (!p.sink) return;
  const CompiledFunc* code = frame->func->code;
  int64_t offset = source_offset(*code, static_cast<size_t>(ip - code->code.data()));
  p.sink->on_memory_grow(node_of(p, nc, frame), frame->func, offset, memory, old_bytes);
}

#if !defined(WZVM_SWITCH_DISPATCH)
// A profiling loop's dispatch table (Profiling::dispatch): filled from the
// loop's labels and published with its poll handler, on first use; put back
// by the poll handler, before it tests the flag. The table sits at the page
// offset of the loop's own label table, so its entries fall in the same L1
// cache sets and alias (4K) the same stores as the plain loop's: placed
// wherever malloc put it, it made the then separate sampling loop 12%
// slower than the plain one on bench/suite intmix (0.67 s vs 0.60 s CPU;
// callgrind +1.5%).
__attribute__((noinline)) void publish_dispatch(Profiling::DispatchTable& table, const void* const* labels,
                                                size_t n, const void* poll) {
  constexpr uintptr_t kPage = 4096;
  table.storage.reset(new const void*[n + kPage / sizeof(void*)]);
  uintptr_t base = reinterpret_cast<uintptr_t>(table.storage.get());
  uintptr_t start = (base & ~(kPage - 1)) + (reinterpret_cast<uintptr_t>(labels) & (kPage - 1));
  if (start < base) start += kPage;
  table.entries = reinterpret_cast<const void**>(start);
  for (size_t i = 0; i < n; ++i) __atomic_store_n(&table.entries[i], labels[i], __ATOMIC_RELAXED);
  table.size = static_cast<uint32_t>(n);
  __atomic_store_n(&table.poll, poll, __ATOMIC_SEQ_CST);
}
__attribute__((noinline)) void restore_dispatch(Profiling::DispatchTable& table, const void* const* labels) {
  for (uint32_t i = 0; i < table.size; ++i) __atomic_store_n(&table.entries[i], labels[i], __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}
#endif

// The interpreter loop, instantiated twice (Mode). Plain runs with or without
// a Profiling attached: the CPU sampler, host-call timing and allocation
// hooks cost it nothing per instruction (a sample request patches its
// dispatch table; host calls and hooked calls test `prof`), so a sampled run
// executes the very code of an unprofiled one. Counted adds per-frame
// call-tree nodes and the instruction counters. The choice is made once per
// entry, never per instruction (docs/RATIONALE.md, "One loop for off and
// --profile=cpu").
enum class Mode { Plain, Counted };

#if defined(WZVM_COUNT_OP_PAIRS)
}  // namespace
// Measurement builds (WZVM_COUNT_OP_PAIRS, vm/CMakeLists.txt): every dispatch
// counts the op it goes to and the pair (op before, op); the table is
// written at exit to the file WZVM_OP_PAIRS names, else to stderr. An op
// that goes on into another op's code without a dispatch (copy+call_func)
// counts as one op. One process-wide table, not synchronised: for
// single-threaded guests; one for both loops' translation units.
struct OpPairCounts {
  static constexpr size_t kN = static_cast<size_t>(IOp::Count);
  std::vector<uint64_t> ops = std::vector<uint64_t>(kN), pairs = std::vector<uint64_t>(kN * kN);
  uint32_t prev = static_cast<uint32_t>(kN);
  void count(uint32_t op) {
    ++ops[op];
    if (prev < kN) ++pairs[size_t{prev} * kN + op];
    prev = op;
  }
  ~OpPairCounts() {
    const char* path = std::getenv("WZVM_OP_PAIRS");
    FILE* out = path ? std::fopen(path, "w") : stderr;
    if (!out) return;
    uint64_t total = 0;
    for (uint64_t n : ops) total += n;
    const double pct = total ? 100.0 / static_cast<double>(total) : 0;
    auto top = [&](const std::vector<uint64_t>& v, size_t n) {
      std::vector<size_t> idx;
      for (size_t i = 0; i < v.size(); ++i)
        if (v[i]) idx.push_back(i);
      std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return v[a] > v[b]; });
      if (idx.size() > n) idx.resize(n);
      return idx;
    };
    std::fprintf(out, "total %llu\n== ops\n", static_cast<unsigned long long>(total));
    for (size_t i : top(ops, 60))
      std::fprintf(out, "%6.2f%% %12llu %s\n", static_cast<double>(ops[i]) * pct,
                   static_cast<unsigned long long>(ops[i]), iop_name(static_cast<IOp>(i)));
    std::fprintf(out, "== pairs\n");
    for (size_t i : top(pairs, 120))
      std::fprintf(out, "%6.2f%% %12llu %s -> %s\n", static_cast<double>(pairs[i]) * pct,
                   static_cast<unsigned long long>(pairs[i]), iop_name(static_cast<IOp>(i / kN)),
                   iop_name(static_cast<IOp>(i % kN)));
    if (out != stderr) std::fclose(out);
  }
};
#if defined(WZVM_INTERP_COUNTED_LOOP)
extern OpPairCounts op_pair_counts;
#else
OpPairCounts op_pair_counts;
#endif
namespace {
#define WZVM_COUNT_OP_(op) op_pair_counts.count(op)
#else
#define WZVM_COUNT_OP_(op) static_cast<void>(0)
#endif

// ---- The call paths: call and tail call (a return is the Ret op's few lines).
//
// The loop keeps its registers in locals of run(): ip, fp, the top frame,
// the counting loop's counters, and the instance with its memory 0 cached.
// A call path is a function, always inlined into run(), that moves a copy
// of them (Regs), reads the entry's constants (CallEnv) and says what the
// loop does next (CallEnd); the op puts the copy back into the locals and
// makes the goto, which a function cannot (END_CALL in run()). A copy, not
// references to the locals: a local whose address is taken, even by an
// inlined function, gets its SSA names only after inlining, and GCC then
// put the increment of `ip` between each handler's load of its jump target
// and the jump, one instruction more per dispatch. The code is what the
// statement macros these replaced compiled to, or a little better
// (docs/RATIONALE.md, "The call paths are functions").

// The registers a call path moves, named as run()'s locals.
struct Regs {
  const uint32_t* ip;
  uint64_t* fp;
  Frame* frame;        // the top frame
  uint64_t* counters;  // counting loop: the top frame's (Frame::counters)
  Instance* inst;      // the top frame's instance, and its memory 0 cached:
  MemInst* memory;
  uint8_t* mem;
  uint64_t memsize;

  // Memory 0 of `inst` into the cache, as LOAD_MEM in run() does it. The
  // null of an instance without memories comes out of an empty asm: as a
  // constant, GCC stood in for it another value known null there (after a
  // host call, the callee's `code`), which then lived across every call,
  // spilled: one instruction more per call (callgrind).
  __attribute__((always_inline)) void load_memory() {
    MemInst* none = nullptr;
    asm("" : "+r"(none));
    memory = inst->memories.empty() ? none : inst->memories[0];
    mem = memory ? memory->data : nullptr;
    memsize = memory ? memory->current_size() : 0;
  }
};

// What an entry into run() fixes, for the call paths.
struct CallEnv {
  Store& store;
  Thread& th;
  Profiling* prof;  // null in the plain loop with nothing attached
  bool profiled;    // prof set, or the counting loop
  const NodeContext& nc;
  Frame* frames;  // th.frames
  Frame* entry;   // the first frame of this entry
  uint64_t* stack_end;
  uint64_t* saved_top;  // th.top at entry, put back after each host call
  Trap& host_trap;      // where a host callee's trap goes
};

// A call op's choices, all made at compile time: call()'s template argument.
struct CallSite {
  // Reports a callee that has a Frame::call_hook (memory profiling) when
  // profiling: the ops whose callee may be hooked.
  bool hooked = false;
  // The counted ops: `kid` is the call site's entry in the caller's node
  // block, with which the counting loop finds the callee's node with one
  // compare. The others pass kNoKid.
  bool kid = false;
  // CallLocalCounted: a wasm function of this instance (no host call, no
  // memory to reload) whose code starts with its segment 0.
  bool local = false;
  // CallFunc: a wasm function of this instance, as `local` but with no
  // segment to count (the plain code's call to a function of its module).
  bool own = false;
  // CallTableGraft: the callee's node is grafted (graft_node).
  bool graft = false;
};

// What the loop does after a call op.
enum class CallEnd : uint8_t {
  // The loop goes on at ip. Three ways, each with its own dispatch in
  // END_CALL: one shared dispatch cost each call a jump and a spill of ip.
  Entered,             // the wasm callee's frame is on top: its first op
  HostReturned,        // the host callee returned: the caller's next op
  TookOver,            // the tail callee took over the frame: its first op
  HostTrap,            // the host callee trapped (CallEnv::host_trap): a trap at the call
  StackExhausted,      // the callee's frame does not fit: a trap at the call (frame->ip is after it)
  TailStackExhausted,  // a tail callee's frame does not fit where the caller's was: a trap at ip
};

// Enters wasm function `callee`, whose code is `code`, with its frame at
// `nfp`; `next` is where the caller resumes, `kid` as in CallSite. The rest
// of call(), once the frame fits. The frame image is copied after the frame
// record is written, from `fp`: fewer values are live across the copy loop,
// and GCC spills less around it (calls -0.7% instructions). In the
// counting loop the callee's frame record is reached through a pointer an
// empty asm hides: GCC otherwise addressed it as the caller's plus one,
// which kept the caller's live across the copy loop (three instructions
// more per call, callgrind). In the plain loop, since the frame check reads
// the caller's record (Frame::callee_limit), the asm made GCC copy the
// pointer twice (two instructions per call).
template <Mode kMode, CallSite kSite>
__attribute__((always_inline)) inline void enter_callee(const CallEnv& env, Regs& r, FuncInst* callee,
                                                        const CompiledFunc& code, uint64_t* nfp,
                                                        const uint32_t* next, [[maybe_unused]] uint32_t kid) {
  constexpr bool kCounting = kMode == Mode::Counted;
  Profiling* const prof = env.prof;
  r.frame->ip = next;
  Frame* frame = r.frame + 1;
  if constexpr (kCounting) asm("" : "+r"(frame));
  frame->func = callee;
  // Two plain stores, not neighbours (Frame's layout): GCC made the two one
  // 16-byte store, built from the two registers with three vector moves
  // (two instructions more per call).
  frame->fp = nfp;
  r.frame = frame;
  // node unknown (the plain loop finds it when needed, node_of; the
  // counting loop's is that of `counters`), no hook, no return check
  fresh_frame(frame, false);
  r.fp = nfp;
  init_frame(r.fp, code);
  r.ip = code.code.data();
  if (!(kSite.local || kSite.own) && callee->instance != r.inst) {
    r.inst = callee->instance;
    r.load_memory();
    // its return reloads the caller's memory
    frame->ret_check = 1;
  }
  if constexpr (kCounting) {
    // `counters` is the caller's, still: its block names the caller's node
    if constexpr (kSite.graft) {
      r.counters =
          prof->tree.node(graft_node(*prof, Profiling::block_node(r.counters), callee, next)).counters;
    } else if constexpr (!kSite.kid) {
      r.counters = prof->enter_counted(Profiling::block_node(r.counters), callee, next);
    } else {
      uint64_t* k = r.counters + kid;
      if (__builtin_expect(k[0] == reinterpret_cast<uintptr_t>(callee), 1))
        r.counters = reinterpret_cast<uint64_t*>(k[1]);
      else r.counters = prof->enter_call_site(Profiling::block_node(r.counters), callee, next, k);
    }
    frame->counters = r.counters;
  } else {
    // a grafted callee's callers are read now, while the memory still holds them
    if constexpr (kSite.graft)
      if (env.profiled) frame->node = graft_node(*prof, node_of(*prof, env.nc, frame - 1), callee, next);
  }
  if (uint8_t hook = kSite.hooked && env.profiled ? callee->call_hook : 0) {
    frame->call_hook = hook;
    frame->hook_ret = next;
    frame[-1].ip = kHookedReturnStub;
    hooked_call(*prof, env.nc, frame, r.memory);
  }
  if constexpr (kCounting && kSite.local) {
    // the callee's code starts with its segment 0 (CallLocalCounted)
    r.counters[0] += 1;
    r.ip += 3;
  } else if constexpr (kCounting) {
    // Any other call: the callee's code starts with its CountInstr (or
    // CountFuel, which is dispatched). Doing it here spares that op's
    // dispatch, an indirect jump, for a compare.
    if (*r.ip == static_cast<uint32_t>(IOp::CountInstr)) {
      r.counters[r.ip[2]] += 1;
      r.ip += 3;
    }
  }
}

// `f`'s body lowered in place of its stub (LoadOptions::lazy); false (and
// `trap` says why) only on an internal error of the lowering.
__attribute__((noinline, cold)) bool lower_lazily(FuncInst* f, Trap& trap) {
  Status s = lower_on_first_call(*f->instance->module, f->func_index);
  if (s) return true;
  trap = Trap::make(TrapCode::HostError, "lowering " + f->instance->module->function_name(f->func_index) +
                                             " on its first call: " + s.error().to_string());
  return false;
}

// wasi-libc's string functions at their entry (libc.memcpy and the four
// after it; vm/known_bodies.def): each reads its arguments from the
// parameters' slots, and either does what the body would do, leaving the
// result in slot 0, and returns true, or returns false with nothing done,
// where the body must run: a range that leaves memory 0 (the body traps,
// after whatever it did first) or that the op's exactness does not cover.
// Out of line: the loop's register allocation stays its own.
//
// memcpy: the ranges in memory with 16 bytes to spare past their ends (room
// for any whole word the body reads in the last bytes' neighbourhood) and
// not overlapping; the body's bytes for overlapping ranges are its own.
__attribute__((noinline)) bool libc_memcpy(uint8_t* mem, uint64_t memsize, const uint64_t* fp) {
  const uint64_t d = rd<uint32_t>(fp, 0), s = rd<uint32_t>(fp, 1), n = rd<uint32_t>(fp, 2);
  if (d + n + 16 > memsize || s + n + 16 > memsize || (d < s + n && s < d + n)) return false;
  std::memcpy(mem + d, mem + s, n);
  return true;
}
// memmove: exactly memmove's bytes for any ranges (it calls the memcpy
// above for those that do not overlap: the same room asked for).
__attribute__((noinline)) bool libc_memmove(uint8_t* mem, uint64_t memsize, const uint64_t* fp) {
  const uint64_t d = rd<uint32_t>(fp, 0), s = rd<uint32_t>(fp, 1), n = rd<uint32_t>(fp, 2);
  if (d + n + 16 > memsize || s + n + 16 > memsize) return false;
  std::memmove(mem + d, mem + s, n);
  return true;
}
// memset: n bytes of the low byte of c.
__attribute__((noinline)) bool libc_memset(uint8_t* mem, uint64_t memsize, const uint64_t* fp) {
  const uint64_t d = rd<uint32_t>(fp, 0), n = rd<uint32_t>(fp, 2);
  if (d + n > memsize) return false;
  std::memset(mem + d, rd<uint32_t>(fp, 1) & 0xff, n);
  return true;
}
// memcmp: the first differing bytes' difference, 8 bytes compared at a time
// (little-endian: the lowest differing byte of the words' xor is the first).
__attribute__((noinline)) bool libc_memcmp(const uint8_t* mem, uint64_t memsize, uint64_t* fp) {
  const uint64_t a = rd<uint32_t>(fp, 0), b = rd<uint32_t>(fp, 1), n = rd<uint32_t>(fp, 2);
  if (a + n > memsize || b + n > memsize) return false;
  const uint8_t *p = mem + a, *q = mem + b;
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t x, y;
    std::memcpy(&x, p + i, 8);
    std::memcpy(&y, q + i, 8);
    if (x != y) {
      i += static_cast<uint64_t>(__builtin_ctzll(x ^ y)) / 8;
      break;
    }
  }
  while (i < n && p[i] == q[i]) ++i;
  wr<uint32_t>(fp, 0, i < n ? static_cast<uint32_t>(int32_t{p[i]} - int32_t{q[i]}) : 0);
  return true;
}
// strlen: the terminator in memory (the body's aligned word that holds it
// is then in memory too: memory ends on a page).
__attribute__((noinline)) bool libc_strlen(const uint8_t* mem, uint64_t memsize, uint64_t* fp) {
  const uint64_t a = rd<uint32_t>(fp, 0);
  if (a >= memsize) return false;
  const void* z = std::memchr(mem + a, 0, memsize - a);
  if (z == nullptr) return false;
  wr<uint32_t>(fp, 0, static_cast<uint32_t>(static_cast<const uint8_t*>(z) - (mem + a)));
  return true;
}

// The undo log a translated known body runs in (known_bodies_native.inc,
// written into the build tree by scripts/known_body_cc.py from the rows of
// vm/known_bodies.def; vm/CMakeLists.txt):
// its loads and stores are the body's, on memory 0, and its global.get and
// global.set the body's of global 0 (the C stack pointer). Each store first
// keeps the bytes it overwrites; where the body would call, reach
// `unreachable`, access memory out of bounds, make more stores than the log
// holds or run more loop iterations than `budget`, fail() puts every byte and
// the global back, newest first, and the op lets the body run from its start
// instead, so whatever traps or calls does so as written, and a loop that
// does not end runs where a timeout can stop it.
// Loads and the result, for both Txns below.
struct KnownMemory {
  uint8_t* mem;
  uint64_t memsize;
  uint32_t result = 0;

  template <class T, class V>
  bool load(uint64_t ea, V& v) const {
    if (__builtin_expect(ea + sizeof(T) > memsize, 0)) return false;
    T x;
    std::memcpy(&x, mem + ea, sizeof x);
    v = static_cast<V>(x);
    return true;
  }
  bool done() { return true; }
  bool done(uint32_t v) {
    result = v;
    return true;
  }
};

struct KnownTxn : KnownMemory {
  static constexpr uint32_t kLog = 64;
  GlobalInst* g0;
  uint32_t budget = 1u << 16;
  uint32_t n = 0;
  bool g0_saved = false;
  uint64_t g0_old = 0;
  struct Undo {
    uint64_t addr, old;
    uint32_t size;
  } log[kLog];

  KnownTxn(uint8_t* mem, uint64_t memsize, GlobalInst* g0) : KnownMemory{mem, memsize}, g0(g0) {}
  template <class T>
  bool store(uint64_t ea, T v) {
    if (__builtin_expect(ea + sizeof(T) > memsize || n == kLog, 0)) return false;
    Undo& u = log[n++];
    u.addr = ea;
    u.size = sizeof(T);
    std::memcpy(&u.old, mem + ea, sizeof(T));
    std::memcpy(mem + ea, &v, sizeof v);
    return true;
  }
  uint32_t global0() const { return static_cast<uint32_t>(g0->value); }
  void set_global0(uint32_t v) {
    if (!g0_saved) g0_old = g0->value, g0_saved = true;
    g0->value = v;  // an i32 global holds its value zero-extended
  }
  // A loop's back edge: false once the budget is spent.
  bool tick() { return --budget != 0; }
  __attribute__((cold)) bool fail() {
    while (n > 0) {
      const Undo& u = log[--n];
      std::memcpy(mem + u.addr, &u.old, u.size);
    }
    if (g0_saved) g0->value = g0_old;
    return false;
  }
};

// The Txn of a translated string function in counted code (libc.memcpy.counted
// and its kin): stores go straight to memory. Only where nothing can fail
// after a store does: each op makes sure of its ranges first (memset's and
// memcpy's bodies store only inside theirs, and their loops end with n), or
// the body only loads (memcmp, strlen). A load out of memory fails, and the
// body runs and traps as written.
struct KnownDirect : KnownMemory {
  template <class T>
  bool store(uint64_t ea, T v) {
    if (__builtin_expect(ea + sizeof(T) > memsize, 0)) return false;
    std::memcpy(mem + ea, &v, sizeof v);
    return true;
  }
  static bool tick() { return true; }
  static bool fail() { return false; }
};

// What a translated body does as it enters each of its blocks: nothing in
// plain code; in counted code, add `delta` to the block's counter, which the
// lowering made one of the function's counters (vm/lower/instrument.cc,
// native blocks), so the node's per-instruction counts are the body's.
struct KnownNoCount {
  void operator()(uint32_t) const {}
};
struct KnownCount {
  uint64_t* counters;
  uint64_t delta;
  void operator()(uint32_t j) const { counters[j] += delta; }
};

#include "vm/known_bodies_native.inc"

// wasi-libc's dlfree and dlmalloc at their entry (libc.dlfree, libc.dlmalloc:
// [op skip G H]): the translated body in an undo log; true when it ran to
// its return (dlmalloc's result in slot 0).
__attribute__((noinline)) bool libc_dlfree(uint8_t* mem, uint64_t memsize, GlobalInst* g0, const uint32_t* ip,
                                           const uint64_t* fp) {
  KnownTxn t(mem, memsize, g0);
  return known_dlfree(t, ip[2], ip[3], rd<uint32_t>(fp, 0), KnownNoCount{});
}
__attribute__((noinline)) bool libc_dlmalloc(uint8_t* mem, uint64_t memsize, GlobalInst* g0,
                                             const uint32_t* ip, uint64_t* fp) {
  KnownTxn t(mem, memsize, g0);
  if (!known_dlmalloc(t, ip[2], ip[3], rd<uint32_t>(fp, 0), KnownNoCount{})) return false;
  wr<uint32_t>(fp, 0, t.result);
  return true;
}

// Counted code's libc ops ([op skip G H base], vm/counted_ops.def): the
// translated body, counting the blocks it enters into the frame's counters
// from `base`. Where it fails, everything it wrote is back as it was (or,
// for a KnownDirect, rewritten alike by the body: the same bytes), so a
// second run from the same state takes the same path to the same failure:
// run subtracting, it takes its counts back, and the body counts itself.
template <class Make, class F>
__attribute__((always_inline)) inline bool run_known_counted(Make make, uint64_t* c, uint64_t* fp,
                                                             bool result, F body) {
  auto t = make();
  if (__builtin_expect(body(t, KnownCount{c, 1}), 1)) {
    if (result) wr<uint32_t>(fp, 0, t.result);
    return true;
  }
  auto again = make();
  body(again, KnownCount{c, ~uint64_t{0}});
  return false;
}
__attribute__((noinline)) bool libc_dlfree_counted(uint8_t* mem, uint64_t memsize, GlobalInst* g0,
                                                   const uint32_t* ip, uint64_t* fp, uint64_t* counters) {
  const uint32_t G = ip[2], H = ip[3], p = rd<uint32_t>(fp, 0);
  return run_known_counted([&] { return KnownTxn(mem, memsize, g0); }, counters + ip[4], fp, false,
                           [&](KnownTxn& t, KnownCount c) { return known_dlfree(t, G, H, p, c); });
}
__attribute__((noinline)) bool libc_dlmalloc_counted(uint8_t* mem, uint64_t memsize, GlobalInst* g0,
                                                     const uint32_t* ip, uint64_t* fp, uint64_t* counters) {
  const uint32_t G = ip[2], H = ip[3], p = rd<uint32_t>(fp, 0);
  return run_known_counted([&] { return KnownTxn(mem, memsize, g0); }, counters + ip[4], fp, true,
                           [&](KnownTxn& t, KnownCount c) { return known_dlmalloc(t, G, H, p, c); });
}
// memcpy: what libc.memcpy asks (ranges in memory with room past them, not
// overlapping: the body's stores change nothing it reads, and nothing fails).
__attribute__((noinline)) bool libc_memcpy_counted(uint8_t* mem, uint64_t memsize, const uint32_t* ip,
                                                   uint64_t* fp, uint64_t* counters) {
  const uint32_t d = rd<uint32_t>(fp, 0), s = rd<uint32_t>(fp, 1), n = rd<uint32_t>(fp, 2);
  const uint64_t d64 = d, s64 = s, n64 = n;
  if (d64 + n64 + 16 > memsize || s64 + n64 + 16 > memsize || (d64 < s64 + n64 && s64 < d64 + n64))
    return false;
  return run_known_counted(
      [&] {
        return KnownDirect{{mem, memsize}};
      },
      counters + ip[4], fp, true,
      [&](KnownDirect& t, KnownCount c) { return known_memcpy(t, 0, 0, d, s, n, c); });
}
__attribute__((noinline)) bool libc_memset_counted(uint8_t* mem, uint64_t memsize, const uint32_t* ip,
                                                   uint64_t* fp, uint64_t* counters) {
  const uint32_t d = rd<uint32_t>(fp, 0), v = rd<uint32_t>(fp, 1), n = rd<uint32_t>(fp, 2);
  if (uint64_t{d} + n > memsize) return false;
  return run_known_counted(
      [&] {
        return KnownDirect{{mem, memsize}};
      },
      counters + ip[4], fp, true,
      [&](KnownDirect& t, KnownCount c) { return known_memset(t, 0, 0, d, v, n, c); });
}
__attribute__((noinline)) bool libc_memcmp_counted(uint8_t* mem, uint64_t memsize, const uint32_t* ip,
                                                   uint64_t* fp, uint64_t* counters) {
  const uint32_t a = rd<uint32_t>(fp, 0), b = rd<uint32_t>(fp, 1), n = rd<uint32_t>(fp, 2);
  return run_known_counted(
      [&] {
        return KnownDirect{{mem, memsize}};
      },
      counters + ip[4], fp, true,
      [&](KnownDirect& t, KnownCount c) { return known_memcmp(t, 0, 0, a, b, n, c); });
}
__attribute__((noinline)) bool libc_strlen_counted(uint8_t* mem, uint64_t memsize, const uint32_t* ip,
                                                   uint64_t* fp, uint64_t* counters) {
  const uint32_t a = rd<uint32_t>(fp, 0);
  return run_known_counted(
      [&] {
        return KnownDirect{{mem, memsize}};
      },
      counters + ip[4], fp, true, [&](KnownDirect& t, KnownCount c) { return known_strlen(t, 0, 0, a, c); });
}

// x*y + c as Go's mulAddWWW_g computes it (vm/known_bodies.def): Mul64's
// 128-bit product (hi, lo), then z0 = lo + c with math/bits.Add64's carry
// (add64_carry) into z1 = hi + carry.
__attribute__((always_inline)) inline uint64_t add64_carry(uint64_t a, uint64_t b, uint64_t sum) {
  return ((a & b) | ((a | b) & ~sum)) >> 63;
}
struct GoMulAdd {
  uint64_t hi, lo, z1, z0;
};
__attribute__((always_inline)) inline GoMulAdd go_mul_add(uint64_t x, uint64_t y, uint64_t c) {
  const unsigned __int128 p = static_cast<unsigned __int128>(x) * y;
  const auto hi = static_cast<uint64_t>(p >> 64), lo = static_cast<uint64_t>(p);
  return {hi, lo, hi + add64_carry(lo, c, lo + c), lo + c};
}

// What Go's mulAddWWW_g (vm/known_bodies.def) leaves on the stack at s,
// its sp0 (go.mul_add_www, and the slice loops' last call of it): the
// return address k it pushes before Mul64 at s-40, Mul64's arguments x and y
// at s-32 and s-24 and its halves at s-16 and s-8, its results z1 and z0 at
// s+32 and s+40.
__attribute__((always_inline)) inline void go_mul_add_www_leaves(uint8_t* s, uint64_t k, uint64_t x,
                                                                 uint64_t y, uint64_t hi, uint64_t lo,
                                                                 uint64_t z1, uint64_t z0) {
  std::memcpy(s - 40, &k, 8);
  std::memcpy(s - 32, &x, 8);
  std::memcpy(s - 24, &y, 8);
  std::memcpy(s - 16, &hi, 8);
  std::memcpy(s - 8, &lo, 8);
  std::memcpy(s + 32, &z1, 8);
  std::memcpy(s + 40, &z0, 8);
}

// math/big's slice loops run as one op (go.add_mul_vvw, go.mul_add_vww;
// vm/known_bodies.def), whose arguments lie alike on Go's stack at sp: z
// (pointer, length, capacity) at sp+8, x at sp+32, y at sp+56. Reads them
// into `l` and says whether the op may run the loop as the body would: the
// stack words the body and its callee touch (sp-below to sp+above) and the
// guard's word (the i32 at global 2's value + 16) in memory 0, the body's
// stack check passing and, when the loop runs (n > 0, n the shorter
// length, signed), its callee's at sp-callee_below too, both slices' n
// words in memory 0 and clear of those stack words, z clear of the guard:
// so every iteration reads what the body's would.
struct GoSliceLoop {
  uint64_t zp, xp, y, n;
};
__attribute__((always_inline)) inline bool go_slice_loop(const uint8_t* mem, uint64_t memsize, uint32_t sp,
                                                         uint32_t gp, uint32_t below, uint32_t above,
                                                         uint32_t callee_below, GoSliceLoop& l) {
  if (sp < below || uint64_t{sp} + above > memsize || uint64_t{gp} + 20 > memsize) return false;
  uint32_t guard;
  std::memcpy(&guard, mem + gp + 16, 4);
  uint64_t lenz, lenx;
  std::memcpy(&l.zp, mem + sp + 8, 8);
  std::memcpy(&lenz, mem + sp + 16, 8);
  std::memcpy(&l.xp, mem + sp + 32, 8);
  std::memcpy(&lenx, mem + sp + 40, 8);
  std::memcpy(&l.y, mem + sp + 56, 8);
  const auto lz = static_cast<int64_t>(lenz), lx = static_cast<int64_t>(lenx);
  const uint64_t n = l.n = lz <= 0 || lx <= 0 ? 0 : static_cast<uint64_t>(std::min(lz, lx));
  if (sp <= guard) return false;
  if (n == 0) return true;
  const uint64_t stack_lo = sp - below, stack_hi = uint64_t{sp} + above;
  auto clear = [&](uint64_t p) {
    return p <= memsize && n <= (memsize - p) / 8 && (p + 8 * n <= stack_lo || p >= stack_hi);
  };
  return sp - callee_below > guard && clear(l.xp) && clear(l.zp) &&
         !(l.zp < uint64_t{gp} + 20 && l.zp + 8 * n > uint64_t{gp} + 16);
}

// The callee's CompiledFunc that a call_func or call_local.counted at `ip`
// carries in its words 3 and 4 (kCallFuncWords, Emitter::pointer_words).
__attribute__((always_inline)) inline const CompiledFunc& code_at(const uint32_t* ip) {
  const CompiledFunc* code;
  std::memcpy(&code, ip + 3, sizeof code);
  return *code;
}

// Calls wasm function `callee`, whose code is `code`, with its frame at
// `nfp`, once its frame fits: call() for a callee known to be wasm code.
template <Mode kMode, CallSite kSite>
__attribute__((always_inline)) inline CallEnd call_wasm(const CallEnv& env, Regs& r, FuncInst* callee,
                                                        const CompiledFunc& code, uint64_t* nfp,
                                                        const uint32_t* next, uint32_t kid) {
  Frame* const frame = r.frame;
  // The depth limit and the value stack in one compare (Frame::callee_limit).
  if (__builtin_expect(nfp + code.frame_slots > frame->callee_limit, 0)) {
    // Perhaps a counted stub: the trap path lowers it and runs the call
    // again (Thread::unfit).
    if constexpr (kMode == Mode::Counted) env.th.unfit = callee;
    frame->ip = next;
    return CallEnd::StackExhausted;
  }
  enter_callee<kMode, kSite>(env, r, callee, code, nfp, next, kid);
  return CallEnd::Entered;
}

// Calls `callee` with its frame (its arguments first) at `nfp`; the caller
// resumes at `next`. A host callee goes through the host boundary, a wasm
// one is entered (enter_callee).
template <Mode kMode, CallSite kSite>
__attribute__((always_inline)) inline CallEnd call(const CallEnv& env, Regs& r, FuncInst* callee,
                                                   uint64_t* nfp, const uint32_t* next, uint32_t kid) {
  Frame* const frame = r.frame;
  if (!(kSite.local || kSite.own) && callee->is_host()) {
    frame->ip = next;
    env.th.depth = static_cast<uint32_t>(frame - env.frames) + 1;
    bool ok;
    if (env.profiled) ok = host_boundary_profiled(env.th, callee, nfp, env.host_trap, env.nc, frame);
    else ok = host_boundary(env.store, env.th, r.inst, callee, nfp, env.host_trap);
    env.th.top = env.saved_top;
    if (__builtin_expect(!ok, 0)) return CallEnd::HostTrap;
    r.load_memory();
    r.ip = next;
    return CallEnd::HostReturned;
  }
  return call_wasm<kMode, kSite>(env, r, callee, *callee->code, nfp, next, kid);
}

// return_call: wasm function `callee` takes over the current frame, its
// arguments (`nargs` slots at `args`) moved down to fp[0..]. The profilers
// see the caller replaced: the plain loop finds the node by walking the
// frames, the counting loop gives the frame the callee's node under the
// caller's parent. Host callees, and hooked ones when profiling, cannot
// take over a frame: they are called as usual and resume at `ret_ip`, a
// `ret` that returns their results.
template <Mode kMode>
__attribute__((always_inline)) inline CallEnd tail_call(const CallEnv& env, Regs& r, FuncInst* callee,
                                                        uint64_t* args, uint32_t nargs,
                                                        const uint32_t* ret_ip) {
  if (callee->is_host()) return call<kMode, CallSite{}>(env, r, callee, args, ret_ip, kNoKid);
  if (env.profiled && callee->call_hook)
    return call<kMode, CallSite{.hooked = true}>(env, r, callee, args, ret_ip, kNoKid);
  Profiling* const prof = env.prof;
  Frame* const frame = r.frame;
  const CompiledFunc* code = callee->code;
  if (__builtin_expect(r.fp + code->frame_slots > env.stack_end, 0)) {
    if constexpr (kMode == Mode::Counted) env.th.unfit = callee;  // as call()'s
    return CallEnd::TailStackExhausted;
  }
  std::memmove(r.fp, args, nargs * sizeof(uint64_t));
  init_frame(r.fp, *code);
  frame->func = callee;
  r.ip = code->code.data();
  if (callee->instance != r.inst) {
    r.inst = callee->instance;
    r.load_memory();
    // the frame may now be of another instance than its caller's
    frame->ret_check = 1;
  }
  if constexpr (kMode == Mode::Counted) {
    // the caller's frame still resumes after the call that entered the
    // replaced frame: the callee shows under that call site
    r.counters = frame->counters =
        frame == env.entry
            ? prof->enter_counted(env.th.entry_node, callee, nullptr)
            : prof->enter_counted(Profiling::block_node(frame[-1].counters), callee, resume_ip(frame - 1));
  } else if (frame == env.entry || frame[-1].ip != kHookedReturnStub) {
    // the caller's cached node is not the callee's; a hooked frame keeps its
    // node for the hooked return
    frame->node = kUnknownNode;
  }
  return CallEnd::TookOver;
}

// Never inlined or cloned: the profiling loops keep the addresses of their
// labels in Profiling::dispatch, which must stay those of the one copy.
// Page-aligned: where a loop's code starts within a page changes its speed
// by up to 18% at the same instruction counts (branch prediction and the op
// cache see addresses), and without the alignment any change elsewhere in
// the binary moved it (docs/RATIONALE.md, "Profiling overhead").
#if defined(__clang__)
#define WZVM_NOCLONE __attribute__((noinline, aligned(4096)))
#else
#define WZVM_NOCLONE __attribute__((noinline, noclone, aligned(4096)))
#endif
// The loop's values that most handlers read, each named to a callee-saved
// register of its own (GCC on x86-64; elsewhere plain locals): the
// dispatch table and memory 0's base and size, and the instance (the
// counting loop: its counters, below). Left to
// itself GCC kept the thread and a bool in callee-saved registers and the
// memory base and size in stack slots, two loads in every load and store
// handler, whatever the profile (-fprofile-use chose the same), and each
// op added to the loop moved `inst` or `fp` between a register and a slot
// (docs/RATIONALE.md, "The loop's registers are named"). ip and fp stay
// unnamed: GCC allocates them to the two registers left, and naming them
// too made it use theirs as scratch and copy them about.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(WZVM_SWITCH_DISPATCH)
#define WZVM_IN_REG(type, name, reg) register type name asm(reg)
#else
#define WZVM_IN_REG(type, name, reg) type name
#endif

template <Mode kMode>
WZVM_NOCLONE Trap run(Store& store, Thread& th, FuncInst* func, uint64_t* args) {
  constexpr bool kCounting = kMode == Mode::Counted;
  // Null only in the plain loop with nothing attached: then no sample, host
  // call or allocation hook is reported. Tested per call into the host, per
  // hooked call and per entry, never per instruction.
  Profiling* const prof = th.profiling;
  const bool profiled = kCounting || prof != nullptr;

  Frame* const frames = th.frames.data();
  Frame* const entry = frames + th.depth;
  Frame* const frame_limit = frames + th.max_depth;
  uint64_t* const stack_end = th.stack_end;
  const uint32_t saved_depth = th.depth;
  uint64_t* const saved_top = th.top;

  Frame* frame = entry;
  // Counting loop: the top frame's run counters (frame->counters), kept in a
  // local so that a CountInstr does not load the frame first. That loop has
  // seven hot values for six callee-saved registers; r13 holds `counters`
  // there (every counted jump, switch and call reads them) and the instance
  // (globals, tables) goes to a slot, where the plain loop names `inst`
  // (docs/RATIONALE.md, "The loop's registers are named").
#if defined(WZVM_INTERP_COUNTED_LOOP)
  WZVM_IN_REG(uint64_t*, counters, "r13") = nullptr;
  Instance* inst;
#else
  [[maybe_unused]] uint64_t* counters = nullptr;
  WZVM_IN_REG(Instance*, inst, "r13");
#endif
  [[maybe_unused]] const NodeContext nc{entry, th.entry_node, kCounting, &store};
  const uint32_t* ip;
  uint64_t* fp;
  MemInst* memory;
  WZVM_IN_REG(uint8_t*, mem, "r14");
  WZVM_IN_REG(uint64_t, memsize, "r15");
  TrapCode trap_code = TrapCode::None;
  uint64_t exn = 0;  // exception-handling: the exception being thrown (number)
  Trap host_trap;
  bool trap_in_call = false;

  // The call paths' constants (CallEnv).
  const CallEnv env{.store = store,
                    .th = th,
                    .prof = prof,
                    .profiled = profiled,
                    .nc = nc,
                    .frames = frames,
                    .entry = entry,
                    .stack_end = stack_end,
                    .saved_top = saved_top,
                    .host_trap = host_trap};

  // The size is an atomic acquire load (MemInst::current_size; a plain load
  // on x86-64): another thread may grow a shared memory meanwhile.
#define LOAD_MEM()                                                 \
  do {                                                             \
    memory = inst->memories.empty() ? nullptr : inst->memories[0]; \
    mem = memory ? memory->data : nullptr;                         \
    memsize = memory ? memory->current_size() : 0;                 \
  } while (0)
#define TRAP(code)      \
  do {                  \
    trap_code = (code); \
    goto on_trap;       \
  } while (0)
  // The profiling loops take a pending sample before the next instruction:
  // the switch-dispatch build tests the flag at every dispatch, the
  // computed-goto one only where raise() sent it (poll_sample). Not at the
  // stub of a hooked return, which is in no function: at the op after it.
#define SAFE_POINT()                                                                       \
  do {                                                                                     \
    if (__builtin_expect(poll_flag(prof->sample_pending), 0) && ip != kHookedReturnStub && \
        take_sample(*prof, nc, frame, ip))                                                 \
      TRAP(TrapCode::Interrupted);                                                         \
  } while (0)
  // A jump by `off` words. Lowering gives every backward jump, a loop's
  // back-edge, its own op (FunctionCompiler::patch; vm/internal_ops.def says
  // why); br_table's targets go either way. They all jump alike: no jump
  // polls for samples (a loop that never leaves still dispatches). Counted
  // code's jumps count their edges themselves (vm/counted_ops.def).
#define JUMP_BY(off)                 \
  do {                               \
    ip += static_cast<int32_t>(off); \
  } while (0)
// The second half of a pair whose first op, `len` words, is followed by a
// jump_if (taken: true) or jump_unless [op cond offset]: the jump read from
// its own words, its offset relative to its op word (copy+jump_if, ...).
#define THEN_COND_JUMP(len, taken)                          \
  do {                                                      \
    if ((rd<uint32_t>(fp, ip[(len) + 1]) != 0) == (taken))  \
      JUMP_BY((len) + static_cast<int32_t>(ip[(len) + 2])); \
    else ip += (len) + 3;                                   \
    DISPATCH();                                             \
  } while (0)

  {
    // A counted module's stub, entered from the host (see on_trap).
    if (func->code->frame_slots == CompiledFunc::kUnlowered) {
      Trap t;
      if (!lower_lazily(func, t)) return t;
    }
    const CompiledFunc* code = func->code;
    if (entry >= frame_limit || args + code->frame_slots > stack_end) {
      Trap t = Trap::make(TrapCode::StackExhausted);
      return t;
    }
    init_frame(args, *code);
    frame->func = func;
    frame->fp = args;
    frame->ip = nullptr;
    fp = args;
    ip = code->code.data();
    inst = func->instance;
    LOAD_MEM();
    // Time the embedder spent before this entry is not guest time.
    if (profiled && saved_depth == 0 && prof->cpu) prof->cpu_mark = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    // its return leaves the loop (Ret)
    fresh_frame(frame, true);
    if constexpr (kCounting) counters = frame->counters = prof->enter_counted(th.entry_node, func, nullptr);
  }

  // The registers, copied for a call path (Regs).
#define REGS() (Regs{ip, fp, frame, counters, inst, memory, mem, memsize})
  // A call op's end: the registers `r` the call path moved go back into the
  // locals, and the loop goes on at ip, or traps at the call or at the op,
  // as the call path's CallEnd says.
#define END_CALL(r, ...)                \
  do {                                  \
    const CallEnd end_ = (__VA_ARGS__); \
    ip = (r).ip;                        \
    fp = (r).fp;                        \
    frame = (r).frame;                  \
    counters = (r).counters;            \
    inst = (r).inst;                    \
    memory = (r).memory;                \
    mem = (r).mem;                      \
    memsize = (r).memsize;              \
    switch (end_) {                     \
      case CallEnd::Entered:            \
        DISPATCH();                     \
      case CallEnd::HostReturned:       \
        DISPATCH();                     \
      case CallEnd::TookOver:           \
        DISPATCH();                     \
      case CallEnd::HostTrap:           \
        trap_in_call = true;            \
        goto on_host_trap;              \
      case CallEnd::StackExhausted:     \
        trap_in_call = true;            \
        TRAP(TrapCode::StackExhausted); \
      case CallEnd::TailStackExhausted: \
        TRAP(TrapCode::StackExhausted); \
    }                                   \
    __builtin_unreachable();            \
  } while (0)

#if defined(WZVM_SWITCH_DISPATCH)
#define CASE(Name) case static_cast<uint32_t>(IOp::Name):
// A case label cannot sit inside an `if constexpr`, so every loop has the
// counted-only and plain-only ops' cases; the loops without the op leave
// at once for the report, and clang emits no code for the unreachable
// body after the goto. That keeps the sanitizer build's compile of this
// file from growing with the ops (the switch function's size is what its
// analyses are superlinear in).
#define CASE_COUNTED(Name) \
  CASE(Name)               \
  if constexpr (!kCounting) goto unlowered_op;
#define CASE_PLAIN(Name) \
  CASE(Name)             \
  if constexpr (kCounting) goto unlowered_op;
#define DISPATCH() goto dispatch
dispatch:
  WZVM_COUNT_OP_(*ip);
  if (profiled) SAFE_POINT();
  switch (*ip) {
#else
#define CASE(Name) L_##Name:
#define CASE_COUNTED(Name) L_##Name:
// An op only plain code has (WZVM_PLAIN_IOP): the counting loop has no
// handler for it (the body after the goto is unreachable there), so the
// op leaves that loop's code, and GCC's allocation of it, as they were.
#define CASE_PLAIN(Name) L_##Name : if constexpr (kCounting) goto unlowered_op;
  // Through `labels`: kLabels when nothing profiles, else the loop's table in
  // Profiling::dispatch, which raise() may change at any time (an atomic
  // load: a plain move on x86-64).
#if defined(WZVM_COUNT_OP_PAIRS)
#define DISPATCH()                                         \
  do {                                                     \
    WZVM_COUNT_OP_(*ip);                                   \
    goto* __atomic_load_n(&labels[*ip], __ATOMIC_RELAXED); \
  } while (0)
#else
#define DISPATCH() goto* __atomic_load_n(&labels[*ip], __ATOMIC_RELAXED)
#endif
  static const void* const kLabels[] = {
#define WZVM_COUNTED_LABEL_(Name) &&L_Else
#include "vm/interp_labels.inc"
#undef WZVM_COUNTED_LABEL_
  };
  static_assert(std::size(kLabels) == static_cast<size_t>(IOp::Count));
  // Ops of code counted without fuel (vm/counted_ops.def) have handlers in
  // the counting loop only, which dispatches through its table, filled from
  // kCountedLabels; kLabels, the plain loop's, sends them to the
  // unlowered-instruction report. So the plain loop's code is what it was
  // before these ops existed: where its handlers sit decides their speed
  // (docs/RATIONALE.md, "Profiling overhead").
  const void* const* table_labels = kLabels;  // what the profiling table holds when not polling
  if constexpr (kCounting) {
    static const void* const kCountedLabels[] = {
#define WZVM_COUNTED_LABEL_(Name) &&L_##Name
#include "vm/interp_labels.inc"
#undef WZVM_COUNTED_LABEL_
    };
    table_labels = kCountedLabels;
  }
  WZVM_IN_REG(const void* const*, labels, "r12") = kLabels;
  if (profiled) {
    // The first entry fills the loop's table and publishes it; a raise()
    // that came before could not patch it, so the flag is tested here.
    Profiling::DispatchTable& table = prof->dispatch[kCounting ? 1 : 0];
    if (!__atomic_load_n(&table.poll, __ATOMIC_ACQUIRE))
      publish_dispatch(table, table_labels, static_cast<size_t>(IOp::Count), &&poll_sample);
    labels = table.entries;
    SAFE_POINT();
  }
  DISPATCH();
  {
#endif

    // ---- Unary, Binary, Load and Store rows of the opcode table.
#define WZVM_GEN_Special(Name, R, P1, P2, Extra)
#define WZVM_GEN_Unary(Name, R, P1, P2, F)                 \
  CASE(Name) {                                             \
    TrapCode t = unary<num::F, C_##R, C_##P1>(fp, ip);     \
    if (__builtin_expect(t != TrapCode::None, 0)) TRAP(t); \
    ip += 3;                                               \
    DISPATCH();                                            \
  }
#define WZVM_GEN_Binary(Name, R, P1, P2, F)                     \
  CASE(Name) {                                                  \
    TrapCode t = binary<num::F, C_##R, C_##P1, C_##P2>(fp, ip); \
    if (__builtin_expect(t != TrapCode::None, 0)) TRAP(t);      \
    ip += 4;                                                    \
    DISPATCH();                                                 \
  }
    // Bounds: the effective address is computed in 64 bits, so address +
    // offset + size cannot wrap.
#define WZVM_GEN_Load(Name, R, P1, P2, T)                                                 \
  CASE(Name) {                                                                            \
    uint64_t ea = static_cast<uint64_t>(rd<uint32_t>(fp, ip[2])) + ip[3];                 \
    if (__builtin_expect(ea + sizeof(T) > memsize, 0)) TRAP(TrapCode::MemoryOutOfBounds); \
    T v;                                                                                  \
    std::memcpy(&v, mem + ea, sizeof(T));                                                 \
    wr<C_##R>(fp, ip[1], static_cast<C_##R>(v));                                          \
    ip += 4;                                                                              \
    DISPATCH();                                                                           \
  }
#define WZVM_GEN_Store(Name, R, P1, P2, T)                                                \
  CASE(Name) {                                                                            \
    uint64_t ea = static_cast<uint64_t>(rd<uint32_t>(fp, ip[1])) + ip[3];                 \
    if (__builtin_expect(ea + sizeof(T) > memsize, 0)) TRAP(TrapCode::MemoryOutOfBounds); \
    T v = static_cast<T>(rd<C_##P2>(fp, ip[2]));                                          \
    std::memcpy(mem + ea, &v, sizeof(T));                                                 \
    ip += 4;                                                                              \
    DISPATCH();                                                                           \
  }
    // threads: atomic accesses, natural alignment checked before bounds (as
    // the proposal's reference interpreter does), then one sequentially
    // consistent __atomic operation on the guest's bytes.
#define WZVM_ATOMIC_EA_(T, addr_word, offset_word)                                        \
  uint64_t ea = static_cast<uint64_t>(rd<uint32_t>(fp, ip[addr_word])) + ip[offset_word]; \
  if (__builtin_expect(ea & (sizeof(T) - 1), 0)) TRAP(TrapCode::UnalignedAtomic);         \
  if (__builtin_expect(ea + sizeof(T) > memsize, 0)) TRAP(TrapCode::MemoryOutOfBounds);   \
  T* p = reinterpret_cast<T*>(mem + ea)
#define WZVM_GEN_AtomicLoad(Name, R, P1, P2, T)                                     \
  CASE(Name) {                                                                      \
    WZVM_ATOMIC_EA_(T, 2, 3);                                                       \
    wr<C_##R>(fp, ip[1], static_cast<C_##R>(__atomic_load_n(p, __ATOMIC_SEQ_CST))); \
    ip += 4;                                                                        \
    DISPATCH();                                                                     \
  }
#define WZVM_GEN_AtomicStore(Name, R, P1, P2, T)                                  \
  CASE(Name) {                                                                    \
    WZVM_ATOMIC_EA_(T, 1, 3);                                                     \
    __atomic_store_n(p, static_cast<T>(rd<C_##P2>(fp, ip[2])), __ATOMIC_SEQ_CST); \
    ip += 4;                                                                      \
    DISPATCH();                                                                   \
  }
#define WZVM_GEN_AtomicRmw(Name, R, P1, P2, F)                  \
  CASE(Name) {                                                  \
    using T = F::type;                                          \
    WZVM_ATOMIC_EA_(T, 2, 4);                                   \
    T old = F::apply(p, static_cast<T>(rd<C_##P2>(fp, ip[3]))); \
    wr<C_##R>(fp, ip[1], static_cast<C_##R>(old));              \
    ip += 5;                                                    \
    DISPATCH();                                                 \
  }
    // The expected value is wrapped to the access width, like the replacement.
#define WZVM_GEN_AtomicCmpxchg(Name, R, P1, P2, T)                                                      \
  CASE(Name) {                                                                                          \
    WZVM_ATOMIC_EA_(T, 2, 5);                                                                           \
    T old = static_cast<T>(rd<C_##R>(fp, ip[3]));                                                       \
    __atomic_compare_exchange_n(p, &old, static_cast<T>(rd<C_##R>(fp, ip[4])), false, __ATOMIC_SEQ_CST, \
                                __ATOMIC_SEQ_CST);                                                      \
    wr<C_##R>(fp, ip[1], static_cast<C_##R>(old));                                                      \
    ip += 6;                                                                                            \
    DISPATCH();                                                                                         \
  }
#define WZVM_OP(Name, prefix, code, text, K, R, P1, P2, Extra) WZVM_GEN_##K(Name, R, P1, P2, Extra)
#include "vm/opcodes.def"
#undef WZVM_OP

    // ---- Fused compare-and-branch: [op a b offset].
#define WZVM_GEN_FUSED_ONE_(Op, Name, R, P1, F, taken)        \
  CASE(Op##_##Name) {                                         \
    bool c;                                                   \
    TrapCode t = condition<num::F, C_##R, C_##P1>(fp, ip, c); \
    if (__builtin_expect(t != TrapCode::None, 0)) TRAP(t);    \
    if (c == (taken)) JUMP_BY(static_cast<int32_t>(ip[3]));   \
    else ip += 4;                                             \
    DISPATCH();                                               \
  }
#define WZVM_GEN_FUSED_(Name, R, P1, F)                  \
  WZVM_GEN_FUSED_ONE_(JumpIf, Name, R, P1, F, true)      \
  WZVM_GEN_FUSED_ONE_(JumpUnless, Name, R, P1, F, false) \
  WZVM_GEN_FUSED_ONE_(JumpIfBack, Name, R, P1, F, true)
#define WZVM_OP(Name, prefix, code, text, K, R, P1, P2, Extra) \
  WZVM_FUSED_ROW_(WZVM_GEN_FUSED_, Name, K, R, P1, Extra)
#include "vm/opcodes.def"
#undef WZVM_OP
#undef WZVM_GEN_FUSED_
#undef WZVM_GEN_FUSED_ONE_

    // ---- Loads at a + b + offset: [op dst a b offset], and at (x << k) + c +
    // offset: [op dst x k c offset] (vm/code.h). The address wraps to 32 bits
    // like the i32 arithmetic it replaces; the bounds check is the load's own.
    // The load at 32-bit address `addr` + ip[off], then ip += off + 1.
#define WZVM_LOAD_AT_(addr, off, R, T)                                                    \
  do {                                                                                    \
    uint64_t ea = static_cast<uint64_t>(addr) + ip[off];                                  \
    if (__builtin_expect(ea + sizeof(T) > memsize, 0)) TRAP(TrapCode::MemoryOutOfBounds); \
    T v;                                                                                  \
    std::memcpy(&v, mem + ea, sizeof(T));                                                 \
    wr<C_##R>(fp, ip[1], static_cast<C_##R>(v));                                          \
    ip += (off) + 1;                                                                      \
    DISPATCH();                                                                           \
  } while (0)
#define WZVM_GEN_LOADADD_(Name, R, T)                                                                    \
  CASE(LoadAdd_##Name) { WZVM_LOAD_AT_(rd<uint32_t>(fp, ip[2]) + rd<uint32_t>(fp, ip[3]), 4, R, T); }    \
  CASE(LoadShlAdd_##Name) {                                                                              \
    using Shl = BinaryFunctor<IOp::I32Shl>::F;                                                           \
    uint32_t a = Shl::template op<uint32_t, uint32_t>(rd<uint32_t>(fp, ip[2]), rd<uint32_t>(fp, ip[3])); \
    WZVM_LOAD_AT_(a + rd<uint32_t>(fp, ip[4]), 5, R, T);                                                 \
  }
#define WZVM_OP(Name, prefix, code, text, K, R, P1, P2, Extra) \
  WZVM_LOADADD_ROW_(WZVM_GEN_LOADADD_, Name, K, R, Extra)
#include "vm/opcodes.def"
#undef WZVM_OP
#undef WZVM_GEN_LOADADD_
    // ---- Stores at a + b + offset: [op v a b offset] (vm/code.h), the
    // address wrapped to 32 bits as the i32.add it replaces computed it; the
    // bounds check is the store's own.
#define WZVM_GEN_STOREADD_(Name, P2, T)                                                             \
  CASE(StoreAdd_##Name) {                                                                           \
    uint64_t ea = static_cast<uint64_t>(rd<uint32_t>(fp, ip[2]) + rd<uint32_t>(fp, ip[3])) + ip[4]; \
    if (__builtin_expect(ea + sizeof(T) > memsize, 0)) TRAP(TrapCode::MemoryOutOfBounds);           \
    T v = static_cast<T>(rd<C_##P2>(fp, ip[1]));                                                    \
    std::memcpy(mem + ea, &v, sizeof(T));                                                           \
    ip += 5;                                                                                        \
    DISPATCH();                                                                                     \
  }
#define WZVM_OP(Name, prefix, code, text, K, R, P1, P2, Extra) \
  WZVM_STOREADD_ROW_(WZVM_GEN_STOREADD_, Name, K, P2, Extra)
#include "vm/opcodes.def"
#undef WZVM_OP
#undef WZVM_GEN_STOREADD_
    // [load_add+load_add(I64Load) ...] [load_add(I64Load) ...] and the
    // stores alike (vm/internal_ops.def): the first access, then the
    // second's from its own words; a trap in the second is at its op word.
    CASE(LoadAddPair_I64Load) {
      for (int i = 0; i < 2; ++i) {
        const uint64_t ea = static_cast<uint64_t>(rd<uint32_t>(fp, ip[2]) + rd<uint32_t>(fp, ip[3])) + ip[4];
        if (__builtin_expect(ea + sizeof(uint64_t) > memsize, 0)) TRAP(TrapCode::MemoryOutOfBounds);
        uint64_t v;
        std::memcpy(&v, mem + ea, sizeof v);
        fp[ip[1]] = v;
        ip += 5;
      }
      DISPATCH();
    }
    CASE(I64MulAddLoad32U) {
      const uint64_t v = rd<uint64_t>(fp, ip[2]) * rd<uint64_t>(fp, ip[3]) + rd<uint64_t>(fp, ip[4]);
      fp[ip[1]] = v;
      ip += 5;  // the load's own op word: a trap is there
      const uint64_t ea = static_cast<uint64_t>(static_cast<uint32_t>(v)) + ip[3];
      if (__builtin_expect(ea + sizeof(uint32_t) > memsize, 0)) TRAP(TrapCode::MemoryOutOfBounds);
      uint32_t x;
      std::memcpy(&x, mem + ea, sizeof x);
      wr<uint64_t>(fp, ip[1], x);
      ip += 4;
      DISPATCH();
    }
    CASE(StoreAddPair_I64Store) {
      for (int i = 0; i < 2; ++i) {
        const uint64_t ea = static_cast<uint64_t>(rd<uint32_t>(fp, ip[2]) + rd<uint32_t>(fp, ip[3])) + ip[4];
        if (__builtin_expect(ea + sizeof(uint64_t) > memsize, 0)) TRAP(TrapCode::MemoryOutOfBounds);
        std::memcpy(mem + ea, &fp[ip[1]], sizeof(uint64_t));
        ip += 5;
      }
      DISPATCH();
    }
    // [load_add_imm(I32Load) dst a imm offset] (vm/internal_ops.def).
    CASE(LoadAddImm_I32Load) { WZVM_LOAD_AT_(rd<uint32_t>(fp, ip[2]) + ip[3], 4, I32, uint32_t); }
    // [load_and_shl_add(I32Load) dst x m k c offset] (vm/internal_ops.def).
    CASE(LoadAndShlAdd_I32Load) {
      using Shl = BinaryFunctor<IOp::I32Shl>::F;
      const uint32_t x = rd<uint32_t>(fp, ip[2]) & rd<uint32_t>(fp, ip[3]);
      const uint32_t a = Shl::template op<uint32_t, uint32_t>(x, rd<uint32_t>(fp, ip[4]));
      WZVM_LOAD_AT_(a + rd<uint32_t>(fp, ip[5]), 6, I32, uint32_t);
    }
#undef WZVM_LOAD_AT_
    // [i32.add+load_add(I32Load) d a b] [load_add(I32Load) d2 p q offset]
    // (vm/internal_ops.def): the add, then the load; a trap in the load is at
    // its own op word.
    CASE(I32AddLoadAdd_I32Load) {
      wr<uint32_t>(fp, ip[1], rd<uint32_t>(fp, ip[2]) + rd<uint32_t>(fp, ip[3]));
      const uint32_t pq = rd<uint32_t>(fp, ip[6]) + rd<uint32_t>(fp, ip[7]);
      const uint64_t ea = static_cast<uint64_t>(pq) + ip[8];
      if (__builtin_expect(ea + sizeof(uint32_t) > memsize, 0)) goto second_access_out_of_bounds;
      uint32_t v;
      std::memcpy(&v, mem + ea, sizeof v);
      wr<uint32_t>(fp, ip[5], v);
      ip += 9;
      DISPATCH();
    }
    // [i32.add+bin_load_add(F64Mul) d a b] [bin_load_add(F64Mul) d2 x p q
    // offset] (vm/internal_ops.def): the add, then the multiply; a trap in its
    // load is at its own op word.
    CASE(I32AddBinLoadAdd_F64Mul) {
      wr<uint32_t>(fp, ip[1], rd<uint32_t>(fp, ip[2]) + rd<uint32_t>(fp, ip[3]));
      const uint32_t pq = rd<uint32_t>(fp, ip[7]) + rd<uint32_t>(fp, ip[8]);
      const uint64_t ea = static_cast<uint64_t>(pq) + ip[9];
      if (__builtin_expect(ea + sizeof(double) > memsize, 0)) goto second_access_out_of_bounds;
      double b;
      std::memcpy(&b, mem + ea, sizeof b);
      using Mul = BinaryFunctor<IOp::F64Mul>::F;
      wr<double>(fp, ip[5], Mul::template op<double, double>(rd<double>(fp, ip[6]), b));
      ip += 10;
      DISPATCH();
    }
    // [rmw_add(I32) a c offset], [rmw_add.tee(I32) dst a c offset]
    // (vm/internal_ops.def): a trap is the load's, before anything is written.
    CASE(RmwAdd_I32) {
      uint32_t v;
      if (__builtin_expect(!rmw_add_i32<1>(fp, ip, mem, memsize, v), 0)) TRAP(TrapCode::MemoryOutOfBounds);
      ip += 4;
      DISPATCH();
    }
    CASE(RmwAddTee_I32) {
      uint32_t v;
      if (__builtin_expect(!rmw_add_i32<2>(fp, ip, mem, memsize, v), 0)) TRAP(TrapCode::MemoryOutOfBounds);
      wr<uint32_t>(fp, ip[1], v);
      ip += 5;
      DISPATCH();
    }
    // [i32.store+rmw_add(I32) a v off] [rmw_add(I32) a2 c off2]: a trap in
    // the rmw is at its own op word, nothing of it written.
    CASE(I32StoreRmwAdd_I32) {
      if (__builtin_expect(!mem_access<IOp::I32Store, 0>(fp, ip, mem, memsize), 0))
        TRAP(TrapCode::MemoryOutOfBounds);
      uint32_t v;
      if (__builtin_expect(!rmw_add_i32<5>(fp, ip, mem, memsize, v), 0)) goto second_access_out_of_bounds;
      ip += 8;
      DISPATCH();
    }
    // [rmw_add.tee(I32)+jump_if dst a c off] [jump_if cond offset], and
    // jump_unless: the rmw, then the jump from its own words.
#define WZVM_GEN_RMW_JUMP_(Name, taken)                                                                   \
  CASE(Name) {                                                                                            \
    uint32_t v;                                                                                           \
    if (__builtin_expect(!rmw_add_i32<2>(fp, ip, mem, memsize, v), 0)) TRAP(TrapCode::MemoryOutOfBounds); \
    wr<uint32_t>(fp, ip[1], v);                                                                           \
    THEN_COND_JUMP(5, taken);                                                                             \
  }
    WZVM_GEN_RMW_JUMP_(RmwAddTeeJumpIf_I32, true)
    WZVM_GEN_RMW_JUMP_(RmwAddTeeJumpUnless_I32, false)
#undef WZVM_GEN_RMW_JUMP_

    // ---- f64 arithmetic with a memory operand (vm/code.h):
    // [BinLoad_X dst a addr offset]: fp[dst] = a X f64 at addr + offset;
    // [StoreBin_X addr a b offset]: f64 at addr + offset = a X b.
#define WZVM_GEN_F64BIN_(Name, F)                                                                 \
  CASE(BinLoad_##Name) {                                                                          \
    uint64_t ea = static_cast<uint64_t>(rd<uint32_t>(fp, ip[3])) + ip[4];                         \
    if (__builtin_expect(ea + sizeof(double) > memsize, 0)) TRAP(TrapCode::MemoryOutOfBounds);    \
    double b;                                                                                     \
    std::memcpy(&b, mem + ea, sizeof(double));                                                    \
    wr<double>(fp, ip[1], num::F::template op<double, double>(rd<double>(fp, ip[2]), b));         \
    ip += 5;                                                                                      \
    DISPATCH();                                                                                   \
  }                                                                                               \
  CASE(StoreBin_##Name) {                                                                         \
    uint64_t ea = static_cast<uint64_t>(rd<uint32_t>(fp, ip[1])) + ip[4];                         \
    if (__builtin_expect(ea + sizeof(double) > memsize, 0)) TRAP(TrapCode::MemoryOutOfBounds);    \
    double v = num::F::template op<double, double>(rd<double>(fp, ip[2]), rd<double>(fp, ip[3])); \
    std::memcpy(mem + ea, &v, sizeof(double));                                                    \
    ip += 5;                                                                                      \
    DISPATCH();                                                                                   \
  }                                                                                               \
  /* [StoreBinLoad_X saddr a laddr loffset soffset]: a trap in the store is */                    \
  /* reported at word 5, where lowering put the store's source offset and */                      \
  /* count mark (the op's own are the load's). */                                                 \
  CASE(StoreBinLoad_##Name) {                                                                     \
    uint64_t la = static_cast<uint64_t>(rd<uint32_t>(fp, ip[3])) + ip[4];                         \
    if (__builtin_expect(la + sizeof(double) > memsize, 0)) TRAP(TrapCode::MemoryOutOfBounds);    \
    double b;                                                                                     \
    std::memcpy(&b, mem + la, sizeof(double));                                                    \
    double v = num::F::template op<double, double>(rd<double>(fp, ip[2]), b);                     \
    uint64_t sa = static_cast<uint64_t>(rd<uint32_t>(fp, ip[1])) + ip[5];                         \
    if (__builtin_expect(sa + sizeof(double) > memsize, 0)) {                                     \
      ip += 5;                                                                                    \
      TRAP(TrapCode::MemoryOutOfBounds);                                                          \
    }                                                                                             \
    std::memcpy(mem + sa, &v, sizeof(double));                                                    \
    ip += 6;                                                                                      \
    DISPATCH();                                                                                   \
  }                                                                                               \
  /* [BinLoadAdd_X dst a p q offset]: the load at p + q (wrapped), as */                          \
  /* LoadAdd_F64Load's; a trap is the load's, at the op. */                                       \
  CASE(BinLoadAdd_##Name) {                                                                       \
    const uint32_t pq = rd<uint32_t>(fp, ip[3]) + rd<uint32_t>(fp, ip[4]);                        \
    uint64_t ea = static_cast<uint64_t>(pq) + ip[5];                                              \
    if (__builtin_expect(ea + sizeof(double) > memsize, 0)) TRAP(TrapCode::MemoryOutOfBounds);    \
    double b;                                                                                     \
    std::memcpy(&b, mem + ea, sizeof(double));                                                    \
    wr<double>(fp, ip[1], num::F::template op<double, double>(rd<double>(fp, ip[2]), b));         \
    ip += 6;                                                                                      \
    DISPATCH();                                                                                   \
  }
#define WZVM_OP(Name, prefix, code, text, K, R, P1, P2, Extra) \
  WZVM_F64BIN_ROW_(WZVM_GEN_F64BIN_, Name, K, R, Extra)
#include "vm/opcodes.def"
#undef WZVM_OP
#undef WZVM_GEN_F64BIN_

    // ---- Chained i32 arithmetic (vm/chains.def): [op dst a b c].
#define WZVM_CHAIN(Name, First, Second, T, text)                                         \
  CASE(Name) {                                                                           \
    using F1 = BinaryFunctor<IOp::First>::F;                                             \
    using F2 = BinaryFunctor<IOp::Second>::F;                                            \
    static_assert(!F1::kTraps && !F2::kTraps, "a chained op cannot trap");               \
    C_##T t = F1::template op<C_##T, C_##T>(rd<C_##T>(fp, ip[2]), rd<C_##T>(fp, ip[3])); \
    wr<C_##T>(fp, ip[1], F2::template op<C_##T, C_##T>(t, rd<C_##T>(fp, ip[4])));        \
    ip += 5;                                                                             \
    DISPATCH();                                                                          \
  }
#include "vm/chains.def"
#undef WZVM_CHAIN

    // ---- Paired memory accesses (vm/mem_pairs.def): [op d1 a1 off1]
    // [Second d2 a2 off2], First's access then Second's. A trap in Second
    // is at Second's own op word (its source offset and count mark), where
    // one block shared by the pairs steps ip.
#define WZVM_MEM_PAIR(Name, First, Second, text)                                \
  CASE(Name) {                                                                  \
    if (__builtin_expect(!mem_access<IOp::First, 0>(fp, ip, mem, memsize), 0))  \
      TRAP(TrapCode::MemoryOutOfBounds);                                        \
    if (__builtin_expect(!mem_access<IOp::Second, 4>(fp, ip, mem, memsize), 0)) \
      goto second_access_out_of_bounds;                                         \
    ip += 8;                                                                    \
    DISPATCH();                                                                 \
  }
#include "vm/mem_pairs.def"
#undef WZVM_MEM_PAIR

    // ---- A load and the switch on its value (vm/switch_pairs.def): [op dst
    // ...load's operands] [switch dst n off0..off(n)], the load, then the
    // switch from its own op word on the value loaded. A trap is the load's,
    // at the op.
#define WZVM_SWITCH_PAIR(Name, First, Load, text)                                          \
  CASE(Name) {                                                                             \
    switch_pair_##Name : __attribute__((unused));                                          \
    static_assert(IOp::First == IOp::Load || IOp::First == IOp::LoadShlAdd_##Load ||       \
                  IOp::First == IOp::LoadAndShlAdd_I32Load);                               \
    uint32_t v;                                                                            \
    if (__builtin_expect(!switch_load<IOp::First, IOp::Load>(fp, ip, mem, memsize, v), 0)) \
      TRAP(TrapCode::MemoryOutOfBounds);                                                   \
    ip += switch_pair_load_words(IOp::First);                                              \
    JUMP_BY(switch_offset(ip, v));                                                         \
    DISPATCH();                                                                            \
  }
#include "vm/switch_pairs.def"
#undef WZVM_SWITCH_PAIR

    // ---- A step and the compare-and-branch after it (vm/step_jumps.def):
    // [op d a b] [Jump_Test x y offset], the step, then the test from the
    // jump's own op word, 4 words on.
#define WZVM_STEP_JUMP(Name, Step, Jump, Test, T, text)                                              \
  CASE(Name) {                                                                                       \
    using S = BinaryFunctor<IOp::Step>::F;                                                           \
    using C = BinaryFunctor<IOp::Test>::F;                                                           \
    static_assert(!S::kTraps && !C::kTraps, "a step and its test cannot trap");                      \
    wr<C_##T>(fp, ip[1], S::template op<C_##T, C_##T>(rd<C_##T>(fp, ip[2]), rd<C_##T>(fp, ip[3])));  \
    const bool c = C::template op<uint32_t, C_##T>(rd<C_##T>(fp, ip[5]), rd<C_##T>(fp, ip[6])) != 0; \
    ip += 4; /* the jump's op word: its offset is relative to it */                                  \
    if (c == (IOp::Jump##_##Test != IOp::JumpUnless_##Test)) JUMP_BY(static_cast<int32_t>(ip[3]));   \
    else ip += 4;                                                                                    \
    DISPATCH();                                                                                      \
  }
#include "vm/step_jumps.def"
#undef WZVM_STEP_JUMP

    // ---- A load and the compare-and-branch after it (vm/load_jumps.def):
    // [op dst a offset] [Jump_Test x y offset], the load (its trap at the
    // op), then the test from the jump's own op word, 4 words on.
#define WZVM_LOAD_JUMP(Name, Load, Jump, Test, text)                                               \
  CASE(Name) {                                                                                     \
    using C = BinaryFunctor<IOp::Test>::F;                                                         \
    static_assert(!C::kTraps && std::is_same_v<MemRow<IOp::Load>::Val, uint32_t>);                 \
    if (__builtin_expect(!mem_access<IOp::Load, 0>(fp, ip, mem, memsize), 0))                      \
      TRAP(TrapCode::MemoryOutOfBounds);                                                           \
    const bool c =                                                                                 \
        C::template op<uint32_t, uint32_t>(rd<uint32_t>(fp, ip[5]), rd<uint32_t>(fp, ip[6])) != 0; \
    ip += 4; /* the jump's op word: its offset is relative to it */                                \
    if (c == (IOp::Jump##_##Test != IOp::JumpUnless_##Test)) JUMP_BY(static_cast<int32_t>(ip[3])); \
    else ip += 4;                                                                                  \
    DISPATCH();                                                                                    \
  }
#include "vm/load_jumps.def"
#undef WZVM_LOAD_JUMP

    // ---- Integer arithmetic with a constant second operand (vm/code.h):
    // [Imm_X dst a imm], imm one word (i32) or two (i64, low first).
#define WZVM_GEN_IMM_(Name, R, P1)                                               \
  CASE(Imm_##Name) {                                                             \
    TrapCode t = binary_imm<BinaryFunctor<IOp::Name>::F, C_##R, C_##P1>(fp, ip); \
    if (__builtin_expect(t != TrapCode::None, 0)) TRAP(t);                       \
    ip += sizeof(C_##P1) == 8 ? 5 : 4;                                           \
    DISPATCH();                                                                  \
  }
#define WZVM_OP(Name, prefix, code, text, K, R, P1, P2, Extra) WZVM_IMM_ROW_(WZVM_GEN_IMM_, Name, K, R, P1)
#include "vm/opcodes.def"
#undef WZVM_OP
#undef WZVM_GEN_IMM_

    // ---- Moves and constants.
    CASE(Copy) {
      copies<1>(fp, ip);
      ip += 3;
      DISPATCH();
    }
    CASE(Copy2) {
      copies<2>(fp, ip);
      ip += 5;
      DISPATCH();
    }
    CASE(Copy3) {
      copies<3>(fp, ip);
      ip += 7;
      DISPATCH();
    }
    CASE(Copy4) {
      copies<4>(fp, ip);
      ip += 9;
      DISPATCH();
    }
    // [copy+jump d s][jump offset] and the conditional ones (vm/internal_ops.def):
    // the copy, then the jump (or its back form: the same code) read from the
    // jump's words, its offset relative to its own op word, 3 on.
    CASE(CopyJump) {
      copies<1>(fp, ip);
      JUMP_BY(3 + static_cast<int32_t>(ip[4]));
      DISPATCH();
    }
    CASE(CopyJumpIf) {
      copies<1>(fp, ip);
      THEN_COND_JUMP(3, true);
    }
    CASE(CopyJumpUnless) {
      copies<1>(fp, ip);
      THEN_COND_JUMP(3, false);
    }
    // [global.get+jump_if d g][jump_if cond offset], and unless: the global's
    // value into d, then the jump as copy+jump_if's.
    CASE(GlobalGetJumpIf) {
      fp[ip[1]] = inst->globals[ip[2]]->value;
      THEN_COND_JUMP(3, true);
    }
    CASE(GlobalGetJumpUnless) {
      fp[ip[1]] = inst->globals[ip[2]]->value;
      THEN_COND_JUMP(3, false);
    }
    // [i32.load+jump_if d a off][jump_if cond offset], and the others: the
    // load (its trap at the op), then the jump as copy+jump_if's.
#define WZVM_LOAD_THEN_JUMP_(Name, Load, taken)                               \
  CASE_PLAIN(Name) {                                                          \
    if (__builtin_expect(!mem_access<IOp::Load, 0>(fp, ip, mem, memsize), 0)) \
      TRAP(TrapCode::MemoryOutOfBounds);                                      \
    THEN_COND_JUMP(4, taken);                                                 \
  }
    WZVM_LOAD_THEN_JUMP_(I32LoadJumpIf, I32Load, true)
    WZVM_LOAD_THEN_JUMP_(I32LoadJumpUnless, I32Load, false)
    WZVM_LOAD_THEN_JUMP_(I32Load8UJumpUnless, I32Load8U, false)
#undef WZVM_LOAD_THEN_JUMP_
    // ---- Lua's shared tail (vm/internal_ops.def): [i32.add+jump d a b][jump
    // offset], the add, then the jump (or its back form) from its own words,
    // 4 on; [i32.load+shr_u+and+add d a off][i32.shr_u+and+add d2 x s m b],
    // the load (its trap at the op), then the decode, and with [jump offset]
    // 10 on, the jump after both.
    CASE(I32AddJump) {
      wr<uint32_t>(fp, ip[1], rd<uint32_t>(fp, ip[2]) + rd<uint32_t>(fp, ip[3]));
      JUMP_BY(4 + static_cast<int32_t>(ip[5]));
      DISPATCH();
    }
    CASE(I32LoadShrUAndAdd) {
      if (__builtin_expect(!mem_access<IOp::I32Load, 0>(fp, ip, mem, memsize), 0))
        TRAP(TrapCode::MemoryOutOfBounds);
      shr_u_and_add<4>(fp, ip);
      ip += 10;
      DISPATCH();
    }
    // [copy2+i32.add+jump d1 s1 d2 s2][i32.add+jump d a b][jump offset]: the
    // copies, the add 5 on, the jump 9 on.
    CASE(Copy2I32AddJump) {
      copies<2>(fp, ip);
      wr<uint32_t>(fp, ip[6], rd<uint32_t>(fp, ip[7]) + rd<uint32_t>(fp, ip[8]));
      JUMP_BY(9 + static_cast<int32_t>(ip[10]));
      DISPATCH();
    }
    // [i64.load+i64.store+i32.load8_u+i32.store8 ...] and the three accesses
    // after it, 4, 8 and 12 on: each in order, a trap at the op word of the
    // access that failed.
    CASE(I64CopyI8Copy) {
      if (__builtin_expect(!mem_access<IOp::I64Load, 0>(fp, ip, mem, memsize), 0))
        TRAP(TrapCode::MemoryOutOfBounds);
      if (__builtin_expect(!mem_access<IOp::I64Store, 4>(fp, ip, mem, memsize), 0))
        goto second_access_out_of_bounds;
      if (__builtin_expect(!mem_access<IOp::I32Load8U, 8>(fp, ip, mem, memsize), 0)) {
        ip += 4;
        goto second_access_out_of_bounds;
      }
      if (__builtin_expect(!mem_access<IOp::I32Store8, 12>(fp, ip, mem, memsize), 0)) {
        ip += 8;
        goto second_access_out_of_bounds;
      }
      ip += 16;
      DISPATCH();
    }
    CASE(I32LoadShrUAndAddJump) {
      if (__builtin_expect(!mem_access<IOp::I32Load, 0>(fp, ip, mem, memsize), 0))
        TRAP(TrapCode::MemoryOutOfBounds);
      shr_u_and_add<4>(fp, ip);
      JUMP_BY(10 + static_cast<int32_t>(ip[11]));
      DISPATCH();
    }
    // The three with their jump's target known (vm/internal_ops.def): its
    // code next, without a dispatch.
    // Each with its own copy of the tail and the switch (so its own jump
    // into the cases, as the copies-then-call ops, docs/RATIONALE.md).
// The instruction loaded, i, goes to the decode and to the switch's load
// in a register: pair_lua_tail made these ops only where both read the
// slot the load writes and the decode writes another, so that neither
// waits for the slot's store to reach its load.
#define WZVM_LUA_TAIL()                                                                               \
  do {                                                                                                \
    uint32_t i, v;                                                                                    \
    if (!load_at(mem, memsize, static_cast<uint64_t>(rd<uint32_t>(fp, ip[2])) + ip[3], i))            \
      TRAP(TrapCode::MemoryOutOfBounds);                                                              \
    wr<uint32_t>(fp, ip[1], i);                                                                       \
    shr_u_and_add_of<4>(fp, ip, i);                                                                   \
    JUMP_BY(10 + static_cast<int32_t>(ip[11]));                                                       \
    if (!load_at(mem, memsize, load_and_shl_add_ea(fp, ip, i), v)) TRAP(TrapCode::MemoryOutOfBounds); \
    wr<uint32_t>(fp, ip[1], v);                                                                       \
    ip += switch_pair_load_words(IOp::LoadAndShlAdd_I32Load);                                         \
    JUMP_BY(switch_offset(ip, v));                                                                    \
    DISPATCH();                                                                                       \
  } while (0)
    CASE_PLAIN(I32AddJumpTail) {
      wr<uint32_t>(fp, ip[1], rd<uint32_t>(fp, ip[2]) + rd<uint32_t>(fp, ip[3]));
      JUMP_BY(4 + static_cast<int32_t>(ip[5]));
      WZVM_LUA_TAIL();
    }
    CASE_PLAIN(Copy2I32AddJumpTail) {
      copies<2>(fp, ip);
      wr<uint32_t>(fp, ip[6], rd<uint32_t>(fp, ip[7]) + rd<uint32_t>(fp, ip[8]));
      JUMP_BY(9 + static_cast<int32_t>(ip[10]));
      WZVM_LUA_TAIL();
    }
    CASE_PLAIN(I32LoadShrUAndAddJumpSwitch) { WZVM_LUA_TAIL(); }
#undef WZVM_LUA_TAIL
    CASE(I32Add2) {
      wr<uint32_t>(fp, ip[1], rd<uint32_t>(fp, ip[2]) + rd<uint32_t>(fp, ip[3]));
      wr<uint32_t>(fp, ip[4], rd<uint32_t>(fp, ip[5]) + rd<uint32_t>(fp, ip[6]));
      ip += 7;
      DISPATCH();
    }
    // [i32.add+global.set d a b][global.set g src] (vm/internal_ops.def):
    // the add, then the global.set, in order; sub alike.
    CASE(I32AddGlobalSet) {
      wr<uint32_t>(fp, ip[1], rd<uint32_t>(fp, ip[2]) + rd<uint32_t>(fp, ip[3]));
      inst->globals[ip[5]]->value = fp[ip[6]];
      ip += 7;
      DISPATCH();
    }
    CASE(I32SubGlobalSet) {
      wr<uint32_t>(fp, ip[1], rd<uint32_t>(fp, ip[2]) - rd<uint32_t>(fp, ip[3]));
      inst->globals[ip[5]]->value = fp[ip[6]];
      ip += 7;
      DISPATCH();
    }
    // [global.get+i32.sub+global.set d g][i32.sub+global.set ...][global.set
    // ...]: the global.get, then the pair after it from its own words.
    CASE(GlobalGetI32SubGlobalSet) {
      fp[ip[1]] = inst->globals[ip[2]]->value;
      wr<uint32_t>(fp, ip[4], rd<uint32_t>(fp, ip[5]) - rd<uint32_t>(fp, ip[6]));
      inst->globals[ip[8]]->value = fp[ip[9]];
      ip += 10;
      DISPATCH();
    }
    // The three ops above as own_global_moves found them (vm/internal_ops.def):
    // the value from the global to the global in a register, the slots
    // written as the ops apart write them.
    CASE(I32AddGlobalSetOwn) {
      const uint32_t v = rd<uint32_t>(fp, ip[2]) + rd<uint32_t>(fp, ip[3]);
      wr<uint32_t>(fp, ip[1], v);
      inst->globals[ip[5]]->value = v;
      ip += 7;
      DISPATCH();
    }
    CASE(I32SubGlobalSetOwn) {
      const uint32_t v = rd<uint32_t>(fp, ip[2]) - rd<uint32_t>(fp, ip[3]);
      wr<uint32_t>(fp, ip[1], v);
      inst->globals[ip[5]]->value = v;
      ip += 7;
      DISPATCH();
    }
    CASE(GlobalGetI32SubGlobalSetOwn) {
      auto& global = inst->globals[ip[2]]->value;
      const uint64_t sp = global;
      const uint32_t v = static_cast<uint32_t>(sp) - rd<uint32_t>(fp, ip[6]);
      fp[ip[1]] = sp;
      wr<uint32_t>(fp, ip[4], v);
      global = v;
      ip += 10;
      DISPATCH();
    }
    CASE(I32AddJumpIfNeBack) {
      wr<uint32_t>(fp, ip[1], rd<uint32_t>(fp, ip[2]) + rd<uint32_t>(fp, ip[3]));
      if (rd<uint32_t>(fp, ip[4]) != rd<uint32_t>(fp, ip[5])) JUMP_BY(static_cast<int32_t>(ip[6]));
      else ip += 7;
      DISPATCH();
    }
    CASE(I32Add2JumpIfNeBack) {
      wr<uint32_t>(fp, ip[1], rd<uint32_t>(fp, ip[2]) + rd<uint32_t>(fp, ip[3]));
      wr<uint32_t>(fp, ip[4], rd<uint32_t>(fp, ip[5]) + rd<uint32_t>(fp, ip[6]));
      if (rd<uint32_t>(fp, ip[7]) != rd<uint32_t>(fp, ip[8])) JUMP_BY(static_cast<int32_t>(ip[9]));
      else ip += 10;
      DISPATCH();
    }
    CASE(I32Add2JumpIfBack) {
      wr<uint32_t>(fp, ip[1], rd<uint32_t>(fp, ip[2]) + rd<uint32_t>(fp, ip[3]));
      wr<uint32_t>(fp, ip[4], rd<uint32_t>(fp, ip[5]) + rd<uint32_t>(fp, ip[6]));
      if (rd<uint32_t>(fp, ip[7]) != 0) JUMP_BY(static_cast<int32_t>(ip[8]));
      else ip += 9;
      DISPATCH();
    }
    // SHA-2's sigma functions (vm/internal_ops.def): the rotations and the
    // shift are the opcode table's own (counts mod 32).
    CASE(I32Rotl2Xor) {
      wr<uint32_t>(fp, ip[1],
                   i32_binary_at<IOp::I32Rotl>(fp, ip, 2) ^ i32_binary_at<IOp::I32Rotl>(fp, ip, 4));
      ip += 6;
      DISPATCH();
    }
    CASE(I32Rotl3Xor) {
      wr<uint32_t>(fp, ip[1],
                   i32_binary_at<IOp::I32Rotl>(fp, ip, 2) ^ i32_binary_at<IOp::I32Rotl>(fp, ip, 4) ^
                       i32_binary_at<IOp::I32Rotl>(fp, ip, 6));
      ip += 8;
      DISPATCH();
    }
    CASE(I32Rotl2ShrUXor) {
      wr<uint32_t>(fp, ip[1],
                   i32_binary_at<IOp::I32Rotl>(fp, ip, 2) ^ i32_binary_at<IOp::I32Rotl>(fp, ip, 4) ^
                       i32_binary_at<IOp::I32ShrU>(fp, ip, 6));
      ip += 8;
      DISPATCH();
    }
    CASE(I32ShrUAndAdd) {
      shr_u_and_add<0>(fp, ip);
      ip += 6;
      DISPATCH();
    }
    CASE(I32AndShl) {
      using Shl = BinaryFunctor<IOp::I32Shl>::F;
      const uint32_t x = rd<uint32_t>(fp, ip[2]) & rd<uint32_t>(fp, ip[3]);
      wr<uint32_t>(fp, ip[1], Shl::template op<uint32_t, uint32_t>(x, rd<uint32_t>(fp, ip[4])));
      ip += 5;
      DISPATCH();
    }
    CASE(I32AndShlAdd) {
      using Shl = BinaryFunctor<IOp::I32Shl>::F;
      const uint32_t x = rd<uint32_t>(fp, ip[2]) & rd<uint32_t>(fp, ip[3]);
      wr<uint32_t>(
          fp, ip[1],
          Shl::template op<uint32_t, uint32_t>(x, rd<uint32_t>(fp, ip[4])) + rd<uint32_t>(fp, ip[5]));
      ip += 6;
      DISPATCH();
    }
    // ---- CPython's dispatch (vm/internal_ops.def): [i32.and+add+switch d
    // x m c] [switch d n off0..off(n)], the chain, then the switch from its
    // own op word on the value; [i32.load16_u+or+shr_u d a off] [i32.or d2 x
    // y] [i32.shr_u d3 z k] ([jump offset]), the ops in order, a trap the
    // load's at the op; [i32.load16_u+shr_u+load8_u+or ...] alike, a trap in
    // the second load at its own op word, 8 on.
// i32.and+add+switch at ip: the chain, then the switch from its own words,
// and the dispatch into the case. Each op that ends so has its own copy, so
// its own jump into the cases (CPython's eval loop reaches its switch from
// two places; as for the copies-then-call ops, docs/RATIONALE.md).
#define WZVM_AND_ADD_SWITCH()                                                                         \
  do {                                                                                                \
    const uint32_t v = (rd<uint32_t>(fp, ip[2]) & rd<uint32_t>(fp, ip[3])) + rd<uint32_t>(fp, ip[4]); \
    wr<uint32_t>(fp, ip[1], v);                                                                       \
    ip += 5; /* the switch's op word: its offsets are relative to it */                               \
    JUMP_BY(switch_offset(ip, v));                                                                    \
    DISPATCH();                                                                                       \
  } while (0)
    CASE(I32AndAddSwitch) { WZVM_AND_ADD_SWITCH(); }
    // [i32.shl+add+i32.load8_u+switch d x k c] [i32.load8_u+switch d2 a off]
    // [switch d2 n off0..off(n)]: the chain, then the pair from its own op
    // word (where a trap in its load is reported).
    CASE(I32ShlAddLoad8USwitch) {
      using Shl = BinaryFunctor<IOp::I32Shl>::F;
      const uint32_t a =
          Shl::template op<uint32_t, uint32_t>(rd<uint32_t>(fp, ip[2]), rd<uint32_t>(fp, ip[3]));
      wr<uint32_t>(fp, ip[1], a + rd<uint32_t>(fp, ip[4]));
      ip += 5; /* the pair's op word */
      uint32_t v;
      if (__builtin_expect(!switch_load<IOp::I32Load8U, IOp::I32Load8U>(fp, ip, mem, memsize, v), 0))
        TRAP(TrapCode::MemoryOutOfBounds);
      ip += switch_pair_load_words(IOp::I32Load8U);
      JUMP_BY(switch_offset(ip, v));
      DISPATCH();
    }
    // The copies, then i32.and+add+switch's code, as copy+call_func's.
    CASE(Copy3AndAddSwitch) {
      copies<3>(fp, ip);
      ip += 7; /* the i32.and+add+switch's op word */
      WZVM_AND_ADD_SWITCH();
    }
    CASE_PLAIN(Copy7AndAddSwitch) {
      copies<4>(fp, ip);
      ip += 9; /* the copy3's */
      copies<3>(fp, ip);
      ip += 7;
      WZVM_AND_ADD_SWITCH();
    }
#undef WZVM_AND_ADD_SWITCH
// CPython's decode (pair_decode): the load (its trap at the op), the or and
// the shift, or the shift-first form with its second load (a trap there at
// that load's op word, 8 on); the counting loop's twins run it too.
#define WZVM_PY_DECODE_BODY_(words)                                                                          \
  using ShrU = BinaryFunctor<IOp::I32ShrU>::F;                                                               \
  if (__builtin_expect(!mem_access<IOp::I32Load16U, 0>(fp, ip, mem, memsize), 0))                            \
    TRAP(TrapCode::MemoryOutOfBounds);                                                                       \
  if constexpr ((words) == 12) {                                                                             \
    wr<uint32_t>(fp, ip[5], rd<uint32_t>(fp, ip[6]) | rd<uint32_t>(fp, ip[7]));                              \
    wr<uint32_t>(fp, ip[9],                                                                                  \
                 ShrU::template op<uint32_t, uint32_t>(rd<uint32_t>(fp, ip[10]), rd<uint32_t>(fp, ip[11]))); \
  } else {                                                                                                   \
    wr<uint32_t>(fp, ip[5],                                                                                  \
                 ShrU::template op<uint32_t, uint32_t>(rd<uint32_t>(fp, ip[6]), rd<uint32_t>(fp, ip[7])));   \
    if (__builtin_expect(!mem_access<IOp::I32Load8U, 8>(fp, ip, mem, memsize), 0)) {                         \
      ip += 8;                                                                                               \
      TRAP(TrapCode::MemoryOutOfBounds);                                                                     \
    }                                                                                                        \
    wr<uint32_t>(fp, ip[13], rd<uint32_t>(fp, ip[14]) | rd<uint32_t>(fp, ip[15]));                           \
  }
#define WZVM_GEN_PY_DECODE_(Name, words, then)                                    \
  CASE(Name) {                                                                    \
    WZVM_PY_DECODE_BODY_(words)                                                   \
    if constexpr (then) JUMP_BY((words) + static_cast<int32_t>(ip[(words) + 1])); \
    else ip += (words);                                                           \
    DISPATCH();                                                                   \
  }
    WZVM_GEN_PY_DECODE_(I32Load16UOrShrU, 12, false)
    WZVM_GEN_PY_DECODE_(I32Load16UOrShrUJump, 12, true)
    WZVM_GEN_PY_DECODE_(I32Load16UShrULoad8UOr, 16, false)
    WZVM_GEN_PY_DECODE_(I32Load16UShrULoad8UOrJump, 16, true)
#undef WZVM_GEN_PY_DECODE_
    CASE(CopyN) {
      std::memmove(fp + ip[1], fp + ip[2], ip[3] * sizeof(uint64_t));
      ip += 4;
      DISPATCH();
    }
    CASE(Const32) {
      fp[ip[1]] = ip[2];
      ip += 3;
      DISPATCH();
    }
    CASE(Const64) {
      fp[ip[1]] = imm64(ip + 2);
      ip += 4;
      DISPATCH();
    }
    CASE(SelectI) {
      fp[ip[1]] = rd<uint32_t>(fp, ip[4]) ? fp[ip[2]] : fp[ip[3]];
      ip += 5;
      DISPATCH();
    }
    CASE(SelectV) {
      uint64_t lo, hi;
      if (rd<uint32_t>(fp, ip[4])) {
        lo = fp[ip[2]];
        hi = fp[ip[2] + 1];
      } else {
        lo = fp[ip[3]];
        hi = fp[ip[3] + 1];
      }
      fp[ip[1]] = lo;
      fp[ip[1] + 1] = hi;
      ip += 5;
      DISPATCH();
    }

    // ---- Control: the jumps, and their back-edge forms (vm/internal_ops.def).
#define WZVM_JUMP_OPS_(Suffix)                                          \
  CASE(Jump##Suffix) {                                                  \
    JUMP_BY(static_cast<int32_t>(ip[1]));                               \
    DISPATCH();                                                         \
  }                                                                     \
  CASE(JumpIf##Suffix) {                                                \
    if (rd<uint32_t>(fp, ip[1])) JUMP_BY(static_cast<int32_t>(ip[2]));  \
    else ip += 3;                                                       \
    DISPATCH();                                                         \
  }                                                                     \
  CASE(JumpUnless##Suffix) {                                            \
    if (!rd<uint32_t>(fp, ip[1])) JUMP_BY(static_cast<int32_t>(ip[2])); \
    else ip += 3;                                                       \
    DISPATCH();                                                         \
  }
    WZVM_JUMP_OPS_()
    WZVM_JUMP_OPS_(Back)
#undef WZVM_JUMP_OPS_
    CASE(Switch) {
      JUMP_BY(switch_offset(ip, rd<uint32_t>(fp, ip[1])));
      DISPATCH();
    }
    // [global.get+switch d g][switch ...] (vm/internal_ops.def): Go's
    // function entry, the global.get, then the switch from its own words.
    CASE_PLAIN(GlobalGetSwitch) {
      fp[ip[1]] = inst->globals[ip[2]]->value;
      ip += 3;
      JUMP_BY(switch_offset(ip, rd<uint32_t>(fp, ip[1])));
      DISPATCH();
    }
    // [libc.memcpy skip][ret1 0 1][body] and its kin (vm/known_bodies.def):
    // on to the ret1 when the helper ran the function, else to the body.
    CASE_PLAIN(LibcMemcpy) {
      ip += libc_memcpy(mem, memsize, fp) ? 2 : ip[1];
      DISPATCH();
    }
    CASE_PLAIN(LibcMemmove) {
      ip += libc_memmove(mem, memsize, fp) ? 2 : ip[1];
      DISPATCH();
    }
    CASE_PLAIN(LibcMemset) {
      ip += libc_memset(mem, memsize, fp) ? 2 : ip[1];
      DISPATCH();
    }
    CASE_PLAIN(LibcMemcmp) {
      ip += libc_memcmp(mem, memsize, fp) ? 2 : ip[1];
      DISPATCH();
    }
    CASE_PLAIN(LibcStrlen) {
      ip += libc_strlen(mem, memsize, fp) ? 2 : ip[1];
      DISPATCH();
    }
    CASE_PLAIN(LibcDlfree) {
      ip += libc_dlfree(mem, memsize, inst->globals[0], ip, fp) ? 4 : ip[1];
      DISPATCH();
    }
    CASE_PLAIN(LibcDlmalloc) {
      ip += libc_dlmalloc(mem, memsize, inst->globals[0], ip, fp) ? 4 : ip[1];
      DISPATCH();
    }
    // [go.mul64 arg dst skip] (vm/known_bodies.def): Go's Mul64 on the
    // stack at global 0, if its resume point is 0 and its five words are in
    // memory 0; else the call after it runs the body, which then reaches
    // `unreachable` or the access that traps, as written. The high and low
    // halves of x * y replace the body's 32-bit pieces: the same bits.
    CASE_PLAIN(GoMul64) {
      GlobalInst* g = inst->globals[0];
      const auto sp = static_cast<uint32_t>(g->value);
      if (__builtin_expect(rd<uint32_t>(fp, ip[1]) != 0 || uint64_t{sp} + 40 > memsize, 0)) {
        ip += 4;
        DISPATCH();
      }
      uint64_t x, y;
      std::memcpy(&x, mem + sp + 8, 8);
      std::memcpy(&y, mem + sp + 16, 8);
      const GoMulAdd m = go_mul_add(x, y, 0);
      std::memcpy(mem + sp + 24, &m.hi, 8);
      std::memcpy(mem + sp + 32, &m.lo, 8);
      g->value = sp + 8;
      wr<uint32_t>(fp, ip[2], 0);
      ip += ip[3];
      DISPATCH();
    }
    // [go.mul_add_www arg dst skip k_lo k_hi] (vm/known_bodies.def): Go's
    // mulAddWWW_g on the stack at global 0, if its resume point is 0, its
    // stack check passes (sp0 above the guard at global 2 + 16, else the
    // body calls morestack) and its words from sp0-40 to sp0+48 are in
    // memory 0; else the call after it runs the body. Every store the body
    // and its Mul64 make, the scratch below sp0 included.
    CASE_PLAIN(GoMulAddWWW) {
      GlobalInst* g = inst->globals[0];
      const auto sp = static_cast<uint32_t>(g->value);
      const auto gp = static_cast<uint32_t>(inst->globals[2]->value);
      uint32_t guard = 0;
      if (uint64_t{gp} + 20 <= memsize) std::memcpy(&guard, mem + gp + 16, 4);
      if (__builtin_expect(rd<uint32_t>(fp, ip[1]) != 0 || sp < 40 || uint64_t{sp} + 48 > memsize ||
                               uint64_t{gp} + 20 > memsize || sp <= guard,
                           0)) {
        ip += 6;
        DISPATCH();
      }
      uint64_t x, y, c;
      std::memcpy(&x, mem + sp + 8, 8);
      std::memcpy(&y, mem + sp + 16, 8);
      std::memcpy(&c, mem + sp + 24, 8);
      const GoMulAdd m = go_mul_add(x, y, c);
      go_mul_add_www_leaves(mem + sp, imm64(ip + 4), x, y, m.hi, m.lo, m.z1, m.z0);
      g->value = sp + 8;
      wr<uint32_t>(fp, ip[2], 0);
      ip += ip[3];
      DISPATCH();
    }
    // [go.add_mul_vvw arg dst skip k_lo k_hi k2_lo k2_hi] (vm/known_bodies.def):
    // Go's addMulVVW_g, c = z += x*y over n = min(len(z), len(x)) words,
    // if its resume point is 0 and go_slice_loop allows (its stack words
    // sp0-112 to sp0+72, its callee's check at sp0-72); else the call after
    // it runs the body. The frame and scratch words below sp0 as the body's
    // last iteration leaves them.
    CASE_PLAIN(GoAddMulVVW) {
      GlobalInst* g = inst->globals[0];
      const auto sp = static_cast<uint32_t>(g->value);
      GoSliceLoop l;
      if (__builtin_expect(rd<uint32_t>(fp, ip[1]) != 0 ||
                               !go_slice_loop(mem, memsize, sp,
                                              static_cast<uint32_t>(inst->globals[2]->value), 112, 72, 72, l),
                           0))
        goto go_add_mul_vvw_body;
      {
        const uint64_t zp = l.zp, xp = l.xp, y = l.y, n = l.n;
        uint64_t c = 0, cin = 0, xi = 0, zi = 0;
        GoMulAdd m{};
        for (uint64_t i = 0; i < n; ++i) {
          std::memcpy(&xi, mem + xp + 8 * i, 8);
          std::memcpy(&zi, mem + zp + 8 * i, 8);
          m = go_mul_add(xi, y, zi);  // mulAddWWW_g(x[i], y, z[i])
          cin = c;
          const uint64_t sum = m.z0 + c;  // math/bits.Add64(z0, c, 0)
          std::memcpy(mem + zp + 8 * i, &sum, 8);
          c = m.z1 + add64_carry(m.z0, c, sum);
        }
        uint8_t* s = mem + sp;
        if (n > 0) {
          const uint64_t i = n - 1, za = zp + 8 * i, k = imm64(ip + 4), k2 = imm64(ip + 6);
          // addMulVVW_g's frame (sp0-64) and its call's argument words
          std::memcpy(s - 64 + 40, &i, 8);
          std::memcpy(s - 64 + 48, &cin, 8);
          std::memcpy(s - 64 + 56, &za, 8);
          std::memcpy(s - 64, &xi, 8);
          std::memcpy(s - 64 + 8, &y, 8);
          std::memcpy(s - 64 + 16, &zi, 8);
          std::memcpy(s - 72, &k, 8);
          go_mul_add_www_leaves(s - 72, k2, xi, y, m.hi, m.lo, m.z1, m.z0);  // its callee's sp0 is sp0-72
        }
        std::memcpy(s + 64, &c, 8);
        g->value = sp + 8;
        wr<uint32_t>(fp, ip[2], 0);
        ip += ip[3];
        DISPATCH();
      }
    go_add_mul_vvw_body:
      ip += 8;
      DISPATCH();
    }
    // [go.mul_add_vww arg dst skip k_lo k_hi k2_lo k2_hi] (vm/known_bodies.def):
    // Go's mulAddVWW_g, c = z = x*y + r over n = min(len(z), len(x)) words,
    // if its resume point is 0 and go_slice_loop allows (its stack words
    // sp0-104 to sp0+80, its callee's check at sp0-64); else the call after
    // it runs the body. The frame and scratch words as the body's last
    // iteration leaves them.
    CASE_PLAIN(GoMulAddVWW) {
      GlobalInst* g = inst->globals[0];
      const auto sp = static_cast<uint32_t>(g->value);
      GoSliceLoop l;
      if (__builtin_expect(rd<uint32_t>(fp, ip[1]) != 0 ||
                               !go_slice_loop(mem, memsize, sp,
                                              static_cast<uint32_t>(inst->globals[2]->value), 104, 80, 64, l),
                           0))
        goto go_mul_add_vww_body;
      {
        const uint64_t zp = l.zp, xp = l.xp, y = l.y, n = l.n;
        uint64_t c;
        std::memcpy(&c, mem + sp + 64, 8);  // r
        uint64_t cin = 0, xi = 0;
        GoMulAdd m{};
        for (uint64_t i = 0; i < n; ++i) {
          std::memcpy(&xi, mem + xp + 8 * i, 8);
          m = go_mul_add(xi, y, c);  // mulAddWWW_g(x[i], y, c)
          cin = c;
          std::memcpy(mem + zp + 8 * i, &m.z0, 8);
          c = m.z1;
        }
        uint8_t* s = mem + sp;
        if (n > 0) {
          const uint64_t i = n - 1, za = zp + 8 * i, k = imm64(ip + 4), k2 = imm64(ip + 6);
          // mulAddVWW_g's frame (sp0-56) and its call's argument words
          std::memcpy(s - 56 + 40, &i, 8);
          std::memcpy(s - 56 + 48, &za, 8);
          std::memcpy(s - 56, &xi, 8);
          std::memcpy(s - 56 + 8, &y, 8);
          std::memcpy(s - 56 + 16, &cin, 8);
          std::memcpy(s - 64, &k, 8);
          go_mul_add_www_leaves(s - 64, k2, xi, y, m.hi, m.lo, m.z1, m.z0);  // its callee's sp0 is sp0-64
        }
        std::memcpy(s + 72, &c, 8);
        g->value = sp + 8;
        wr<uint32_t>(fp, ip[2], 0);
        ip += ip[3];
        DISPATCH();
      }
    go_mul_add_vww_body:
      ip += 8;
      DISPATCH();
    }
    CASE(CountInstr) {
      if constexpr (kCounting) counters[ip[2]] += 1;
      ip += 3;
      DISPATCH();
    }
    CASE(CountFuel) {
      if constexpr (kCounting) {
        // A segment that does not fit traps before it starts: the count and
        // the fuel left stay exact.
        if (__builtin_expect(prof->fuel < ip[1], 0)) TRAP(TrapCode::OutOfFuel);
        prof->fuel -= ip[1];
        counters[ip[2]] += 1;
      }
      ip += 3;
      DISPATCH();
    }
    CASE(Unreachable) { TRAP(TrapCode::Unreachable); }
    // ret0 and ret1 are ret with n known (0, 1); their unchecked pop is
    // ret's, the checked one is ret's own (ret_checked). Each op that
    // returns has its own copy of the pop, so its own jump into callers.
#define WZVM_RETURN()                                            \
  do {                                                           \
    if (__builtin_expect(frame->ret_check, 0)) goto ret_checked; \
    --frame;                                                     \
    fp = frame->fp;                                              \
    ip = frame->ip;                                              \
    if constexpr (kCounting) counters = frame->counters;         \
    DISPATCH();                                                  \
  } while (0)
    CASE(Ret0) { WZVM_RETURN(); }
    CASE(Ret1) {
      fp[0] = fp[ip[1]];
      WZVM_RETURN();
    }
    // [i32.add+global.set2+ret1 d a b][global.set ...][i32.add+global.set
    // ...][global.set ...][ret1 src 1] (vm/internal_ops.def): Go's epilogue,
    // the four in order, then the ret1 from its own words.
    CASE_PLAIN(I32AddGlobalSet2Ret1) {
      wr<uint32_t>(fp, ip[1], rd<uint32_t>(fp, ip[2]) + rd<uint32_t>(fp, ip[3]));
      inst->globals[ip[5]]->value = fp[ip[6]];
      wr<uint32_t>(fp, ip[8], rd<uint32_t>(fp, ip[9]) + rd<uint32_t>(fp, ip[10]));
      inst->globals[ip[12]]->value = fp[ip[13]];
      fp[0] = fp[ip[15]];
      WZVM_RETURN();
    }
    CASE_PLAIN(I32AddGlobalSet2Ret1Own) {
      const uint32_t v = rd<uint32_t>(fp, ip[2]) + rd<uint32_t>(fp, ip[3]);
      wr<uint32_t>(fp, ip[1], v);
      inst->globals[ip[5]]->value = v;
      const uint32_t v2 = v + rd<uint32_t>(fp, ip[10]);
      wr<uint32_t>(fp, ip[8], v2);
      inst->globals[ip[12]]->value = v2;
      fp[0] = fp[ip[15]];
      WZVM_RETURN();
    }
#undef WZVM_RETURN
    CASE(Ret) {
      // two results or more
      std::memmove(fp, fp + ip[1], ip[2] * sizeof(uint64_t));
      // The entry frame, and frames whose caller may be of another instance,
      // have their ret_check set by the call (Frame::ret_check).
      if (__builtin_expect(frame->ret_check, 0)) {
      ret_checked:
        if (frame == entry) goto done;
        --frame;
        fp = frame->fp;
        ip = frame->ip;
        if constexpr (kCounting) counters = frame->counters;
        // The cached memory stays right within one instance: every memory.grow
        // in this loop reloads it, and so does every host call. A callee of
        // another instance may have grown a memory shared with this one.
        if (Instance* caller = frame->func->instance; caller != inst) {
          inst = caller;
          LOAD_MEM();
        }
        DISPATCH();
      }
      --frame;
      fp = frame->fp;
      ip = frame->ip;
      if constexpr (kCounting) counters = frame->counters;
      DISPATCH();
    }
    CASE(HookedReturn) {
      // Reached through kHookedReturnStub: frame[1] is the hooked callee that just returned.
      if (profiled)
        hooked_return(*prof, frame + 1, kCounting ? Profiling::block_node(frame[1].counters) : frame[1].node,
                      memory);
      ip = frame[1].hook_ret;
      frame->ip = ip;
      DISPATCH();
    }
    // A lazily loaded module's body, entered for the first time (its stub:
    // LoadOptions::lazy). The call set up the frame from the stub, which
    // holds the arguments but is sized without the body's locals and value
    // stack: lowered now, the body gets its own check and frame image, and
    // starts. A frame too big traps here, at the body's start.
    CASE(LowerFunction) {
      if (!lower_lazily(frame->func, host_trap)) goto on_host_trap;
      const CompiledFunc* code = frame->func->code;
      if (fp + code->frame_slots > stack_end) TRAP(TrapCode::StackExhausted);
      init_frame(fp, *code);
      ip = code->code.data();
      DISPATCH();
    }
    // [copy+call_func d s][call_func f base]: the copy, then the call from
    // call_func's words, without a dispatch between (vm/internal_ops.def),
    // each op with the call path of its own (its own dispatch into callees).
#define WZVM_CALL_FUNC()                                                                                     \
  do {                                                                                                       \
    Regs r = REGS();                                                                                         \
    END_CALL(r, call_wasm<kMode, CallSite{.own = true}>(env, r, inst->funcs[ip[1]], code_at(ip), fp + ip[2], \
                                                        ip + kCallFuncWords, kNoKid));                       \
  } while (0)
    CASE(CopyCallFunc) {
      copies<1>(fp, ip);
      ip += 3;
      WZVM_CALL_FUNC();
    }
    CASE(Copy2CallFunc) {
      copies<2>(fp, ip);
      ip += 5;
      WZVM_CALL_FUNC();
    }
    CASE(Copy3CallFunc) {
      copies<3>(fp, ip);
      ip += 7;
      WZVM_CALL_FUNC();
    }
    CASE(Copy4CallFunc) {
      copies<4>(fp, ip);
      ip += 9;
      WZVM_CALL_FUNC();
    }
    CASE(CallFunc) {
      // The callee's code from the op itself, its FuncInst beside: the
      // frame check and image wait on one load, not three.
      WZVM_CALL_FUNC();
    }
#undef WZVM_CALL_FUNC
    CASE(CallImport) {
      Regs r = REGS();
      END_CALL(r, call<kMode, CallSite{}>(env, r, inst->funcs[ip[1]], fp + ip[2], ip + 3, kNoKid));
    }
    CASE(CallHooked) {
      Regs r = REGS();
      END_CALL(r,
               call<kMode, CallSite{.hooked = true}>(env, r, inst->funcs[ip[1]], fp + ip[2], ip + 3, kNoKid));
    }
    CASE(CallFuncCounted) {
      Regs r = REGS();
      END_CALL(r, call<kMode, CallSite{.kid = true}>(env, r, inst->funcs[ip[1]], fp + ip[2], ip + 4, ip[3]));
    }
    CASE(CallHookedCounted) {
      Regs r = REGS();
      END_CALL(r, call<kMode, CallSite{.hooked = true, .kid = true}>(env, r, inst->funcs[ip[1]], fp + ip[2],
                                                                     ip + 4, ip[3]));
    }
    CASE(CallTable) {
      TrapCode why;
      FuncInst* target = table_elem(inst, ip, fp, why);
      if (!target) TRAP(why);
      // Indirect calls to hooked functions are found here, at run time. A
      // target of the running instance is wasm code (a host function has
      // no instance): no host test, no instance compare, and no host call
      // on its path, around which GCC spills the frame base and resume
      // point (docs/RATIONALE.md, "A call checks its frame with one compare").
      if (target->instance == inst) {
        // One module: the type check compares two of its type indices, each
        // the first of the equal types (Module::canonical_types), where the
        // store's id of the expected type took three dependent loads.
        if (target->module_type != ip[2]) TRAP(TrapCode::IndirectCallMismatch);
        Regs r = REGS();
        END_CALL(r, call<kMode, CallSite{.hooked = true, .own = true}>(env, r, target, fp + ip[4], ip + 5,
                                                                       kNoKid));
      }
      if (target->type_id != inst->type_ids[ip[2]]) TRAP(TrapCode::IndirectCallMismatch);
      // The other path's frame base and resume point from an ip that an
      // empty asm hides: computed from `ip` itself, GCC shared them with the
      // path above and computed and spilled them before the branch (four
      // instructions more per indirect call).
      const uint32_t* at = ip;
      asm("" : "+r"(at));
      Regs r = REGS();
      END_CALL(r, call<kMode, CallSite{.hooked = true}>(env, r, target, fp + at[4], at + 5, kNoKid));
    }
    CASE(CallTableGraft) {
      TrapCode why;
      FuncInst* target = table_target(inst, ip, fp, why);
      if (!target) TRAP(why);
      Regs r = REGS();
      END_CALL(r, call<kMode, CallSite{.hooked = true, .graft = true}>(env, r, target, fp + ip[4], ip + 5,
                                                                       kNoKid));
    }
    CASE(CallTableCounted) {
      TrapCode why;
      FuncInst* target = table_target(inst, ip, fp, why);
      if (!target) TRAP(why);
      Regs r = REGS();
      END_CALL(r,
               call<kMode, CallSite{.hooked = true, .kid = true}>(env, r, target, fp + ip[4], ip + 6, ip[5]));
    }
    // [return_call func base nargs][ret base nres]
    CASE(ReturnCall) {
      Regs r = REGS();
      END_CALL(r, tail_call<kMode>(env, r, inst->funcs[ip[1]], fp + ip[2], ip[3], ip + 4));
    }
    // [return_call_indirect table type elem base nargs][ret base nres]
    CASE(ReturnCallIndirect) {
      TrapCode why;
      FuncInst* target = table_target(inst, ip, fp, why);
      if (!target) TRAP(why);
      Regs r = REGS();
      END_CALL(r, tail_call<kMode>(env, r, target, fp + ip[4], ip[5], ip + 6));
    }

    // ---- Variables and references.
    CASE(GlobalGet) {
      fp[ip[1]] = inst->globals[ip[2]]->value;
      ip += 3;
      DISPATCH();
    }
    CASE(GlobalSet) {
      inst->globals[ip[1]]->value = fp[ip[2]];
      ip += 3;
      DISPATCH();
    }
    CASE(GlobalGetV) {
      GlobalInst* g = inst->globals[ip[2]];
      fp[ip[1]] = g->value;
      fp[ip[1] + 1] = g->value_hi;
      ip += 3;
      DISPATCH();
    }
    CASE(GlobalSetV) {
      GlobalInst* g = inst->globals[ip[1]];
      g->value = fp[ip[2]];
      g->value_hi = fp[ip[2] + 1];
      ip += 3;
      DISPATCH();
    }
    CASE(RefIsNull) {
      wr<uint32_t>(fp, ip[1], fp[ip[2]] == 0);
      ip += 3;
      DISPATCH();
    }
    CASE(RefFunc) {
      fp[ip[1]] = reinterpret_cast<Ref>(inst->funcs[ip[2]]);
      ip += 3;
      DISPATCH();
    }

    // ---- Tables.
    CASE(TableGet) {
      TableInst* t = inst->tables[ip[2]];
      uint32_t i = rd<uint32_t>(fp, ip[3]);
      if (i >= t->elems.size()) TRAP(TrapCode::TableOutOfBounds);
      fp[ip[1]] = t->elems[i];
      ip += 4;
      DISPATCH();
    }
    CASE(TableSet) {
      TableInst* t = inst->tables[ip[1]];
      uint32_t i = rd<uint32_t>(fp, ip[2]);
      if (i >= t->elems.size()) TRAP(TrapCode::TableOutOfBounds);
      t->elems[i] = fp[ip[3]];
      ip += 4;
      DISPATCH();
    }
    CASE(TableSize) {
      wr<uint32_t>(fp, ip[1], static_cast<uint32_t>(inst->tables[ip[2]]->elems.size()));
      ip += 3;
      DISPATCH();
    }
    CASE(TableGrow) {
      int64_t old = inst->tables[ip[2]]->grow(rd<uint32_t>(fp, ip[4]), fp[ip[3]]);
      wr<uint32_t>(fp, ip[1], static_cast<uint32_t>(old));
      ip += 5;
      DISPATCH();
    }
    CASE(TableFill) {
      TableInst* t = inst->tables[ip[1]];
      uint64_t i = rd<uint32_t>(fp, ip[2]), n = rd<uint32_t>(fp, ip[4]);
      if (i + n > t->elems.size()) TRAP(TrapCode::TableOutOfBounds);
      std::fill_n(t->elems.begin() + i, n, fp[ip[3]]);
      ip += 5;
      DISPATCH();
    }
    CASE(TableCopy) {
      TableInst* dt = inst->tables[ip[1]];
      TableInst* st = inst->tables[ip[2]];
      uint64_t d = rd<uint32_t>(fp, ip[3]), s = rd<uint32_t>(fp, ip[4]), n = rd<uint32_t>(fp, ip[5]);
      if (d + n > dt->elems.size() || s + n > st->elems.size()) TRAP(TrapCode::TableOutOfBounds);
      if (n) std::memmove(dt->elems.data() + d, st->elems.data() + s, n * sizeof(Ref));
      ip += 6;
      DISPATCH();
    }
    CASE(TableInit) {
      TableInst* t = inst->tables[ip[1]];
      const ElemInst& e = inst->elems[ip[2]];
      uint64_t d = rd<uint32_t>(fp, ip[3]), s = rd<uint32_t>(fp, ip[4]), n = rd<uint32_t>(fp, ip[5]);
      if (s + n > e.refs.size() || d + n > t->elems.size()) TRAP(TrapCode::TableOutOfBounds);
      if (n) std::memcpy(t->elems.data() + d, e.refs.data() + s, n * sizeof(Ref));
      ip += 6;
      DISPATCH();
    }
    CASE(ElemDrop) {
      inst->elems[ip[1]].refs.clear();
      inst->elems[ip[1]].refs.shrink_to_fit();
      ip += 2;
      DISPATCH();
    }

    // ---- Memory.
    CASE(MemorySize) {
      wr<uint32_t>(fp, ip[1], static_cast<uint32_t>(memsize >> 16));
      ip += 2;
      DISPATCH();
    }
    CASE(MemoryGrow) {
      int64_t old = memory->grow(rd<uint32_t>(fp, ip[2]));
      wr<uint32_t>(fp, ip[1], static_cast<uint32_t>(old));
      if (profiled) {
        // memsize is still the size before the grow.
        if (prof->memory_grow && memory->current_size() > memsize)
          memory_grown(*prof, nc, frame, ip, memory, memsize);
      }
      LOAD_MEM();
      ip += 3;
      DISPATCH();
    }
    CASE(MemoryFill) {
      uint64_t d = rd<uint32_t>(fp, ip[1]), n = rd<uint32_t>(fp, ip[3]);
      if (d + n > memsize) TRAP(TrapCode::MemoryOutOfBounds);
      if (n) std::memset(mem + d, static_cast<uint8_t>(rd<uint32_t>(fp, ip[2])), n);
      ip += 4;
      DISPATCH();
    }
    CASE(MemoryCopy) {
      uint64_t d = rd<uint32_t>(fp, ip[1]), s = rd<uint32_t>(fp, ip[2]), n = rd<uint32_t>(fp, ip[3]);
      if (d + n > memsize || s + n > memsize) TRAP(TrapCode::MemoryOutOfBounds);
      if (n) std::memmove(mem + d, mem + s, n);
      ip += 4;
      DISPATCH();
    }
    CASE(MemoryInit) {
      const DataInst& seg = inst->datas[ip[1]];
      uint64_t d = rd<uint32_t>(fp, ip[2]), s = rd<uint32_t>(fp, ip[3]), n = rd<uint32_t>(fp, ip[4]);
      if (s + n > seg.size || d + n > memsize) TRAP(TrapCode::MemoryOutOfBounds);
      if (n) std::memcpy(mem + d, seg.bytes + s, n);
      ip += 5;
      DISPATCH();
    }
    // ---- threads: fence, wait and notify (operand layouts in vm/lower/atomic_ops.cc).
    CASE(AtomicFence) {
      __atomic_thread_fence(__ATOMIC_SEQ_CST);
      ip += 1;
      DISPATCH();
    }
    CASE(MemoryAtomicNotify) {
      WZVM_ATOMIC_EA_(uint32_t, 2, 4);
      (void)p;
      wr<uint32_t>(fp, ip[1], atomic_notify(*memory, ea, rd<uint32_t>(fp, ip[3])));
      ip += 5;
      DISPATCH();
    }
    // [wait dst addr expected timeout offset]: blocks only on a shared memory.
#define WZVM_ATOMIC_WAIT_(Name, T, wait_fn)                                   \
  CASE(Name) {                                                                \
    WZVM_ATOMIC_EA_(T, 2, 5);                                                 \
    (void)p;                                                                  \
    if (!memory->type.limits.shared) TRAP(TrapCode::ExpectedSharedMemory);    \
    int64_t timeout = wait_timeout(store, rd<int64_t>(fp, ip[4]));            \
    wr<uint32_t>(fp, ip[1], wait_fn(*memory, ea, rd<T>(fp, ip[3]), timeout)); \
    ip += 6;                                                                  \
    DISPATCH();                                                               \
  }
    WZVM_ATOMIC_WAIT_(MemoryAtomicWait32, uint32_t, atomic_wait32)
    WZVM_ATOMIC_WAIT_(MemoryAtomicWait64, uint64_t, atomic_wait64)
#undef WZVM_ATOMIC_WAIT_
    // ---- exception-handling: [throw tag base], [rethrow exn_slot].
    CASE(Throw) {
      exn = new_exception(th, inst->tags[ip[1]], fp + ip[2]);
      goto on_throw;
    }
    CASE(Rethrow) {
      exn = fp[ip[1]];
      goto on_throw;
    }
    CASE(UseMemory) {
      memory = inst->memories[ip[1]];
      mem = memory->data;
      memsize = memory->current_size();
      ip += 2;
      DISPATCH();
    }
    // ---- memory64 (operand layouts in vm/internal_ops.def). No memory is
    // larger than 4 GiB (vm/instance.cc), so a checked 64-bit address or
    // length below 2^32 continues as a 32-bit one.
    CASE(Addr64) {
      uint64_t a = fp[ip[2]];
      uint64_t ea = a + (static_cast<uint64_t>(ip[4]) << 32 | ip[3]);
      if (ea < a || ea > UINT32_MAX) TRAP(TrapCode::MemoryOutOfBounds);
      fp[ip[1]] = ea;
      ip += 5;
      DISPATCH();
    }
    CASE(Narrow64) {
      uint64_t v = fp[ip[2]];
      if (v > UINT32_MAX) TRAP(TrapCode::MemoryOutOfBounds);
      fp[ip[1]] = v;
      ip += 3;
      DISPATCH();
    }
    CASE(MemoryGrow64) {
      uint64_t delta = fp[ip[2]];
      int64_t old = delta > UINT32_MAX ? -1 : memory->grow(delta);
      fp[ip[1]] = static_cast<uint64_t>(old);
      LOAD_MEM();
      ip += 3;
      DISPATCH();
    }
    CASE(MemoryCopyBetween) {
      const MemInst* dm = inst->memories[ip[1]];
      const MemInst* sm = inst->memories[ip[2]];
      uint64_t d = rd<uint32_t>(fp, ip[3]), s = rd<uint32_t>(fp, ip[4]), n = rd<uint32_t>(fp, ip[5]);
      if (d + n > dm->current_size() || s + n > sm->current_size()) TRAP(TrapCode::MemoryOutOfBounds);
      if (n) std::memmove(dm->data + d, sm->data + s, n);
      ip += 6;
      DISPATCH();
    }
    CASE(DataDrop) {
      inst->datas[ip[1]].size = 0;
      ip += 2;
      DISPATCH();
    }

    // ---- SIMD (0xFD): the Special rows of vm/opcodes.def (operand layouts in
    // vm/lower/simd_lanes.cc); the others are Unary/Binary/Load/Store rows above.
    CASE(V128Const) {
      std::memcpy(fp + ip[1], ip + 2, 16);
      ip += 6;
      DISPATCH();
    }
    CASE(I8x16Shuffle) {
      v128_t sel;  // the 16 lane indices, in 4 code words
      std::memcpy(&sel, ip + 4, 16);
      wr<v128_t>(fp, ip[1], simd::shuffle(rd<v128_t>(fp, ip[2]), rd<v128_t>(fp, ip[3]), sel));
      ip += 8;
      DISPATCH();
    }
    CASE(V128Bitselect) {
      wr<v128_t>(fp, ip[1],
                 simd::bitselect(rd<v128_t>(fp, ip[2]), rd<v128_t>(fp, ip[3]), rd<v128_t>(fp, ip[4])));
      ip += 5;
      DISPATCH();
    }
    // [op dst v lane]: the lane (sign- or zero-extended by the C conversion).
#define WZVM_SIMD_EXTRACT_(Name, T, R)                                                 \
  CASE(Name) {                                                                         \
    wr<R>(fp, ip[1], static_cast<R>(simd::get_lane<T>(rd<v128_t>(fp, ip[2]), ip[3]))); \
    ip += 4;                                                                           \
    DISPATCH();                                                                        \
  }
    WZVM_SIMD_EXTRACT_(I8x16ExtractLaneS, int8_t, uint32_t)
    WZVM_SIMD_EXTRACT_(I8x16ExtractLaneU, uint8_t, uint32_t)
    WZVM_SIMD_EXTRACT_(I16x8ExtractLaneS, int16_t, uint32_t)
    WZVM_SIMD_EXTRACT_(I16x8ExtractLaneU, uint16_t, uint32_t)
    WZVM_SIMD_EXTRACT_(I32x4ExtractLane, uint32_t, uint32_t)
    WZVM_SIMD_EXTRACT_(I64x2ExtractLane, uint64_t, uint64_t)
    WZVM_SIMD_EXTRACT_(F32x4ExtractLane, float, float)
    WZVM_SIMD_EXTRACT_(F64x2ExtractLane, double, double)
#undef WZVM_SIMD_EXTRACT_
    // [op dst v x lane]
#define WZVM_SIMD_REPLACE_(Name, T, A)                                                             \
  CASE(Name) {                                                                                     \
    wr<v128_t>(fp, ip[1],                                                                          \
               simd::set_lane<T>(rd<v128_t>(fp, ip[2]), ip[4], static_cast<T>(rd<A>(fp, ip[3])))); \
    ip += 5;                                                                                       \
    DISPATCH();                                                                                    \
  }
    WZVM_SIMD_REPLACE_(I8x16ReplaceLane, uint8_t, uint32_t)
    WZVM_SIMD_REPLACE_(I16x8ReplaceLane, uint16_t, uint32_t)
    WZVM_SIMD_REPLACE_(I32x4ReplaceLane, uint32_t, uint32_t)
    WZVM_SIMD_REPLACE_(I64x2ReplaceLane, uint64_t, uint64_t)
    WZVM_SIMD_REPLACE_(F32x4ReplaceLane, float, float)
    WZVM_SIMD_REPLACE_(F64x2ReplaceLane, double, double)
#undef WZVM_SIMD_REPLACE_
    // [load_lane dst addr v offset lane] / [store_lane addr v offset lane];
    // bounds as for the other loads and stores.
#define WZVM_SIMD_LOAD_LANE_(Name, T)                                                     \
  CASE(Name) {                                                                            \
    uint64_t ea = static_cast<uint64_t>(rd<uint32_t>(fp, ip[2])) + ip[4];                 \
    if (__builtin_expect(ea + sizeof(T) > memsize, 0)) TRAP(TrapCode::MemoryOutOfBounds); \
    T x;                                                                                  \
    std::memcpy(&x, mem + ea, sizeof(T));                                                 \
    wr<v128_t>(fp, ip[1], simd::set_lane<T>(rd<v128_t>(fp, ip[3]), ip[5], x));            \
    ip += 6;                                                                              \
    DISPATCH();                                                                           \
  }
#define WZVM_SIMD_STORE_LANE_(Name, T)                                                    \
  CASE(Name) {                                                                            \
    uint64_t ea = static_cast<uint64_t>(rd<uint32_t>(fp, ip[1])) + ip[3];                 \
    if (__builtin_expect(ea + sizeof(T) > memsize, 0)) TRAP(TrapCode::MemoryOutOfBounds); \
    T x = simd::get_lane<T>(rd<v128_t>(fp, ip[2]), ip[4]);                                \
    std::memcpy(mem + ea, &x, sizeof(T));                                                 \
    ip += 5;                                                                              \
    DISPATCH();                                                                           \
  }
    WZVM_SIMD_LOAD_LANE_(V128Load8Lane, uint8_t)
    WZVM_SIMD_LOAD_LANE_(V128Load16Lane, uint16_t)
    WZVM_SIMD_LOAD_LANE_(V128Load32Lane, uint32_t)
    WZVM_SIMD_LOAD_LANE_(V128Load64Lane, uint64_t)
    WZVM_SIMD_STORE_LANE_(V128Store8Lane, uint8_t)
    WZVM_SIMD_STORE_LANE_(V128Store16Lane, uint16_t)
    WZVM_SIMD_STORE_LANE_(V128Store32Lane, uint32_t)
    WZVM_SIMD_STORE_LANE_(V128Store64Lane, uint64_t)
#undef WZVM_SIMD_LOAD_LANE_
#undef WZVM_SIMD_STORE_LANE_

    // ---- Jumps of code counted without fuel: [op cond offset edge],
    // [op a b offset edge], [jump offset edge], [switch ... edges]
    // (vm/counted_ops.def). Not taken, nothing counts; taken, the edge does.
    // In the counting loop only (kCountedLabels; in the switch-dispatch
    // build, CASE_COUNTED sends the other loops to the report).
#define COUNT_EDGE(w)                          \
  do {                                         \
    if constexpr (kCounting) counters[w] += 1; \
  } while (0)
#if !defined(WZVM_SWITCH_DISPATCH)
    if constexpr (kCounting) {
#endif
      // [op cond offset edge]: jumps when `cond` is non-zero (zero), counting.
#define WZVM_COUNTED_COND_JUMP_(Op, taken)           \
  CASE_COUNTED(Op) {                                 \
    if ((rd<uint32_t>(fp, ip[1]) != 0) == (taken)) { \
      COUNT_EDGE(ip[3]);                             \
      JUMP_BY(static_cast<int32_t>(ip[2]));          \
    } else {                                         \
      ip += 4;                                       \
    }                                                \
    DISPATCH();                                      \
  }
      WZVM_COUNTED_COND_JUMP_(JumpIfExit, true)
      WZVM_COUNTED_COND_JUMP_(JumpUnlessExit, false)
      WZVM_COUNTED_COND_JUMP_(JumpIfBackExit, true)
      WZVM_COUNTED_COND_JUMP_(JumpUnlessBackExit, false)
#undef WZVM_COUNTED_COND_JUMP_
#define WZVM_GEN_FUSED_EXIT_ONE_(Op, Name, R, P1, F, taken)   \
  CASE_COUNTED(Op##_##Name) {                                 \
    bool c;                                                   \
    TrapCode t = condition<num::F, C_##R, C_##P1>(fp, ip, c); \
    if (__builtin_expect(t != TrapCode::None, 0)) TRAP(t);    \
    if (c == (taken)) {                                       \
      COUNT_EDGE(ip[4]);                                      \
      JUMP_BY(static_cast<int32_t>(ip[3]));                   \
    } else {                                                  \
      ip += 5;                                                \
    }                                                         \
    DISPATCH();                                               \
  }
#define WZVM_GEN_FUSED_EXIT_(Name, R, P1, F)                      \
  WZVM_GEN_FUSED_EXIT_ONE_(JumpIfExit, Name, R, P1, F, true)      \
  WZVM_GEN_FUSED_EXIT_ONE_(JumpUnlessExit, Name, R, P1, F, false) \
  WZVM_GEN_FUSED_EXIT_ONE_(JumpIfBackExit, Name, R, P1, F, true)
#define WZVM_OP(Name, prefix, code, text, K, R, P1, P2, Extra) \
  WZVM_FUSED_ROW_(WZVM_GEN_FUSED_EXIT_, Name, K, R, P1, Extra)
#include "vm/opcodes.def"
#undef WZVM_OP
#undef WZVM_GEN_FUSED_EXIT_
#undef WZVM_GEN_FUSED_EXIT_ONE_
      // [op offset edge], forward and back.
#define WZVM_COUNTED_JUMP_(Op)            \
  CASE_COUNTED(Op) {                      \
    COUNT_EDGE(ip[2]);                    \
    JUMP_BY(static_cast<int32_t>(ip[1])); \
    DISPATCH();                           \
  }
      WZVM_COUNTED_JUMP_(JumpCounted)
      WZVM_COUNTED_JUMP_(JumpBackCounted)
#undef WZVM_COUNTED_JUMP_
      // [copy+jump.counted d s][jump.counted offset edge] and the others
      // (vm/counted_ops.def): the copy or global.get, then the jump from its
      // own words, `len` on, as copy+jump's, counting its edge when taken.
#define THEN_COUNTED_COND_JUMP(len, taken)                   \
  do {                                                       \
    if ((rd<uint32_t>(fp, ip[(len) + 1]) != 0) == (taken)) { \
      COUNT_EDGE(ip[(len) + 3]);                             \
      JUMP_BY((len) + static_cast<int32_t>(ip[(len) + 2]));  \
    } else {                                                 \
      ip += (len) + 4;                                       \
    }                                                        \
    DISPATCH();                                              \
  } while (0)
      // The step and load pairs' twins (vm/step_jumps.def,
      // vm/load_jumps.def): [op ...] [Jump##Exit_Test x y offset edge], the
      // step or load (its trap at the op), then the test from the jump's
      // own op word, 4 words on, counting the jump's edge when taken.
#define WZVM_THEN_COUNTED_TEST_(Jump, Test, c)                    \
  ip += 4; /* the jump's op word: its offset is relative to it */ \
  if ((c) == (IOp::Jump##_##Test != IOp::JumpUnless_##Test)) {    \
    COUNT_EDGE(ip[4]);                                            \
    JUMP_BY(static_cast<int32_t>(ip[3]));                         \
  } else {                                                        \
    ip += 5;                                                      \
  }                                                               \
  DISPATCH();
#define WZVM_STEP_JUMP(Name, Step, Jump, Test, T, text)                                              \
  CASE_COUNTED(Name##Counted) {                                                                      \
    using S = BinaryFunctor<IOp::Step>::F;                                                           \
    using C = BinaryFunctor<IOp::Test>::F;                                                           \
    wr<C_##T>(fp, ip[1], S::template op<C_##T, C_##T>(rd<C_##T>(fp, ip[2]), rd<C_##T>(fp, ip[3])));  \
    const bool c = C::template op<uint32_t, C_##T>(rd<C_##T>(fp, ip[5]), rd<C_##T>(fp, ip[6])) != 0; \
    WZVM_THEN_COUNTED_TEST_(Jump, Test, c)                                                           \
  }
#include "vm/step_jumps.def"
#undef WZVM_STEP_JUMP
#define WZVM_LOAD_JUMP(Name, Load, Jump, Test, text)                                               \
  CASE_COUNTED(Name##Counted) {                                                                    \
    using C = BinaryFunctor<IOp::Test>::F;                                                         \
    if (__builtin_expect(!mem_access<IOp::Load, 0>(fp, ip, mem, memsize), 0))                      \
      TRAP(TrapCode::MemoryOutOfBounds);                                                           \
    const bool c =                                                                                 \
        C::template op<uint32_t, uint32_t>(rd<uint32_t>(fp, ip[5]), rd<uint32_t>(fp, ip[6])) != 0; \
    WZVM_THEN_COUNTED_TEST_(Jump, Test, c)                                                         \
  }
#include "vm/load_jumps.def"
#undef WZVM_LOAD_JUMP
#undef WZVM_THEN_COUNTED_TEST_
      // CPython's decode and the jump.counted after it (pair_decode): the
      // decode, then the jump's own code, counting its edge.
#define WZVM_GEN_PY_DECODE_COUNTED_(Name, words)              \
  CASE_COUNTED(Name) {                                        \
    WZVM_PY_DECODE_BODY_(words)                               \
    COUNT_EDGE(ip[(words) + 2]);                              \
    JUMP_BY((words) + static_cast<int32_t>(ip[(words) + 1])); \
    DISPATCH();                                               \
  }
      WZVM_GEN_PY_DECODE_COUNTED_(I32Load16UOrShrUJumpCounted, 12)
      WZVM_GEN_PY_DECODE_COUNTED_(I32Load16UShrULoad8UOrJumpCounted, 16)
#undef WZVM_GEN_PY_DECODE_COUNTED_
#undef WZVM_PY_DECODE_BODY_
      CASE_COUNTED(CopyJumpCounted) {
        copies<1>(fp, ip);
        COUNT_EDGE(ip[5]);
        JUMP_BY(3 + static_cast<int32_t>(ip[4]));
        DISPATCH();
      }
      CASE_COUNTED(CopyJumpIfExit) {
        copies<1>(fp, ip);
        THEN_COUNTED_COND_JUMP(3, true);
      }
      CASE_COUNTED(CopyJumpUnlessExit) {
        copies<1>(fp, ip);
        THEN_COUNTED_COND_JUMP(3, false);
      }
      CASE_COUNTED(GlobalGetJumpIfExit) {
        fp[ip[1]] = inst->globals[ip[2]]->value;
        THEN_COUNTED_COND_JUMP(3, true);
      }
      CASE_COUNTED(GlobalGetJumpUnlessExit) {
        fp[ip[1]] = inst->globals[ip[2]]->value;
        THEN_COUNTED_COND_JUMP(3, false);
      }
#define WZVM_LOAD_THEN_JUMP_(Name, Load, taken)                               \
  CASE_COUNTED(Name) {                                                        \
    if (__builtin_expect(!mem_access<IOp::Load, 0>(fp, ip, mem, memsize), 0)) \
      TRAP(TrapCode::MemoryOutOfBounds);                                      \
    THEN_COUNTED_COND_JUMP(4, taken);                                         \
  }
      WZVM_LOAD_THEN_JUMP_(I32LoadJumpIfExit, I32Load, true)
      WZVM_LOAD_THEN_JUMP_(I32LoadJumpUnlessExit, I32Load, false)
      WZVM_LOAD_THEN_JUMP_(I32Load8UJumpUnlessExit, I32Load8U, false)
#undef WZVM_LOAD_THEN_JUMP_
#define WZVM_GEN_RMW_JUMP_(Name, taken)                                                                   \
  CASE_COUNTED(Name) {                                                                                    \
    uint32_t v;                                                                                           \
    if (__builtin_expect(!rmw_add_i32<2>(fp, ip, mem, memsize, v), 0)) TRAP(TrapCode::MemoryOutOfBounds); \
    wr<uint32_t>(fp, ip[1], v);                                                                           \
    THEN_COUNTED_COND_JUMP(5, taken);                                                                     \
  }
      WZVM_GEN_RMW_JUMP_(RmwAddTeeJumpIfExit_I32, true)
      WZVM_GEN_RMW_JUMP_(RmwAddTeeJumpUnlessExit_I32, false)
#undef WZVM_GEN_RMW_JUMP_
      // [op offset edge switch_edge]: a jump threaded past its loop's head
      // switch counts its edge and the switch's, forward and back.
#define WZVM_THREADED_JUMP_(Op)           \
  CASE_COUNTED(Op) {                      \
    COUNT_EDGE(ip[2]);                    \
    JUMP_BY(static_cast<int32_t>(ip[1])); \
    DISPATCH();                           \
  }
      WZVM_THREADED_JUMP_(JumpThreadedCounted)
      WZVM_THREADED_JUMP_(JumpBackThreadedCounted)
#undef WZVM_THREADED_JUMP_
      CASE_COUNTED(SwitchCounted) {
      switch_counted:
        const uint32_t i = switch_index(ip, rd<uint32_t>(fp, ip[1]));
        COUNT_EDGE(ip[4 + ip[2] + i]);
        JUMP_BY(static_cast<int32_t>(ip[3 + i]));
        DISPATCH();
      }
      CASE_COUNTED(CountEdge) {
        COUNT_EDGE(ip[1]);
        ip += 2;
        DISPATCH();
      }
      // [libc.X.counted skip G H base][count.edge e][ret]: the translated
      // body, counting into the frame's counters (run_known_counted).
      CASE_COUNTED(LibcMemcpyCounted) {
        ip += libc_memcpy_counted(mem, memsize, ip, fp, counters) ? 5 : ip[1];
        DISPATCH();
      }
      CASE_COUNTED(LibcMemsetCounted) {
        ip += libc_memset_counted(mem, memsize, ip, fp, counters) ? 5 : ip[1];
        DISPATCH();
      }
      CASE_COUNTED(LibcMemcmpCounted) {
        ip += libc_memcmp_counted(mem, memsize, ip, fp, counters) ? 5 : ip[1];
        DISPATCH();
      }
      CASE_COUNTED(LibcStrlenCounted) {
        ip += libc_strlen_counted(mem, memsize, ip, fp, counters) ? 5 : ip[1];
        DISPATCH();
      }
      CASE_COUNTED(LibcDlfreeCounted) {
        ip += libc_dlfree_counted(mem, memsize, inst->globals[0], ip, fp, counters) ? 5 : ip[1];
        DISPATCH();
      }
      CASE_COUNTED(LibcDlmallocCounted) {
        ip += libc_dlmalloc_counted(mem, memsize, inst->globals[0], ip, fp, counters) ? 5 : ip[1];
        DISPATCH();
      }
      // A switch pair's counted twin (vm/switch_pairs.def): [op dst ...load's
      // operands] [switch.counted dst n off0..off(n) edge0..edge(n)], the
      // load, then the switch.counted's own code on the slot the load wrote
      // (one handler's code for the switch, as probe.counted: fewer values
      // live across the loop, whose allocation such handlers move).
#define WZVM_SWITCH_PAIR(Name, First, Load, text)                                          \
  CASE_COUNTED(Name##Counted) {                                                            \
    switch_pair_counted_##Name : __attribute__((unused));                                  \
    uint32_t v;                                                                            \
    if (__builtin_expect(!switch_load<IOp::First, IOp::Load>(fp, ip, mem, memsize, v), 0)) \
      TRAP(TrapCode::MemoryOutOfBounds);                                                   \
    ip += switch_pair_load_words(IOp::First);                                              \
    goto switch_counted;                                                                   \
  }
#include "vm/switch_pairs.def"
#undef WZVM_SWITCH_PAIR
      // Lua's shared tail with its jump counted: [op ...] [jump.counted
      // offset edge], as I32AddJump and the others above, then the edge.
      CASE_COUNTED(I32AddJumpCounted) {
        wr<uint32_t>(fp, ip[1], rd<uint32_t>(fp, ip[2]) + rd<uint32_t>(fp, ip[3]));
        COUNT_EDGE(ip[6]);
        JUMP_BY(4 + static_cast<int32_t>(ip[5]));
        DISPATCH();
      }
      CASE_COUNTED(I32LoadShrUAndAddJumpCounted) {
        if (__builtin_expect(!mem_access<IOp::I32Load, 0>(fp, ip, mem, memsize), 0))
          TRAP(TrapCode::MemoryOutOfBounds);
        shr_u_and_add<4>(fp, ip);
        COUNT_EDGE(ip[12]);
        JUMP_BY(10 + static_cast<int32_t>(ip[11]));
        DISPATCH();
      }
      CASE_COUNTED(Copy2I32AddJumpCounted) {
        copies<2>(fp, ip);
        wr<uint32_t>(fp, ip[6], rd<uint32_t>(fp, ip[7]) + rd<uint32_t>(fp, ip[8]));
        COUNT_EDGE(ip[11]);
        JUMP_BY(9 + static_cast<int32_t>(ip[10]));
        DISPATCH();
      }
      // The three with their jump's target known (vm/counted_ops.def): its
      // code next, without a dispatch.
      CASE_COUNTED(I32AddJumpTailCounted) {
        wr<uint32_t>(fp, ip[1], rd<uint32_t>(fp, ip[2]) + rd<uint32_t>(fp, ip[3]));
        COUNT_EDGE(ip[6]);
        JUMP_BY(4 + static_cast<int32_t>(ip[5]));
        goto lua_tail_counted;
      }
      CASE_COUNTED(Copy2I32AddJumpTailCounted) {
        copies<2>(fp, ip);
        wr<uint32_t>(fp, ip[6], rd<uint32_t>(fp, ip[7]) + rd<uint32_t>(fp, ip[8]));
        COUNT_EDGE(ip[11]);
        JUMP_BY(9 + static_cast<int32_t>(ip[10]));
        goto lua_tail_counted;
      }
      CASE_COUNTED(I32LoadShrUAndAddJumpSwitchCounted) {
      lua_tail_counted:
        if (__builtin_expect(!mem_access<IOp::I32Load, 0>(fp, ip, mem, memsize), 0))
          TRAP(TrapCode::MemoryOutOfBounds);
        shr_u_and_add<4>(fp, ip);
        COUNT_EDGE(ip[12]);
        JUMP_BY(10 + static_cast<int32_t>(ip[11]));
        goto switch_pair_counted_LoadAndShlAddI32LoadSwitch;
      }
      // [op index leave land n slot0..] before an interpreter's dispatch
      // br_table: the sink may move the frame's counting to another node.
      // Then the switch.counted always after it, without a dispatch.
      CASE_COUNTED(ProbeCounted) {
      probe_counted:
        if constexpr (kCounting) {
          if (prof->sink && !probe_stays(prof->probe_stay, frame, counters, fp, ip, mem, memsize)) {
            uint64_t* to = probe_counters(*prof, frame, fp, ip, counters);
            if (to != counters) {
              COUNT_EDGE(ip[2]);
              to[ip[3]] += 1;
              counters = frame->counters = to;
            }
          }
        }
        ip += 5 + ip[4];
        goto switch_counted;
      }
      // CPython's head before the probe (the chain, the copies before it):
      // each op's work in order, then the probe's code, as plain code's
      // copy4+copy3+i32.and+add+switch does with the switch.
      CASE_COUNTED(I32AndAddProbeCounted) {
      and_add_probe_counted:
        wr<uint32_t>(fp, ip[1],
                     (rd<uint32_t>(fp, ip[2]) & rd<uint32_t>(fp, ip[3])) + rd<uint32_t>(fp, ip[4]));
        ip += 5;
        goto probe_counted;
      }
      CASE_COUNTED(Copy3AndAddProbeCounted) {
        copies<3>(fp, ip);
        ip += 7;
        goto and_add_probe_counted;
      }
      CASE_COUNTED(Copy7AndAddProbeCounted) {
        copies<4>(fp, ip);
        ip += 9;
        copies<3>(fp, ip);
        ip += 7;
        goto and_add_probe_counted;
      }
#undef THEN_COUNTED_COND_JUMP
#undef COUNT_EDGE
      // A copy run, then call_local.counted's own code (the copies before
      // a call_func alike, above).
      CASE_COUNTED(CopyCallLocalCounted) {
        copies<1>(fp, ip);
        ip += 3;
        goto call_local_counted;
      }
      CASE_COUNTED(Copy2CallLocalCounted) {
        copies<2>(fp, ip);
        ip += 5;
        goto call_local_counted;
      }
      CASE_COUNTED(Copy3CallLocalCounted) {
        copies<3>(fp, ip);
        ip += 7;
        goto call_local_counted;
      }
      CASE_COUNTED(Copy4CallLocalCounted) {
        copies<4>(fp, ip);
        ip += 9;
        goto call_local_counted;
      }
      CASE_COUNTED(CallLocalCounted) {
      call_local_counted:
        // [call_local.counted func base code(2) kid]: the code as CallFunc's
        Regs r = REGS();
        END_CALL(r, call_wasm<kMode, CallSite{.kid = true, .local = true}>(
                        env, r, inst->funcs[ip[1]], code_at(ip), fp + ip[2], ip + kCallFuncWords + 1,
                        ip[kCallFuncWords]));
      }
#if !defined(WZVM_SWITCH_DISPATCH)
    }
#endif

    // Instructions that lowering always rewrites; reaching one is a compiler bug.
    CASE(Nop)
    CASE(Block)
    CASE(Loop)
    CASE(If)
    CASE(Else)
    CASE(End)
    CASE(Br)
    CASE(BrIf)
    CASE(BrTable)
    CASE(Return)
    CASE(Call)
    CASE(CallIndirect)
    CASE(Drop)
    CASE(Select)
    CASE(SelectT)
    CASE(LocalGet)
    CASE(LocalSet)
    CASE(LocalTee)
    CASE(I32Const)
    CASE(I64Const)
    CASE(F32Const)
    CASE(F64Const)
    CASE(Try)
    CASE(Catch)
    CASE(CatchAll)
    CASE(Delegate)
    CASE(RefNull) {
    unlowered_op:
      __attribute__((unused));
      host_trap = Trap::make(TrapCode::HostError, std::string("internal error: unlowered instruction ") +
                                                      iop_name(static_cast<IOp>(*ip)));
      goto on_host_trap;
    }

#if defined(WZVM_SWITCH_DISPATCH)
    default:
      host_trap = Trap::make(TrapCode::HostError, "internal error: bad internal opcode");
      goto on_host_trap;
  }
#else
  }
#endif

#if !defined(WZVM_SWITCH_DISPATCH)
  // Every entry of a profiling loop's table leads here once raise() has
  // run: the table is put back, then the flag tested (a raise() between
  // the two patches the table again, so no request is lost), and the
  // instruction at ip dispatched as usual. At a hooked return's stub, the
  // op after it polls instead (the table stays patched).
poll_sample:
  __attribute__((unused));
  // Only a Profiling's table leads here: `prof` is set.
  if (ip == kHookedReturnStub) goto* table_labels[*ip];
  restore_dispatch(prof->dispatch[kCounting ? 1 : 0], table_labels);
  SAFE_POINT();
  // This instruction runs whatever happens to the table meanwhile: a
  // raise() since the test patched it again (its request is not lost, the
  // next instruction polls), and ticks faster than one poll cannot stop
  // the loop from making progress.
  goto* table_labels[*ip];
#endif

  // exception-handling: unwind to the handler of exception `exn` raised at
  // `ip`. Each frame is searched at its current instruction (the top one) or
  // its call; a frame without a handler is popped, and an exception that
  // leaves the entry frame ends this entry as a trap. Counting builds take
  // back the part of each segment after the throw or call that never ran.
on_throw:
  for (const uint32_t* at = ip;;) {
    const CompiledFunc* code = frame->func->code;
    const TryRegion* region = nullptr;
    const TryRegion::Handler* h = find_handler(*code, static_cast<uint32_t>(at - code->code.data()),
                                               th.exceptions[exn - 1].tag, *inst, region);
    if constexpr (kCounting) uncount_unwound(*prof, frame, frame, at, false);
    if (h) {
      if (h->tag != TryRegion::kCatchAll) {
        const std::vector<uint64_t>& values = th.exceptions[exn - 1].values;
        if (!values.empty())
          std::memcpy(fp + region->dst_slot, values.data(), values.size() * sizeof(uint64_t));
      }
      fp[region->exn_slot] = exn;
      ip = code->code.data() + h->target;
      if constexpr (kCounting) counters = frame->counters;
      DISPATCH();
    }
    if (frame == entry) {
      ip = at;
      break;
    }
    --frame;
    fp = frame->fp;
    at = resume_ip(frame) - 1;
    inst = frame->func->instance;
    LOAD_MEM();
  }
  host_trap = Trap::make(TrapCode::UncaughtException);
  add_backtrace(host_trap, entry, frame, ip);
  th.depth = saved_depth;
  if (saved_depth == 0) th.exceptions.clear();
  if (profiled) {
    if (saved_depth == 0 && prof->cpu) final_sample(*prof, nc, frame, ip);
  }
  return host_trap;

done:
  th.depth = saved_depth;
  if (saved_depth == 0 && !th.exceptions.empty()) th.exceptions.clear();
  if (profiled) {
    // The guest time since the last sample belongs in the profile too. An
    // interrupt that came after the last instruction stays asked for (the
    // next entry takes it): the run itself finished.
    if (saved_depth == 0 && prof->cpu && final_sample(*prof, nc, frame, ip)) prof->raise();
  }
  return {};

second_access_out_of_bounds:
  // The second access of a paired op (vm/mem_pairs.def) is out of bounds:
  // the trap is at its own op word.
  ip += 4;
  TRAP(TrapCode::MemoryOutOfBounds);

on_trap:
  // A counted module's stub: its frame size, CompiledFunc::kUnlowered, fails
  // the frame check of every call, so that its first call lowers it here
  // and runs again (the call op, which the check left undone, or the part
  // of a fused op that calls), before anything of it is counted: the
  // counting loop's calls count the callee's first op and size its node's
  // counters from its code. Nothing on the path of calls that fit: with the
  // lowering in the calls' slow path, the counting loop ran 2.5% more host
  // instructions (callgrind, Lua; GCC's choices in the whole loop). A frame
  // that does not fit once lowered traps as before, at the call.
  if constexpr (kCounting) {
    if (FuncInst* unfit = std::exchange(th.unfit, nullptr);
        unfit && trap_code == TrapCode::StackExhausted &&
        unfit->code->frame_slots == CompiledFunc::kUnlowered) {
      if (!lower_lazily(unfit, host_trap)) goto on_host_trap;
      trap_in_call = false;
      DISPATCH();
    }
  }
  // threads: another thread may have grown a shared memory since this one
  // cached its size. Bounds are checked before anything is written, so the
  // instruction can run again with the new size; sizes only grow, so it
  // cannot loop.
  if (trap_code == TrapCode::MemoryOutOfBounds && memory && memory->type.limits.shared &&
      memory->current_size() != memsize) {
    memsize = memory->current_size();
    DISPATCH();
  }
  host_trap = Trap::make(trap_code);
on_host_trap:
  // A trap inside a call is reported at the call instruction of the caller.
  // (A trap inside a host call leaves no stub: host functions are never hooked.)
  add_backtrace(host_trap, entry, frame, trap_in_call ? frame->ip - 1 : ip);
  th.depth = saved_depth;
  if (saved_depth == 0 && !th.exceptions.empty()) th.exceptions.clear();
  if (profiled) {
    // An interrupt (only SAFE_POINT traps with one) comes before the
    // instruction at ip; any other trap comes from it.
    if constexpr (kCounting)
      uncount_unwound(*prof, entry, frame, trap_in_call ? frame->ip - 1 : ip,
                      trap_code == TrapCode::Interrupted);
    if (saved_depth == 0 && prof->cpu) final_sample(*prof, nc, frame, trap_in_call ? frame->ip - 1 : ip);
  }
  return host_trap;

#undef JUMP_BY
#undef THEN_COND_JUMP
#undef SAFE_POINT
#undef END_CALL
#undef REGS
#undef CASE
#undef CASE_COUNTED
#undef CASE_PLAIN
#undef DISPATCH
#undef TRAP
#undef CALL_LIMIT
#undef LOAD_MEM
}

}  // namespace

// The two loops are compiled apart, each a function of thousands of blocks
// whose compile time grows faster than its size: in two translation units
// the build's two cores compile them side by side (docs/RATIONALE.md,
// Hardening: the sanitizer build's compile of this file was most of CI's
// time).
#if defined(WZVM_INTERP_COUNTED_LOOP)
Trap run_counted(Store& store, Thread& th, FuncInst* func, uint64_t* args) {
  return run<Mode::Counted>(store, th, func, args);
}
#else
Trap run_counted(Store& store, Thread& th, FuncInst* func, uint64_t* args);  // interp_counted.cc

namespace {
Trap execute_guest(Store& store, Thread& th, FuncInst* func, uint64_t* args) {
  if (func->is_host()) return call_host(store, nullptr, func, args);
  // Only the counting loop has handlers for vm/counted_ops.def.
  if (store.needs_counting() && !(th.profiling && th.profiling->count_instructions))
    return Trap::make(
        TrapCode::HostError,
        "code lowered for instruction counting (LoadOptions::count_instructions) runs only on a "
        "thread that counts (Profiling::count_instructions)");
  if (!th.profiling) return run<Mode::Plain>(store, th, func, args);
  // Frames in use: a host function calls back into wasm (ProfileSink::on_reentry).
  ProfileSink* nested = th.depth > 0 ? th.profiling->sink : nullptr;
  if (nested) nested->on_reentry(true);
  struct Reentry {  // ends the reentry however the run ends
    ProfileSink* sink;
    ~Reentry() {
      if (sink) sink->on_reentry(false);
    }
  } reentry{nested};
  return th.profiling->count_instructions ? run_counted(store, th, func, args)
                                          : run<Mode::Plain>(store, th, func, args);
}
}  // namespace

// Running allocates on the host: lowering a body on its first call, and
// with profiles the call tree's nodes and their counter blocks, samples'
// sites, CPython's line tables. When the host has no more memory (a ulimit,
// or counting a program whose call paths are millions), the allocation
// throws std::bad_alloc through the loop; it ends the run here as a trap
// instead of terminating wzvm with an abort. The loop's frames are left as
// they were at the throw, so the thread is put back as a trap leaves it;
// what profiling counted is not exact any more (a segment counted whole on
// entry is not taken back), which the embedder learns from the trap's code.
Trap execute(Store& store, Thread& th, FuncInst* func, uint64_t* args) {
  const uint32_t depth = th.depth;
  uint64_t* const top = th.top;
  try {
    return execute_guest(store, th, func, args);
  } catch (const std::bad_alloc&) {
    th.depth = depth;
    th.top = top;
    th.unfit = nullptr;
    if (depth == 0) th.exceptions.clear();
    return Trap::make(TrapCode::HostOutOfMemory);
  }
}

Trap Store::invoke(FuncInst* func, std::span<const Value> args, std::vector<Value>& results) {
  if (args.size() != func->type.params.size())
    return Trap::make(TrapCode::HostError, "wrong number of arguments: expected " +
                                               std::to_string(func->type.params.size()) + ", got " +
                                               std::to_string(args.size()));
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].type != func->type.params[i])
      return Trap::make(TrapCode::HostError, "argument " + std::to_string(i) + " has type " +
                                                 valtype_name(args[i].type) + ", expected " +
                                                 valtype_name(func->type.params[i]));
  Thread& th = *thread();  // this OS thread's (ThreadScope)
  uint64_t* base = th.top;
  size_t need = 2 * std::max(args.size(), func->type.results.size());
  if (base + need > th.stack_end) return Trap::make(TrapCode::StackExhausted);
  values_to_slots(args, base);
  Trap t = execute(*this, th, func, base);
  if (!t) slots_to_values(func->type.results, base, results);
  return t;
}

#endif

}  // namespace wzvm::vm
