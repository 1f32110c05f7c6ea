// Runtime objects and linking (vm/instance.cc), on modules built by hand as
// Module structs so nothing here needs the decoder or the interpreter.

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "vm/runtime.h"

namespace wzvm::vm {
namespace {

MemoryType mem_type(uint64_t min, std::optional<uint64_t> max = std::nullopt) {
  MemoryType t;
  t.limits.min = min;
  t.limits.max = max;
  return t;
}

TableType table_type(uint64_t min, std::optional<uint64_t> max = std::nullopt,
                     ValType elem = ValType::FuncRef) {
  TableType t;
  t.elem = elem;
  t.limits.min = min;
  t.limits.max = max;
  return t;
}

ConstExpr i32_const(uint32_t v) {
  ConstExpr e;
  e.code.push_back({ConstInstr::Op::I32Const, ValType::FuncRef, v, 0});
  return e;
}

ConstExpr single(ConstInstr::Op op, uint64_t v) {
  ConstExpr e;
  e.code.push_back({op, ValType::FuncRef, v, 0});
  return e;
}

Import import_of(ExternKind kind, std::string field) {
  Import imp;
  imp.module = "env";
  imp.field = std::move(field);
  imp.kind = kind;
  return imp;
}

HostFn nop_host() {
  return [](HostContext&, std::span<const Value>, std::span<Value>) { return Trap{}; };
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// --- MemInst ---------------------------------------------------------------

TEST(MemInst, GrowsWithinMaxAndKeepsBase) {
  MemInst m(mem_type(1, 3));
  ASSERT_TRUE(m.ok());
  ASSERT_NE(m.data, nullptr);
  EXPECT_EQ(m.size, 65536u);
  EXPECT_EQ(m.max_pages, 3u);
  uint8_t* base = m.data;
  m.data[65535] = 7;
  EXPECT_EQ(m.grow(1), 1);
  EXPECT_EQ(m.data, base);  // the interpreter caches the base pointer
  EXPECT_EQ(m.grow(2), -1);
  EXPECT_EQ(m.pages(), 2u);
  EXPECT_EQ(m.grow(1), 2);
  EXPECT_EQ(m.grow(0), 3);
  EXPECT_EQ(m.grow(1), -1);
  EXPECT_EQ(m.size, 3u * 65536);
  EXPECT_EQ(m.data[65535], 7);
  // New pages read as zero and are writable to the last byte.
  for (uint64_t i = 65536; i < m.size; i += 4096) EXPECT_EQ(m.data[i], 0);
  m.data[m.size - 1] = 1;
}

TEST(MemInst, HostileDeltasFail) {
  MemInst m(mem_type(1));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m.grow(UINT64_MAX), -1);
  EXPECT_EQ(m.grow(uint64_t{1} << 48), -1);
  EXPECT_EQ(m.grow(65536), -1);  // 65537 pages would pass 4 GiB
  EXPECT_EQ(m.pages(), 1u);
  EXPECT_EQ(m.grow(65535), 1);  // exactly 4 GiB of address space: reserved, so it fits
  EXPECT_EQ(m.pages(), 65536u);
}

TEST(MemInst, ZeroMax) {
  MemInst m(mem_type(0, 0));
  EXPECT_TRUE(m.ok());
  EXPECT_EQ(m.size, 0u);
  EXPECT_EQ(m.grow(0), 0);
  EXPECT_EQ(m.grow(1), -1);
}

TEST(MemInst, EmptyThenGrow) {
  MemInst m(mem_type(0));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m.size, 0u);
  EXPECT_EQ(m.grow(2), 0);
  ASSERT_NE(m.data, nullptr);
  m.data[2 * 65536 - 1] = 3;
}

TEST(MemInst, PageCapLimitsGrowthNotInitialSize) {
  MemInst capped(mem_type(1), 4);
  EXPECT_EQ(capped.max_pages, 4u);
  EXPECT_EQ(capped.grow(3), 1);
  EXPECT_EQ(capped.grow(1), -1);

  MemInst big(mem_type(5, 10), 2);
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big.pages(), 5u);
  EXPECT_EQ(big.grow(1), -1);
}

TEST(MemInst, UnrepresentableMinimumIsNotOk) {
  MemInst m(mem_type(uint64_t{1} << 40));
  EXPECT_FALSE(m.ok());
}

TEST(MemInstDeathTest, BytesPastSizeAreInaccessible) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  MemInst m(mem_type(1, 2));
  ASSERT_TRUE(m.ok());
  volatile uint8_t* p = m.data;
  EXPECT_DEATH(p[65536] = 1, "");
  EXPECT_EQ(m.grow(1), 1);
  p[65536] = 1;  // now mapped read-write
  EXPECT_EQ(p[65536], 1);
}

