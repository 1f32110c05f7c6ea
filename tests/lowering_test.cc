// The lowering room's structure (vm/lower/): every Special row of
// vm/opcodes.def is lowered by exactly one concern, the property
// FunctionCompiler::special's "ask each in turn" relies on. A row no concern
// claims would be refused as an illegal opcode; one claimed twice would be
// lowered by whichever comes first.

#include <gtest/gtest.h>

#include <vector>

#include "vm/lower/function_compiler.h"
#include "vm/module.h"

namespace wzvm::vm::lower {
namespace {

TEST(Lowering, EverySpecialRowHasExactlyOneConcern) {
  // One function () -> () whose body is just `end`; every proposal enabled.
  std::vector<uint8_t> bytes = {0x00, 'a', 's', 'm',  1, 0,   0, 0,  // header
                                1,    4,   1,   0x60, 0, 0,          // type () -> ()
                                3,    2,   1,   0,                   // function 0: type 0
                                10,   4,   1,   2,    0, 0x0B};      // code: no locals, end
  auto module = decode_module(bytes, Features::all());
  ASSERT_TRUE(module) << module.error().message;
  const OpTables& t = op_tables();
  int specials = 0;
  auto check = [&](const OpInfo* rows, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      if (!rows[i].valid || rows[i].kind != Kind::Special) continue;
      ++specials;
      EXPECT_EQ(FunctionCompiler::concerns_claiming(*module.value(), 0, rows[i]), 1) << rows[i].name;
    }
  };
  check(t.single.data(), t.single.size());
  check(t.fc.data(), t.fc.size());
  check(t.fd.data(), t.fd.size());
  check(t.fe.data(), t.fe.size());
  EXPECT_GE(specials, 70);  // the table's Special rows were all seen
}

}  // namespace
}  // namespace wzvm::vm::lower
