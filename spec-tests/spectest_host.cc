#include "spec-tests/spectest_host.h"

#include <bit>
#include <cstdio>
#include <vector>

#include "spec-tests/values.h"

namespace wzvm::spectest {

using vm::Extern;
using vm::ExternKind;
using vm::ValType;

vm::Result<ExportMap> make_spectest_module(vm::Store& store, bool verbose) {
  ExportMap m;

  auto func = [&](const char* name, std::vector<ValType> params) {
    vm::FuncType type{std::move(params), {}};
    std::string field = name;
    vm::HostFn fn = [verbose, field](vm::HostContext&, std::span<const vm::Value> args,
                                     std::span<vm::Value>) -> vm::Trap {
      if (verbose) {
        std::vector<vm::Value> v(args.begin(), args.end());
        std::printf("  spectest.%s%s\n", field.c_str(), format_values(v).c_str());
      }
      return vm::Trap{};
    };
    Extern e;
    e.kind = ExternKind::Func;
    e.func = store.add_host_func("spectest", field, std::move(type), std::move(fn));
    m[field] = e;
  };
  func("print", {});
  func("print_i32", {ValType::I32});
  func("print_i64", {ValType::I64});
  func("print_f32", {ValType::F32});
  func("print_f64", {ValType::F64});
  func("print_i32_f32", {ValType::I32, ValType::F32});
  func("print_f64_f64", {ValType::F64, ValType::F64});

  auto global = [&](const char* name, ValType t, uint64_t bits) {
    Extern e;
    e.kind = ExternKind::Global;
    e.global = store.add_global(vm::GlobalType{t, false}, bits);
    m[name] = e;
  };
  global("global_i32", ValType::I32, 666);
  global("global_i64", ValType::I64, 666);
  global("global_f32", ValType::F32, std::bit_cast<uint32_t>(666.6f));
  global("global_f64", ValType::F64, std::bit_cast<uint64_t>(666.6));

  vm::TableType tt;
  tt.elem = ValType::FuncRef;
  tt.limits.min = 10;
  tt.limits.max = 20;
  Extern table;
  table.kind = ExternKind::Table;
  table.table = store.add_table(tt);
  m["table"] = table;

  vm::MemoryType mt;
  mt.limits.min = 1;
  mt.limits.max = 2;
  Extern mem;
  mem.kind = ExternKind::Memory;
  mem.memory = store.add_memory(mt);
  if (!mem.memory) {
    vm::Error err;
    err.kind = vm::Error::Kind::Instantiate;
    err.message = "cannot allocate spectest.memory";
    return err;
  }
  m["memory"] = mem;

  // threads: (memory 1 2 shared), which the threads tests import.
  vm::MemoryType smt = mt;
  smt.limits.shared = true;
  Extern shared;
  shared.kind = ExternKind::Memory;
  shared.memory = store.add_memory(smt);
  if (!shared.memory) {
    vm::Error err;
    err.kind = vm::Error::Kind::Instantiate;
    err.message = "cannot allocate spectest.shared_memory";
    return err;
  }
  m["shared_memory"] = shared;
  return m;
}

}  // namespace wzvm::spectest