// Runs in the death-test child: exits 0 when all holds, else the failing step.
[[noreturn]] void grow_under_address_space_limit() {
  // 1 GiB above what the process already maps (sanitizers map terabytes of shadow).
  unsigned long vm_pages = 0;
  FILE* statm = std::fopen("/proc/self/statm", "r");
  if (!statm || std::fscanf(statm, "%lu", &vm_pages) != 1) std::_Exit(2);
  std::fclose(statm);
  rlimit lim{};
  lim.rlim_cur = lim.rlim_max = vm_pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) + (uint64_t{1} << 30);
  if (setrlimit(RLIMIT_AS, &lim) != 0) std::_Exit(2);
  MemInst m(mem_type(1));
  if (!m.ok() || m.pages() != 1) std::_Exit(3);
  if (m.max_pages >= 65536 || m.max_pages < 2) std::_Exit(4);
  if (m.grow(1) != 1) std::_Exit(5);
  m.data[2 * 65536 - 1] = 1;
  if (m.grow(65536) != -1) std::_Exit(6);
  if (m.grow(m.max_pages - m.pages() + 1) != -1) std::_Exit(7);
  std::_Exit(0);
}

TEST(MemInstDeathTest, SmallerReservationWhenAddressSpaceIsShort) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // With 1 GiB of spare address space the 4 GiB reservation fails; the memory must
  // still work, with growth ending at what could be reserved.
  EXPECT_EXIT(grow_under_address_space_limit(), ::testing::ExitedWithCode(0), "");
}

TEST(Store, AddMemoryHonoursStoreCap) {
  StoreLimits limits;
  limits.max_memory_pages = 2;
  Store store(limits);
  MemInst* m = store.add_memory(mem_type(1));
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->grow(1), 1);
  EXPECT_EQ(m->grow(1), -1);
  EXPECT_EQ(store.add_memory(mem_type(uint64_t{1} << 40)), nullptr);
}

// --- TableInst ---------------------------------------------------------------

TEST(TableInst, GrowWithinMax) {
  TableInst t;
  t.type = table_type(1, 4);
  t.elems.assign(1, 0);
  EXPECT_EQ(t.grow(2, 42), 1);
  ASSERT_EQ(t.elems.size(), 3u);
  EXPECT_EQ(t.elems[0], 0u);
  EXPECT_EQ(t.elems[1], 42u);
  EXPECT_EQ(t.elems[2], 42u);
  EXPECT_EQ(t.grow(2, 0), -1);
  EXPECT_EQ(t.grow(1, 0), 3);
  EXPECT_EQ(t.grow(0, 0), 4);
  EXPECT_EQ(t.grow(1, 0), -1);
}

TEST(TableInst, GrowPastU32Fails) {
  // table_grow.wast: 0x10 + 0xffff_fff0 does not fit in an i32 index.
  TableInst t;
  t.type = table_type(0x10);
  t.elems.assign(0x10, 0);
  EXPECT_EQ(t.grow(0xfffffff0u, 0), -1);
  EXPECT_EQ(t.grow(UINT64_MAX, 0), -1);
  EXPECT_EQ(t.elems.size(), 0x10u);
}

TEST(TableInst, HugeGrowFailsInsteadOfAllocating) {
  TableInst t;
  t.type = table_type(0, 0xffffffffu);
  EXPECT_EQ(t.grow(0xffffffffu, 0), -1);
  EXPECT_EQ(t.grow(800, 0), 0);
}

// --- Store ---------------------------------------------------------------------

TEST(Store, InternTypeIsStructural) {
  Store store;
  FuncType a{{ValType::I32}, {}};
  FuncType b{{ValType::I32}, {}};
  FuncType c{{ValType::I64}, {}};
  FuncType d{{}, {ValType::I32}};
  uint32_t ia = store.intern_type(a);
  EXPECT_EQ(store.intern_type(b), ia);
  EXPECT_NE(store.intern_type(c), ia);
  EXPECT_NE(store.intern_type(d), ia);
  EXPECT_NE(store.intern_type(d), store.intern_type(c));
  FuncInst* f = store.add_host_func("env", "f", a, nop_host());
  EXPECT_EQ(f->type_id, ia);
  EXPECT_TRUE(f->is_host());
}

// --- Linking -------------------------------------------------------------------

TEST(Link, WrongImportCount) {
  Store store;
  auto m = std::make_shared<Module>();
  m->imports.push_back(import_of(ExternKind::Global, "g"));
  m->imports.back().global = {ValType::I32, false};
  m->num_imported_globals = 1;
  auto r = store.instantiate(m, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, Error::Kind::Link);
}

TEST(Link, FunctionTypesMustMatchExactly) {
  Store store;
  auto m = std::make_shared<Module>();
  m->types.push_back({{ValType::I32}, {}});
  m->imports.push_back(import_of(ExternKind::Func, "f"));
  m->imports.back().func_type = 0;
  m->num_imported_funcs = 1;
  m->func_type_indices = {0};

  FuncInst* wrong = store.add_host_func("env", "f", FuncType{{}, {}}, nop_host());
  Extern e;
  e.kind = ExternKind::Func;
  e.func = wrong;
  auto r = store.instantiate(m, {e});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, Error::Kind::Link);
  EXPECT_TRUE(starts_with(r.error().message, "incompatible import type")) << r.error().message;

  e.func = store.add_host_func("env", "f", FuncType{{ValType::I32}, {}}, nop_host());
  auto ok = store.instantiate(m, {e});
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ((*ok)->funcs.at(0), e.func);
}

TEST(Link, KindMustMatch) {
  Store store;
  auto m = std::make_shared<Module>();
  m->imports.push_back(import_of(ExternKind::Memory, "mem"));
  m->imports.back().memory = mem_type(1);
  m->num_imported_memories = 1;
  Extern e;
  e.kind = ExternKind::Global;
  e.global = store.add_global({ValType::I32, false}, 0);
  auto r = store.instantiate(m, {e});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, Error::Kind::Link);
  EXPECT_TRUE(starts_with(r.error().message, "incompatible import type"));
}

TEST(Link, MemoryLimits) {
  Store store;
  auto m = std::make_shared<Module>();
  m->imports.push_back(import_of(ExternKind::Memory, "mem"));
  m->imports.back().memory = mem_type(2, 4);
  m->num_imported_memories = 1;
  auto link = [&](MemInst* mem) {
    Extern e;
    e.kind = ExternKind::Memory;
    e.memory = mem;
    return store.instantiate(m, {e});
  };
  EXPECT_FALSE(link(store.add_memory(mem_type(1, 4))).ok());  // min too small
  EXPECT_FALSE(link(store.add_memory(mem_type(2))).ok());     // no max, but one is required
  EXPECT_FALSE(link(store.add_memory(mem_type(2, 5))).ok());  // max too large
  EXPECT_TRUE(link(store.add_memory(mem_type(3, 3))).ok());

  // A memory that grew satisfies a larger minimum (its type tracks its size).
  MemInst* grown = store.add_memory(mem_type(1, 4));
  ASSERT_EQ(grown->grow(1), 1);
  EXPECT_TRUE(link(grown).ok());

  MemoryType shared = mem_type(2, 4);
  shared.limits.shared = true;
  EXPECT_FALSE(link(store.add_memory(shared)).ok());
}

TEST(Link, TableLimitsAndElemType) {
  Store store;
  auto m = std::make_shared<Module>();
  m->imports.push_back(import_of(ExternKind::Table, "t"));
  m->imports.back().table = table_type(2, 10);
  m->num_imported_tables = 1;
  auto link = [&](TableInst* t) {
    Extern e;
    e.kind = ExternKind::Table;
    e.table = t;
    return store.instantiate(m, {e});
  };
  EXPECT_FALSE(link(store.add_table(table_type(1, 10))).ok());
  EXPECT_FALSE(link(store.add_table(table_type(2))).ok());
  EXPECT_FALSE(link(store.add_table(table_type(2, 11))).ok());
  EXPECT_FALSE(link(store.add_table(table_type(2, 10, ValType::ExternRef))).ok());
  EXPECT_TRUE(link(store.add_table(table_type(5, 10))).ok());
  TableInst* grown = store.add_table(table_type(0, 10));
  ASSERT_EQ(grown->grow(2, 0), 0);
  EXPECT_TRUE(link(grown).ok());
}

TEST(Link, GlobalTypeAndMutability) {
  Store store;
  auto m = std::make_shared<Module>();
  m->imports.push_back(import_of(ExternKind::Global, "g"));
  m->imports.back().global = {ValType::I32, true};
  m->num_imported_globals = 1;
  auto link = [&](GlobalInst* g) {
    Extern e;
    e.kind = ExternKind::Global;
    e.global = g;
    return store.instantiate(m, {e});
  };
  EXPECT_FALSE(link(store.add_global({ValType::I32, false}, 0)).ok());
  EXPECT_FALSE(link(store.add_global({ValType::I64, true}, 0)).ok());
  EXPECT_TRUE(link(store.add_global({ValType::I32, true}, 0)).ok());
}

// --- Instantiation without running code ---------------------------------------

TEST(Instantiate, GlobalsSegmentsAndExports) {
  Store store;
  auto m = std::make_shared<Module>();
  m->types.push_back({{}, {}});
  m->imports.push_back(import_of(ExternKind::Func, "f"));
  m->imports.back().func_type = 0;
  m->imports.push_back(import_of(ExternKind::Global, "base"));
  m->imports.back().global = {ValType::I32, false};
  m->num_imported_funcs = 1;
  m->num_imported_globals = 1;
  m->func_type_indices = {0};
  m->tables.push_back(table_type(4));
  m->memories.push_back(mem_type(1));

  // (global i32 (i32.add (global.get $base) (i32.const 3)))  ;; extended-const
  Global g;
  g.type = {ValType::I32, false};
  g.init = single(ConstInstr::Op::GlobalGet, 0);
  g.init.code.push_back({ConstInstr::Op::I32Const, ValType::FuncRef, 3, 0});
  g.init.code.push_back({ConstInstr::Op::I32Add, ValType::FuncRef, 0, 0});
  m->globals.push_back(g);
  // (global funcref (ref.func $f))
  Global gr;
  gr.type = {ValType::FuncRef, false};
  gr.init = single(ConstInstr::Op::RefFunc, 0);
  m->globals.push_back(gr);

  // (elem (i32.const 1) func $f $f), (elem declare func $f), (elem funcref (ref.null func))
  ElemSegment active;
  active.offset = i32_const(1);
  active.items = {single(ConstInstr::Op::RefFunc, 0), single(ConstInstr::Op::RefFunc, 0)};
  ElemSegment declared = active;
  declared.mode = SegmentMode::Declarative;
  ElemSegment passive;
  passive.mode = SegmentMode::Passive;
  passive.items = {single(ConstInstr::Op::RefNull, 0), single(ConstInstr::Op::RefFunc, 0)};
  m->elems = {active, declared, passive};

  // (data (global.get $base) "hi"), (data passive "xyz")
  m->bytes = {'h', 'i', 'x', 'y', 'z'};
  DataSegment d;
  d.offset = single(ConstInstr::Op::GlobalGet, 0);
  d.data_offset = 0;
  d.size = 2;
  DataSegment dp;
  dp.mode = SegmentMode::Passive;
  dp.data_offset = 2;
  dp.size = 3;
  m->datas = {d, dp};
  m->exports = {{"mem", ExternKind::Memory, 0},
                {"g", ExternKind::Global, 1},
                {"f", ExternKind::Func, 0},
                {"t", ExternKind::Table, 0}};

  FuncInst* f = store.add_host_func("env", "f", FuncType{}, nop_host());
  GlobalInst* base = store.add_global({ValType::I32, false}, 100);
  Extern ef, eg;
  ef.kind = ExternKind::Func;
  ef.func = f;
  eg.kind = ExternKind::Global;
  eg.global = base;
  auto r = store.instantiate(m, {ef, eg});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  Instance* inst = *r;

  ASSERT_EQ(inst->globals.size(), 3u);
  EXPECT_EQ(inst->globals[1]->value, 103u);
  EXPECT_EQ(inst->globals[2]->value, reinterpret_cast<Ref>(f));
  EXPECT_EQ(inst->exported_global("g"), inst->globals[1]);
  EXPECT_EQ(inst->exported_func("f"), f);
  EXPECT_EQ(inst->exported_func("mem"), nullptr);
  EXPECT_EQ(inst->exported_func("nope"), nullptr);

  TableInst* t = inst->exported_table("t");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->elems, (std::vector<Ref>{0, reinterpret_cast<Ref>(f), reinterpret_cast<Ref>(f), 0}));
  ASSERT_EQ(inst->elems.size(), 3u);
  EXPECT_TRUE(inst->elems[0].refs.empty());  // active: dropped after init
  EXPECT_TRUE(inst->elems[1].refs.empty());  // declarative: dropped at once
  EXPECT_EQ(inst->elems[2].refs, (std::vector<Ref>{0, reinterpret_cast<Ref>(f)}));

  MemInst* mem = inst->exported_memory("mem");
  ASSERT_NE(mem, nullptr);
  EXPECT_EQ(mem->data[100], 'h');
  EXPECT_EQ(mem->data[101], 'i');
  EXPECT_EQ(inst->datas[0].size, 0u);
  EXPECT_EQ(inst->datas[1].size, 3u);
  EXPECT_EQ(inst->datas[1].bytes[0], 'x');
}

TEST(Instantiate, OutOfBoundsSegmentsTrapAfterEarlierWrites) {
  Store store;
  auto m = std::make_shared<Module>();
  // The memory is imported so the test can see what the failed instantiation left.
  m->imports.push_back(import_of(ExternKind::Memory, "mem"));
  m->imports.back().memory = mem_type(1);
  m->num_imported_memories = 1;
  MemInst* mem = store.add_memory(mem_type(1));
  Extern em;
  em.kind = ExternKind::Memory;
  em.memory = mem;
  const std::vector<Extern> imports = {em};
  m->bytes = {'a', 'b'};
  DataSegment ok_seg;
  ok_seg.offset = i32_const(0);
  ok_seg.size = 1;
  DataSegment bad = ok_seg;
  bad.offset = i32_const(65535);
  bad.size = 2;  // one byte past the end
  m->datas = {ok_seg, bad};
  auto r = store.instantiate(m, imports);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, Error::Kind::Instantiate);
  EXPECT_EQ(r.error().message, "out of bounds memory access");
  EXPECT_EQ(mem->data[0], 'a');    // the earlier segment stays written
  EXPECT_EQ(mem->data[65535], 0);  // the failing one wrote nothing

  // Offsets near 2^32 must not wrap around.
  m->datas = {ok_seg};
  m->datas[0].offset = i32_const(0xffffffffu);
  r = store.instantiate(m, imports);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "out of bounds memory access");

  // A zero-length segment at exactly the end is fine; one past it traps.
  m->datas[0].size = 0;
  m->datas[0].offset = i32_const(65536);
  EXPECT_TRUE(store.instantiate(m, imports).ok());
  m->datas[0].offset = i32_const(65537);
  EXPECT_FALSE(store.instantiate(m, imports).ok());
}

TEST(Instantiate, OutOfBoundsElemSegment) {
  Store store;
  auto m = std::make_shared<Module>();
  m->types.push_back({});
  m->imports.push_back(import_of(ExternKind::Table, "t"));
  m->imports.back().table = table_type(2);
  m->num_imported_tables = 1;
  TableInst* table = store.add_table(table_type(2));
  Extern et;
  et.kind = ExternKind::Table;
  et.table = table;
  m->functions.push_back({});
  m->func_type_indices = {0};
  ElemSegment first;
  first.offset = i32_const(0);
  first.items = {single(ConstInstr::Op::RefFunc, 0)};
  ElemSegment second;
  second.offset = i32_const(1);
  second.items = {single(ConstInstr::Op::RefFunc, 0), single(ConstInstr::Op::RefFunc, 0)};
  m->elems = {first, second};
  auto r = store.instantiate(m, {et});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, Error::Kind::Instantiate);
  EXPECT_EQ(r.error().message, "out of bounds table access");
  // The first segment's write stays and points at the new instance's function.
  ASSERT_NE(table->elems[0], 0u);
  auto* f = reinterpret_cast<FuncInst*>(table->elems[0]);
  EXPECT_EQ(f->func_index, 0u);
  EXPECT_NE(f->instance, nullptr);
  EXPECT_EQ(table->elems[1], 0u);
}

TEST(Instantiate, MemoryAllocationFailureIsOutOfMemory) {
  // No store cap: the memory itself cannot be made.
  Store store(StoreLimits{.max_memory_pages = UINT64_MAX});
  auto m = std::make_shared<Module>();
  m->memories.push_back(mem_type(uint64_t{1} << 40));
  auto r = store.instantiate(m, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, Error::Kind::Instantiate);
  EXPECT_EQ(r.error().message, "out of host memory");
  EXPECT_TRUE(r.error().host_out_of_memory);  // the host's failure, not the module's
}

TEST(Instantiate, SizesAboveTheLimitsAreLinkErrors) {
  // Refused before allocating, with the limit named; nothing trapped, so not Instantiate.
  StoreLimits limits;
  limits.max_memory_pages = 2;
  Store store(limits);
  auto m = std::make_shared<Module>();
  m->memories.push_back(mem_type(3));
  auto r = store.instantiate(m, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, Error::Kind::Link);
  EXPECT_EQ(r.error().to_string(),
            "memory 0: initial size of 3 pages exceeds the limit of 2 pages (131072 bytes) (section memory)");
  auto t = std::make_shared<Module>();
  t->tables.push_back(table_type(10'000'001));
  auto rt = store.instantiate(t, {});
  ASSERT_FALSE(rt.ok());
  EXPECT_EQ(rt.error().kind, Error::Kind::Link);
  EXPECT_EQ(rt.error().message, "table 0: initial size of 10000001 entries exceeds the limit of 10000000");
}

}  // namespace
}  // namespace wzvm::vm
