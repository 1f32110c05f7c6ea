// The binary decoder (vm/decoder.cc), module-level validation
// (vm/validate_module.cc) and the helpers of vm/module.cc, on modules written
// as raw bytes. Each module's WAT is in a comment above its bytes; the bytes
// are assembled per section so that section sizes are computed, not typed.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "vm/module.h"
#include "vm/reader.h"
#include "wasm_bytes.h"

namespace wzvm::vm {
namespace {

using namespace wzvm::wasm_bytes;

enum : uint8_t {
  kType = 1,
  kImport,
  kFunction,
  kTable,
  kMemory,
  kGlobal,
  kExport,
  kStart,
  kElem,
  kCode,
  kData,
  kDataCount
};

// (type (func)) and one defined function of that type with an empty body.
Bytes one_empty_func() {
  return section(kType, {0x01, 0x60, 0x00, 0x00}) + section(kFunction, {0x01, 0x00}) +
         section(kCode, Bytes{0x01} + body({0x00, 0x0B}));
}

// Plain wasm 2.0: what later proposals allow is tested in proposals_test.cc.
Result<std::unique_ptr<Module>> decode(const Bytes& b) { return decode_module(b, Features::wasm2()); }

// Decodes, expecting success, and validates, expecting success.
std::unique_ptr<Module> decode_ok(const Bytes& b) {
  auto r = decode(b);
  EXPECT_TRUE(r.ok()) << r.error().to_string();
  if (!r.ok()) return nullptr;
  Status st = validate_module(**r);
  EXPECT_TRUE(st.ok()) << st.error().to_string();
  return std::move(*r);
}

bool starts_with(const std::string& s, std::string_view prefix) { return s.rfind(prefix, 0) == 0; }

// Decoding fails as malformed, with a message starting with `message` and a
// known offset inside the module.
void expect_malformed(const Bytes& b, std::string_view message) {
  auto r = decode(b);
  ASSERT_FALSE(r.ok()) << "expected malformed: " << message;
  const Error& e = r.error();
  EXPECT_EQ(e.kind, Error::Kind::Malformed) << e.to_string();
  EXPECT_TRUE(starts_with(e.message, message)) << "got: " << e.to_string() << "\nwant: " << message;
  EXPECT_GE(e.offset, 0);
  EXPECT_LE(e.offset, static_cast<int64_t>(b.size()));
}

// Decodes fine but validate_module rejects it (or, for constant expressions
// with non-constant instructions, the decoder already reports it as invalid).
void expect_invalid(const Bytes& b, std::string_view message) {
  auto r = decode(b);
  Error e;
  if (!r.ok()) {
    e = r.error();
  } else {
    Status st = validate_module(**r);
    ASSERT_FALSE(st.ok()) << "expected invalid: " << message;
    e = st.error();
  }
  EXPECT_EQ(e.kind, Error::Kind::Invalid) << e.to_string();
  EXPECT_TRUE(starts_with(e.message, message)) << "got: " << e.to_string() << "\nwant: " << message;
}

// (module $m
//   (type $t (func (param i32) (result i32)))
//   (import "env" "f" (func $imp (type $t)))
//   (import "env" "mem" (memory 1 2))
//   (import "env" "g" (global $g i32))
//   (table 2 funcref)
//   (global $h (mut i64) (i64.const -1))
//   (func $add (type $t) (local $y i64) local.get 0)
//   (export "add" (func $add))
//   (export "tbl" (table 0))
//   (elem (global.get $g) func $add)
//   (data (i32.const 8) "hi"))
// as wat2wasm --debug-names writes it, plus an unrelated custom section.
Bytes full_module() {
  Bytes names =
      str("name") + Bytes{0x00} + uleb(2) + str("m") +                                      // module name
      Bytes{0x01} + uleb(11) + Bytes{0x02, 0x00} + str("imp") + Bytes{0x01} + str("add") +  // functions
      Bytes{0x02} + uleb(8) + Bytes{0x02, 0x00, 0x00, 0x01, 0x01, 0x01} + str("y") +        // locals
      Bytes{0x04} + uleb(4) + Bytes{0x01, 0x00} + str("t") +                          // type names (skipped)
      Bytes{0x07} + uleb(7) + Bytes{0x02, 0x00} + str("g") + Bytes{0x01} + str("h");  // global names
  return header() + section(kType, {0x01, 0x60, 0x01, 0x7F, 0x01, 0x7F}) +
         section(kImport, Bytes{0x03} + str("env") + str("f") + Bytes{0x00, 0x00} + str("env") + str("mem") +
                              Bytes{0x02, 0x01, 0x01, 0x02} + str("env") + str("g") +
                              Bytes{0x03, 0x7F, 0x00}) +
         section(kFunction, {0x01, 0x00}) + section(kTable, {0x01, 0x70, 0x00, 0x02}) +
         section(kGlobal, {0x01, 0x7E, 0x01, 0x42, 0x7F, 0x0B}) +
         section(kExport, Bytes{0x02} + str("add") + Bytes{0x00, 0x01} + str("tbl") + Bytes{0x01, 0x00}) +
         section(kElem, {0x01, 0x00, 0x23, 0x00, 0x0B, 0x01, 0x01}) +
         section(0, str("producers") + Bytes{0x00}) +
         section(kCode, Bytes{0x01} + body({0x01, 0x01, 0x7E, 0x20, 0x00, 0x0B})) +
         section(kData, Bytes{0x01, 0x00, 0x41, 0x08, 0x0B} + str("hi")) + section(0, names);
}

TEST(Decoder, DecodesFullModule) {
  Bytes bytes = full_module();
  auto m = decode_ok(bytes);
  ASSERT_TRUE(m);

  ASSERT_EQ(m->types.size(), 1u);
  EXPECT_EQ(m->types[0].to_string(), "(i32) -> (i32)");

  ASSERT_EQ(m->imports.size(), 3u);
  EXPECT_EQ(m->imports[0].module, "env");
  EXPECT_EQ(m->imports[0].field, "f");
  EXPECT_EQ(m->imports[0].kind, ExternKind::Func);
  EXPECT_EQ(m->imports[1].kind, ExternKind::Memory);
  EXPECT_EQ(m->imports[1].memory.limits.min, 1u);
  EXPECT_EQ(m->imports[1].memory.limits.max, 2u);
  EXPECT_EQ(m->imports[2].kind, ExternKind::Global);
  EXPECT_EQ(m->imports[2].global.type, ValType::I32);
  EXPECT_FALSE(m->imports[2].global.mut);

  EXPECT_EQ(m->num_imported_funcs, 1u);
  EXPECT_EQ(m->num_imported_memories, 1u);
  EXPECT_EQ(m->num_imported_globals, 1u);
  EXPECT_EQ(m->num_imported_tables, 0u);
  EXPECT_EQ(m->func_type_indices, (std::vector<uint32_t>{0, 0}));
  ASSERT_EQ(m->all_tables.size(), 1u);
  EXPECT_EQ(m->all_tables[0].limits.min, 2u);
  EXPECT_FALSE(m->all_tables[0].limits.max.has_value());
  EXPECT_EQ(m->all_memories.size(), 1u);
  ASSERT_EQ(m->all_globals.size(), 2u);
  EXPECT_EQ(m->all_globals[1].type, ValType::I64);
  EXPECT_TRUE(m->all_globals[1].mut);

  ASSERT_EQ(m->globals.size(), 1u);
  ASSERT_EQ(m->globals[0].init.code.size(), 1u);
  EXPECT_EQ(m->globals[0].init.code[0].op, ConstInstr::Op::I64Const);
  EXPECT_EQ(m->globals[0].init.code[0].value, ~uint64_t{0});

  ASSERT_EQ(m->functions.size(), 1u);
  const Function& f = m->functions[0];
  EXPECT_EQ(f.locals, (std::vector<ValType>{ValType::I64}));
  ASSERT_LT(f.body_offset, f.body_end);
  ASSERT_LE(f.body_end, bytes.size());
  EXPECT_EQ(bytes[f.body_offset], 0x20);  // local.get
  EXPECT_EQ(bytes[f.body_end - 1], 0x0B);
  EXPECT_EQ(f.body_end - f.body_offset, 3u);

  ASSERT_EQ(m->exports.size(), 2u);
  EXPECT_EQ(m->exports[1].name, "tbl");
  EXPECT_EQ(m->exports[1].kind, ExternKind::Table);

  ASSERT_EQ(m->elems.size(), 1u);
  EXPECT_EQ(m->elems[0].mode, SegmentMode::Active);
  EXPECT_EQ(m->elems[0].offset.code[0].op, ConstInstr::Op::GlobalGet);
  ASSERT_EQ(m->elems[0].items.size(), 1u);
  EXPECT_EQ(m->elems[0].items[0].code[0].op, ConstInstr::Op::RefFunc);
  EXPECT_EQ(m->elems[0].items[0].code[0].value, 1u);

  ASSERT_EQ(m->datas.size(), 1u);
  EXPECT_EQ(m->datas[0].size, 2u);
  EXPECT_EQ(std::string(bytes.begin() + m->datas[0].data_offset, bytes.begin() + m->datas[0].data_offset + 2),
            "hi");
  EXPECT_FALSE(m->data_count.has_value());

  ASSERT_EQ(m->customs.size(), 2u);
  EXPECT_EQ(m->customs[0].name, "producers");
  EXPECT_EQ(m->customs[0].size, 1u);
  EXPECT_EQ(m->customs[1].name, "name");

  EXPECT_EQ(m->names.module, "m");
  EXPECT_EQ(m->names.functions.at(0), "imp");
  EXPECT_EQ(m->names.functions.at(1), "add");
  EXPECT_EQ(m->names.locals.at(1).at(1), "y");

  // $add is in an element segment and exported; $imp is referenced nowhere.
  EXPECT_EQ(m->declared_refs, (std::vector<bool>{false, true}));
}

TEST(Decoder, EveryProperPrefixFailsCleanly) {
  Bytes bytes = full_module();
  for (size_t n = 0; n < bytes.size(); ++n) {
    Bytes cut(bytes.begin(), bytes.begin() + n);
    auto r = decode(cut);
    if (r.ok()) continue;  // a cut at a section boundary can be a complete module
    EXPECT_EQ(r.error().kind, Error::Kind::Malformed) << n;
    EXPECT_GE(r.error().offset, 0) << n;
    EXPECT_LE(r.error().offset, static_cast<int64_t>(n)) << n;
  }
}

// (module
//   (func $named) (func (export "exported")) (func)
//   ;; name section names only function 0
// )
TEST(Module, FunctionNameFallsBackToExportThenIndex) {
  Bytes names = str("name") + Bytes{0x01} + uleb(8) + Bytes{0x01, 0x00} + str("named");
  Bytes bytes = header() + section(kType, {0x01, 0x60, 0x00, 0x00}) +
                section(kFunction, {0x03, 0x00, 0x00, 0x00}) +
                section(kExport, Bytes{0x01} + str("exported") + Bytes{0x00, 0x01}) +
                section(kCode, Bytes{0x03} + body({0x00, 0x0B}) + body({0x00, 0x0B}) + body({0x00, 0x0B})) +
                section(0, names);
  auto m = decode_ok(bytes);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->function_name(0), "named");
  EXPECT_EQ(m->function_name(1), "exported");
  EXPECT_EQ(m->function_name(2), "wasm-function[2]");
}

TEST(Module, Names) {
  EXPECT_STREQ(valtype_name(ValType::F64), "f64");
  EXPECT_STREQ(valtype_name(ValType::ExternRef), "externref");
  EXPECT_STREQ(extern_kind_name(ExternKind::Memory), "memory");
  FuncType ft{{ValType::I32, ValType::I64}, {ValType::F32}};
  EXPECT_EQ(ft.to_string(), "(i32, i64) -> (f32)");
  EXPECT_EQ(FuncType{}.to_string(), "() -> ()");
}

TEST(Module, ValidUtf8) {
  auto ok = [](std::initializer_list<uint8_t> b) { return valid_utf8(std::data(b), b.size()); };
  EXPECT_TRUE(ok({}));
  EXPECT_TRUE(ok({'a', 'b'}));
  EXPECT_TRUE(ok({0xC2, 0x80}));               // U+0080
  EXPECT_TRUE(ok({0xE2, 0x82, 0xAC}));         // U+20AC
  EXPECT_TRUE(ok({0xED, 0x9F, 0xBF}));         // U+D7FF, just below the surrogates
  EXPECT_TRUE(ok({0xEE, 0x80, 0x80}));         // U+E000, just above
  EXPECT_TRUE(ok({0xF4, 0x8F, 0xBF, 0xBF}));   // U+10FFFF
  EXPECT_FALSE(ok({0x80}));                    // lone continuation
  EXPECT_FALSE(ok({0xC0, 0x80}));              // overlong NUL
  EXPECT_FALSE(ok({0xC1, 0xBF}));              // overlong
  EXPECT_FALSE(ok({0xE0, 0x9F, 0xBF}));        // overlong 3-byte
  EXPECT_FALSE(ok({0xF0, 0x8F, 0xBF, 0xBF}));  // overlong 4-byte
  EXPECT_FALSE(ok({0xED, 0xA0, 0x80}));        // U+D800
  EXPECT_FALSE(ok({0xED, 0xBF, 0xBF}));        // U+DFFF
  EXPECT_FALSE(ok({0xF4, 0x90, 0x80, 0x80}));  // U+110000
  EXPECT_FALSE(ok({0xF5, 0x80, 0x80, 0x80}));
  EXPECT_FALSE(ok({0xE2, 0x82}));  // truncated
  EXPECT_FALSE(ok({0xC2, 'a'}));   // bad continuation
  EXPECT_FALSE(ok({0xFF}));
}

TEST(DecoderMalformed, Header) {
  expect_malformed({}, "unexpected end");
  expect_malformed({0x00, 0x61, 0x73}, "unexpected end");
  expect_malformed({0x00, 0x41, 0x53, 0x4D, 0x01, 0x00, 0x00, 0x00}, "magic header not detected");
  expect_malformed({0x00, 0x61, 0x73, 0x6D, 0x01}, "unexpected end");
  expect_malformed({0x00, 0x61, 0x73, 0x6D, 0x02, 0x00, 0x00, 0x00}, "unknown binary version");
  auto m = decode_ok(header());
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->functions.empty());
}

TEST(DecoderMalformed, Sections) {
  expect_malformed(header() + Bytes{0x0D, 0x00}, "malformed section id");
  // Type section twice, and memory before table.
  expect_malformed(header() + section(kType, {0x00}) + section(kType, {0x00}),
                   "unexpected content after last section");
  expect_malformed(header() + section(kMemory, {0x00}) + section(kTable, {0x00}),
                   "unexpected content after last section");
  // The data count section goes between element and code, not in id order.
  auto m =
      decode_ok(header() + section(kDataCount, {0x00}) + section(kCode, {0x00}) + section(kData, {0x00}));
  ASSERT_TRUE(m);
  EXPECT_EQ(m->data_count, 0u);
  expect_malformed(header() + section(kCode, {0x00}) + section(kDataCount, {0x00}),
                   "unexpected content after last section");
  // A section whose size runs past the end of the file.
  expect_malformed(header() + Bytes{kType, 0x05, 0x00}, "length out of bounds");
  // Custom sections may appear anywhere, any number of times.
  EXPECT_TRUE(decode(header() + section(0, str("a")) + section(kType, {0x00}) + section(0, str("a"))).ok());
  // ... but need a name.
  expect_malformed(header() + Bytes{0x00, 0x00}, "unexpected end");
}

TEST(DecoderMalformed, SectionSizeMismatch) {
  // (type (func)) with one extra byte inside the declared type section size.
  expect_malformed(header() + section(kType, {0x01, 0x60, 0x00, 0x00, 0x00}), "section size mismatch");
  // One memory declared, the section is too short for it.
  expect_malformed(header() + section(kMemory, {0x01, 0x01}), "unexpected end");
}

TEST(DecoderMalformed, Leb128) {
  // (memory 2) with the minimum written in six bytes: too long for a u32.
  auto r = decode(header() + section(kMemory, {0x01, 0x00, 0x82, 0x80, 0x80, 0x80, 0x80, 0x00}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "integer representation too long");
  EXPECT_EQ(r.error().section, "memory");
  EXPECT_GE(r.error().offset, 8 + 2 + 2);  // within the LEB (at or just past its fifth byte)
  EXPECT_LE(r.error().offset, 8 + 2 + 2 + 5);
  // Five bytes, but unused bits of the last one are set.
  expect_malformed(header() + section(kMemory, {0x01, 0x00, 0x82, 0x80, 0x80, 0x80, 0x70}),
                   "integer too large");
  // i32.const with unused sign bits wrong in a global initialiser.
  expect_malformed(header() + section(kGlobal, {0x01, 0x7F, 0x00, 0x41, 0x80, 0x80, 0x80, 0x80, 0x70, 0x0B}),
                   "integer too large");
  // A LEB cut off by the end of its section.
  expect_malformed(header() + section(kFunction, {0x01, 0x80}), "unexpected end");
}

TEST(DecoderMalformed, HugeDeclaredCounts) {
  // 2^32-1 types / imports / functions / elements / data segments in a few bytes:
  // must fail without allocating for them.
  for (uint8_t id : {kType, kImport, kFunction, kTable, kMemory, kGlobal, kExport, kElem, kCode, kData}) {
    SCOPED_TRACE(static_cast<int>(id));
    expect_malformed(header() + section(id, uleb(0xFFFFFFFF) + Bytes{0x00}), "unexpected end");
  }
  // A function type with 2^32-1 params.
  expect_malformed(header() + section(kType, Bytes{0x01, 0x60} + uleb(0xFFFFFFFF) + Bytes{0x7F}),
                   "unexpected end");
  // A data segment claiming 2^32-1 bytes.
  expect_malformed(header() + section(kData, Bytes{0x01, 0x01} + uleb(0xFFFFFFFF) + Bytes{0x00}),
                   "unexpected end");
  // A name claiming 2^32-1 bytes.
  expect_malformed(header() + section(kExport, Bytes{0x01} + uleb(0xFFFFFFFF) + Bytes{'a'}),
                   "length out of bounds");
}

TEST(DecoderMalformed, TooManyLocals) {
  // (func (local i32 * 0xFFFFFFFF) (local i64 * 2))
  Bytes b =
      header() + section(kType, {0x01, 0x60, 0x00, 0x00}) + section(kFunction, {0x01, 0x00}) +
      section(kCode, Bytes{0x01} + body(Bytes{0x02} + uleb(0xFFFFFFFF) + Bytes{0x7F, 0x02, 0x7E, 0x0B}));
  auto r = decode(b);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "too many locals");
  EXPECT_EQ(r.error().section, "code");
  EXPECT_EQ(r.error().function, 0);
  // 50000 is the limit; 50001 is over it.
  Bytes ok = header() + section(kType, {0x01, 0x60, 0x00, 0x00}) + section(kFunction, {0x01, 0x00}) +
             section(kCode, Bytes{0x01} + body(Bytes{0x02} + uleb(25000) + Bytes{0x7F} + uleb(25000) +
                                               Bytes{0x7E, 0x0B}));
  auto m = decode_ok(ok);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->functions[0].locals.size(), 50000u);
  EXPECT_EQ(m->functions[0].locals[25000], ValType::I64);
  expect_malformed(header() + section(kType, {0x01, 0x60, 0x00, 0x00}) + section(kFunction, {0x01, 0x00}) +
                       section(kCode, Bytes{0x01} + body(Bytes{0x01} + uleb(50001) + Bytes{0x7F, 0x0B})),
                   "too many locals");
}

// Caps on counts that cost far more memory than the bytes that declare them
// (vm/decoder.cc, kMaxTypes and friends): refused while decoding, with the
// section and the offset just past the count.
TEST(DecoderMalformed, AbsurdCounts) {
  // 1,000,001 functions of type 0, one byte each.
  {
    Bytes b = header() + section(kType, {0x01, 0x60, 0x00, 0x00}) +
              section(kFunction, uleb(1'000'001) + Bytes(1'000'001, 0x00));
    auto r = decode(b);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().message, "too many functions");
    EXPECT_EQ(r.error().section, "function");
    EXPECT_EQ(r.error().offset, 8 + 4 + 2 + 1 + 3 + 3);  // header, type section, id+size(LEB 3), count(LEB 3)
  }
  // 1,000,000 functions exactly is within the cap (their bodies are missing).
  expect_malformed(header() + section(kType, {0x01, 0x60, 0x00, 0x00}) +
                       section(kFunction, uleb(1'000'000) + Bytes(1'000'000, 0x00)),
                   "function and code section have inconsistent lengths");
  // 1,000,001 types (each at least 3 bytes).
  {
    Bytes types = uleb(1'000'001);
    for (int i = 0; i < 1'000'001; ++i) types.insert(types.end(), {0x60, 0x00, 0x00});
    expect_malformed(header() + section(kType, types), "too many types");
  }
  // A function type with 1001 parameters, and one with 1001 results.
  expect_malformed(
      header() + section(kType, Bytes{0x01, 0x60} + uleb(1001) + Bytes(1001, 0x7F) + Bytes{0x00}),
      "too many parameters");
  expect_malformed(header() + section(kType, Bytes{0x01, 0x60, 0x00} + uleb(1001) + Bytes(1001, 0x7F)),
                   "too many results");
  // 1000 of each is fine.
  EXPECT_TRUE(decode(header() + section(kType, Bytes{0x01, 0x60} + uleb(1000) + Bytes(1000, 0x7F) +
                                                   uleb(1000) + Bytes(1000, 0x7E)))
                  .ok());
  // A passive element segment of 10,000,001 function indices.
  expect_malformed(
      header() + section(kElem, Bytes{0x01, 0x01, 0x00} + uleb(10'000'001) + Bytes(10'000'001, 0x00)),
      "too many elements in segment");
}

TEST(DecoderMalformed, InvalidUtf8Names) {
  // (import "\c0\80" "f" (func)) and (import "m" "\ed\a0\80" (func)).
  for (std::string bad : {std::string("\xC0\x80"), std::string("\xED\xA0\x80"),
                          std::string("\xF4\x90\x80\x80"), std::string("\xE2\x82")}) {
    expect_malformed(header() + section(kType, {0x01, 0x60, 0x00, 0x00}) +
                         section(kImport, Bytes{0x01} + str(bad) + str("f") + Bytes{0x00, 0x00}),
                     "malformed UTF-8 encoding");
    expect_malformed(header() + section(kType, {0x01, 0x60, 0x00, 0x00}) +
                         section(kImport, Bytes{0x01} + str("m") + str(bad) + Bytes{0x00, 0x00}),
                     "malformed UTF-8 encoding");
    expect_malformed(header() + section(0, str(bad)), "malformed UTF-8 encoding");
  }
}

TEST(DecoderMalformed, FunctionAndCodeCounts) {
  Bytes types = section(kType, {0x01, 0x60, 0x00, 0x00});
  // Two functions declared, no code section.
  expect_malformed(header() + types + section(kFunction, {0x02, 0x00, 0x00}),
                   "function and code section have inconsistent lengths");
  // One function declared, two bodies.
  expect_malformed(header() + types + section(kFunction, {0x01, 0x00}) +
                       section(kCode, Bytes{0x02} + body({0x00, 0x0B}) + body({0x00, 0x0B})),
                   "function and code section have inconsistent lengths");
  // A body without a function.
  expect_malformed(header() + section(kCode, Bytes{0x01} + body({0x00, 0x0B})),
                   "function and code section have inconsistent lengths");
}

TEST(DecoderMalformed, DataCount) {
  // (data count 3) but two passive segments.
  expect_malformed(header() + section(kDataCount, {0x03}) + section(kData, {0x02, 0x01, 0x00, 0x01, 0x00}),
                   "data count and data section have inconsistent lengths");
  expect_malformed(header() + section(kDataCount, {0x01}),
                   "data count and data section have inconsistent lengths");
  auto m = decode_ok(header() + section(kDataCount, {0x02}) + section(kData, {0x02, 0x01, 0x00, 0x01, 0x00}));
  ASSERT_TRUE(m);
  EXPECT_EQ(m->data_count, 2u);
  EXPECT_EQ(m->datas[0].mode, SegmentMode::Passive);
}

TEST(DecoderMalformed, CodeEntries) {
  Bytes prefix = header() + section(kType, {0x01, 0x60, 0x00, 0x00}) +
                 section(kImport, Bytes{0x01} + str("m") + str("f") + Bytes{0x00, 0x00}) +
                 section(kFunction, {0x02, 0x00, 0x00});
  // (func i32.const 1 drop) without its end, followed by a good function.
  auto r = decode(prefix + section(kCode, Bytes{0x02} + body({0x00, 0x41, 0x01, 0x1A}) + body({0x00, 0x0B})));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "END opcode expected");
  EXPECT_EQ(r.error().function, 1);  // in the function index space, after the import
  // A body size running past the section.
  expect_malformed(prefix + section(kCode, Bytes{0x02} + body({0x00, 0x0B}) + Bytes{0x09, 0x00, 0x0B}),
                   "unexpected end");
  // A body with locals only.
  expect_malformed(prefix + section(kCode, Bytes{0x02} + body({0x00, 0x0B}) + body({0x00})),
                   "unexpected end");
  // A bad local type.
  expect_malformed(prefix + section(kCode, Bytes{0x02} + body({0x00, 0x0B}) + body({0x01, 0x01, 0x40, 0x0B})),
                   "malformed value type");
}

TEST(DecoderMalformed, KindsAndTypes) {
  // Import kind 4.
  expect_malformed(header() + section(kImport, Bytes{0x01} + str("m") + str("f") + Bytes{0x04, 0x00}),
                   "malformed import kind");
  // Function type form other than 0x60.
  expect_malformed(header() + section(kType, {0x01, 0x61, 0x00, 0x00}), "malformed function type");
  // Value type byte 0x40.
  expect_malformed(header() + section(kType, {0x01, 0x60, 0x01, 0x40, 0x00}), "malformed value type");
  // Global mutability 2.
  expect_malformed(header() + section(kGlobal, {0x01, 0x7F, 0x02, 0x41, 0x00, 0x0B}), "malformed mutability");
  // Table of i32.
  expect_malformed(header() + section(kTable, {0x01, 0x7F, 0x00, 0x00}), "malformed reference type");
  // Limits flag 2 (shared memories are not part of wasm 2.0).
  expect_malformed(header() + section(kMemory, {0x01, 0x02, 0x00}), "integer too large");
  // Element segment kind 8 and elemkind 1.
  expect_malformed(header() + section(kElem, {0x01, 0x08, 0x00, 0x00}), "malformed elements segment kind");
  expect_malformed(header() + section(kElem, {0x01, 0x01, 0x01, 0x00}), "malformed element kind");
  // Passive element segment of i32 expressions.
  expect_malformed(header() + section(kElem, {0x01, 0x05, 0x7F, 0x00}), "malformed reference type");
  // Data segment kind 3.
  expect_malformed(header() + section(kData, {0x01, 0x03, 0x00}), "malformed data segment kind");
  // Export kind 4.
  expect_malformed(header() + section(kExport, Bytes{0x01} + str("e") + Bytes{0x04, 0x00}),
                   "malformed export kind");
}

TEST(DecoderMalformed, ConstantExpressions) {
  // An opcode that does not exist (0xF3) in an element expression.
  expect_malformed(header() + section(kType, {0x01, 0x60, 0x00, 0x00}) + section(kFunction, {0x01, 0x00}) +
                       section(kElem, {0x01, 0x05, 0x70, 0x01, 0xF3, 0x00, 0x0B}) +
                       section(kCode, Bytes{0x01} + body({0x00, 0x0B})),
                   "illegal opcode");
  // Missing end.
  expect_malformed(header() + section(kGlobal, {0x01, 0x7F, 0x00, 0x41, 0x00}), "unexpected end");
}

TEST(Decoder, ElementSegmentEncodings) {
  // (table $t0 1 funcref) (table $t1 1 funcref) (func $f) and one segment of
  // each of the eight encodings, all naming $f.
  Bytes segs =
      Bytes{0x08} + Bytes{0x00, 0x41, 0x00, 0x0B, 0x01, 0x00} +      // 0: active table 0, funcidx
      Bytes{0x01, 0x00, 0x01, 0x00} +                                // 1: passive, elemkind, funcidx
      Bytes{0x02, 0x01, 0x41, 0x00, 0x0B, 0x00, 0x01, 0x00} +        // 2: active table 1, elemkind, funcidx
      Bytes{0x03, 0x00, 0x01, 0x00} +                                // 3: declarative, elemkind, funcidx
      Bytes{0x04, 0x41, 0x00, 0x0B, 0x01, 0xD2, 0x00, 0x0B} +        // 4: active table 0, exprs
      Bytes{0x05, 0x70, 0x02, 0xD2, 0x00, 0x0B, 0xD0, 0x70, 0x0B} +  // 5: passive funcref exprs
      Bytes{0x06, 0x01, 0x41, 0x00, 0x0B, 0x70, 0x01, 0xD2, 0x00, 0x0B} +  // 6: active table 1, exprs
      Bytes{0x07, 0x6F, 0x01, 0xD0, 0x6F, 0x0B};                           // 7: declarative externref exprs
  Bytes b = header() + section(kType, {0x01, 0x60, 0x00, 0x00}) + section(kFunction, {0x01, 0x00}) +
            section(kTable, {0x02, 0x70, 0x00, 0x01, 0x70, 0x00, 0x01}) + section(kElem, segs) +
            section(kCode, Bytes{0x01} + body({0x00, 0x0B}));
  auto m = decode_ok(b);
  ASSERT_TRUE(m);
  ASSERT_EQ(m->elems.size(), 8u);
  const SegmentMode A = SegmentMode::Active, P = SegmentMode::Passive, D = SegmentMode::Declarative;
  const SegmentMode modes[] = {A, P, A, D, A, P, A, D};
  const uint32_t tables[] = {0, 0, 1, 0, 0, 0, 1, 0};
  for (size_t i = 0; i < 8; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(m->elems[i].mode, modes[i]);
    if (modes[i] == A) {
      EXPECT_EQ(m->elems[i].table, tables[i]);
    }
    EXPECT_EQ(m->elems[i].type, i == 7 ? ValType::ExternRef : ValType::FuncRef);
  }
  EXPECT_EQ(m->elems[5].items.size(), 2u);
  EXPECT_EQ(m->elems[5].items[1].code[0].op, ConstInstr::Op::RefNull);
  EXPECT_EQ(m->elems[7].items[0].code[0].ref_type, ValType::ExternRef);
  EXPECT_TRUE(m->declared_refs[0]);
}

TEST(Decoder, DataSegmentEncodingsAndV128Const) {
  // (memory 1) (data (i32.const 1) "a") (data "bc") (data (memory 0) (i32.const 2) "")
  // (global v128 (v128.const i64x2 1 2))
  Bytes b = header() + section(kMemory, {0x01, 0x00, 0x01}) +
            section(kGlobal, Bytes{0x01, 0x7B, 0x00, 0xFD, 0x0C} + Bytes{1, 0, 0, 0, 0, 0, 0, 0} +
                                 Bytes{2, 0, 0, 0, 0, 0, 0, 0} + Bytes{0x0B}) +
            section(kData, Bytes{0x03, 0x00, 0x41, 0x01, 0x0B} + str("a") + Bytes{0x01} + str("bc") +
                               Bytes{0x02, 0x00, 0x41, 0x02, 0x0B} + str(""));
  auto m = decode_ok(b);
  ASSERT_TRUE(m);
  ASSERT_EQ(m->datas.size(), 3u);
  EXPECT_EQ(m->datas[0].mode, SegmentMode::Active);
  EXPECT_EQ(m->datas[1].mode, SegmentMode::Passive);
  EXPECT_EQ(m->datas[1].size, 2u);
  EXPECT_EQ(m->datas[2].mode, SegmentMode::Active);
  EXPECT_EQ(m->datas[2].offset.code[0].value, 2u);
  ASSERT_EQ(m->globals.size(), 1u);
  ASSERT_EQ(m->globals[0].init.code.size(), 1u);
  const ConstInstr& c = m->globals[0].init.code[0];
  EXPECT_EQ(c.op, ConstInstr::Op::V128Const);
  EXPECT_EQ(c.value, 1u);
  EXPECT_EQ(c.value_hi, 2u);
}

TEST(Decoder, BrokenNameSectionIsIgnored) {
  // A "name" section whose function-name subsection is cut short, then a
  // valid module name subsection out of order: neither fails the module.
  Bytes names =
      str("name") + Bytes{0x01} + uleb(5) + Bytes{0x01, 0x00, 0x09, 'a', 'b'} + Bytes{0x00, 0x02} + str("m");
  Bytes b = header() + one_empty_func() + section(0, names);
  auto m = decode_ok(b);
  ASSERT_TRUE(m);
  ASSERT_EQ(m->customs.size(), 1u);
  EXPECT_EQ(m->customs[0].name, "name");
  EXPECT_TRUE(m->names.functions.empty());
  EXPECT_EQ(m->function_name(0), "wasm-function[0]");
}

TEST(Validate, Types) {
  // (func (type 1)) with only one type.
  expect_invalid(header() + section(kType, {0x01, 0x60, 0x00, 0x00}) + section(kFunction, {0x01, 0x01}) +
                     section(kCode, Bytes{0x01} + body({0x00, 0x0B})),
                 "unknown type");
  expect_invalid(header() + section(kImport, Bytes{0x01} + str("m") + str("f") + Bytes{0x00, 0x00}),
                 "unknown type");
}

TEST(Validate, Limits) {
  // (memory 65537)
  expect_invalid(header() + section(kMemory, Bytes{0x01, 0x00} + uleb(65537)),
                 "memory size must be at most 65536 pages (4GiB)");
  // (memory 0 65537)
  expect_invalid(header() + section(kMemory, Bytes{0x01, 0x01, 0x00} + uleb(65537)),
                 "memory size must be at most 65536 pages (4GiB)");
  // (memory 2 1), (table 2 1 funcref)
  expect_invalid(header() + section(kMemory, {0x01, 0x01, 0x02, 0x01}),
                 "size minimum must not be greater than maximum");
  expect_invalid(header() + section(kTable, {0x01, 0x70, 0x01, 0x02, 0x01}),
                 "size minimum must not be greater than maximum");
  // (import "m" "mem" (memory 1)) (memory 1)
  expect_invalid(header() + section(kImport, Bytes{0x01} + str("m") + str("mem") + Bytes{0x02, 0x00, 0x01}) +
                     section(kMemory, {0x01, 0x00, 0x01}),
                 "multiple memories");
  // Several tables are fine in 2.0.
  EXPECT_TRUE(decode_ok(header() + section(kTable, {0x02, 0x70, 0x00, 0x00, 0x6F, 0x00, 0x00})));
}

TEST(Validate, GlobalInitialisers) {
  Bytes imports = section(kImport, Bytes{0x02} + str("m") + str("c") + Bytes{0x03, 0x7F, 0x00} +  // const i32
                                       str("m") + str("v") + Bytes{0x03, 0x7F, 0x01});            // mut i32
  // (global i32 (i64.const 0))
  expect_invalid(header() + section(kGlobal, {0x01, 0x7F, 0x00, 0x42, 0x00, 0x0B}), "type mismatch");
  // (global i32) with an empty initialiser, and with two values.
  expect_invalid(header() + section(kGlobal, {0x01, 0x7F, 0x00, 0x0B}), "type mismatch");
  expect_invalid(header() + section(kGlobal, {0x01, 0x7F, 0x00, 0x41, 0x00, 0x41, 0x00, 0x0B}),
                 "type mismatch");
  // (global i32 (global.get $c)) is fine; of the mutable import it is not constant.
  EXPECT_TRUE(decode_ok(header() + imports + section(kGlobal, {0x01, 0x7F, 0x00, 0x23, 0x00, 0x0B})));
  expect_invalid(header() + imports + section(kGlobal, {0x01, 0x7F, 0x00, 0x23, 0x01, 0x0B}),
                 "constant expression required");
  // (global i32 (i32.const 0)) (global i32 (global.get 0)): only imports are visible.
  expect_invalid(
      header() + section(kGlobal, {0x02, 0x7F, 0x00, 0x41, 0x00, 0x0B, 0x7F, 0x00, 0x23, 0x00, 0x0B}),
      "unknown global");
  // (global i32 (nop)) and (global i32 (i32.ctz (i32.const 0))).
  expect_invalid(header() + section(kGlobal, {0x01, 0x7F, 0x00, 0x01, 0x0B}), "constant expression required");
  expect_invalid(header() + section(kGlobal, {0x01, 0x7F, 0x00, 0x41, 0x00, 0x68, 0x0B}),
                 "constant expression required");
  // extended-const: (global i32 (i32.add (i32.const 1) (i32.const 2))) is not wasm 2.0.
  expect_invalid(header() + section(kGlobal, {0x01, 0x7F, 0x00, 0x41, 0x01, 0x41, 0x02, 0x6A, 0x0B}),
                 "constant expression required");
  // (global funcref (ref.func 0)) without function 0.
  expect_invalid(header() + section(kGlobal, {0x01, 0x70, 0x00, 0xD2, 0x00, 0x0B}), "unknown function");
}

TEST(Validate, ExportsAndStart) {
  Bytes base = header() + section(kType, {0x02, 0x60, 0x00, 0x00, 0x60, 0x01, 0x7F, 0x00}) +
               section(kFunction, {0x02, 0x00, 0x01});
  Bytes code = section(kCode, Bytes{0x02} + body({0x00, 0x0B}) + body({0x00, 0x0B}));
  // (export "a" (func 0)) (export "a" (func 1))
  expect_invalid(
      base + section(kExport, Bytes{0x02} + str("a") + Bytes{0x00, 0x00} + str("a") + Bytes{0x00, 0x01}) +
          code,
      "duplicate export name");
  expect_invalid(base + section(kExport, Bytes{0x01} + str("a") + Bytes{0x00, 0x02}) + code,
                 "unknown function");
  expect_invalid(base + section(kExport, Bytes{0x01} + str("a") + Bytes{0x01, 0x00}) + code, "unknown table");
  expect_invalid(base + section(kExport, Bytes{0x01} + str("a") + Bytes{0x02, 0x00}) + code,
                 "unknown memory");
  expect_invalid(base + section(kExport, Bytes{0x01} + str("a") + Bytes{0x03, 0x00}) + code,
                 "unknown global");
  // (start 1) where 1 takes an i32; (start 5) does not exist; (start 0) is fine.
  expect_invalid(base + section(kStart, {0x01}) + code, "start function");
  expect_invalid(base + section(kStart, {0x05}) + code, "unknown function");
  auto m = decode_ok(base + section(kStart, {0x00}) + code);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->start, 0u);
}

TEST(Validate, Segments) {
  Bytes func = section(kType, {0x01, 0x60, 0x00, 0x00}) + section(kFunction, {0x01, 0x00});
  Bytes code = section(kCode, Bytes{0x01} + body({0x00, 0x0B}));
  // (elem (i32.const 0) func 0) without a table.
  expect_invalid(header() + func + section(kElem, {0x01, 0x00, 0x41, 0x00, 0x0B, 0x01, 0x00}) + code,
                 "unknown table");
  // (table 1 externref) (elem (i32.const 0) func 0): element type differs from the table's.
  expect_invalid(header() + func + section(kTable, {0x01, 0x6F, 0x00, 0x01}) +
                     section(kElem, {0x01, 0x00, 0x41, 0x00, 0x0B, 0x01, 0x00}) + code,
                 "type mismatch");
  // (table 1 funcref) (elem (i64.const 0) func 0)
  expect_invalid(header() + func + section(kTable, {0x01, 0x70, 0x00, 0x01}) +
                     section(kElem, {0x01, 0x00, 0x42, 0x00, 0x0B, 0x01, 0x00}) + code,
                 "type mismatch");
  // (elem funcref (ref.null extern))
  expect_invalid(header() + section(kElem, {0x01, 0x05, 0x70, 0x01, 0xD0, 0x6F, 0x0B}), "type mismatch");
  // (elem func 3): no function 3.
  expect_invalid(header() + func + section(kElem, {0x01, 0x01, 0x00, 0x01, 0x03}) + code, "unknown function");
  // (data (i32.const 0) "") without a memory.
  expect_invalid(header() + section(kData, {0x01, 0x00, 0x41, 0x00, 0x0B, 0x00}), "unknown memory");
  // (memory 1) (data (f32.const 0) "")
  expect_invalid(header() + section(kMemory, {0x01, 0x00, 0x01}) +
                     section(kData, {0x01, 0x00, 0x43, 0x00, 0x00, 0x00, 0x00, 0x0B, 0x00}),
                 "type mismatch");
}

// A module with more code than one thread lowers (vm/lower/compile_functions.cc spreads big
// modules' functions over threads): 3000 functions of 1000 `nop`s, 3 MB,
// where functions 1700 and 2900 are invalid, 1700 only after 2 M more nops,
// so that another thread finds 2900's error first. The error must still be
// the one a sequential pass gives, about function 1700; and the same module
// without them loads, every function lowered.
TEST(Validate, BigModuleReportsItsFirstInvalidFunction) {
  auto big = [](bool with_errors) {
    constexpr uint32_t kFuncs = 3000;
    Bytes funcs = uleb(kFuncs), code = uleb(kFuncs);
    for (uint32_t f = 0; f < kFuncs; ++f) {
      funcs.push_back(0x00);
      bool bad = with_errors && (f == 1700 || f == 2900);
      Bytes b{0x00};                                                 // no locals
      b.insert(b.end(), bad && f == 1700 ? 2'001'000 : 1000, 0x01);  // nop
      if (bad) b.push_back(0x6A);                                    // i32.add on an empty stack
      b.push_back(0x0B);
      Bytes entry = body(b);
      code.insert(code.end(), entry.begin(), entry.end());
    }
    return header() + section(kType, {0x01, 0x60, 0x00, 0x00}) + section(kFunction, funcs) +
           section(kCode, code);
  };
  for (int run = 0; run < 5; ++run) {
    auto r = load_module(big(true), LoadOptions{});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().kind, Error::Kind::Invalid);
    EXPECT_EQ(r.error().function, 1700) << r.error().to_string();
  }
  auto ok = load_module(big(false), LoadOptions{});
  ASSERT_TRUE(ok.ok()) << ok.error().to_string();
  ASSERT_EQ(ok.value()->code.size(), 3000u);
  for (const CompiledFunc& c : ok.value()->code) EXPECT_FALSE(c.code.empty());
}

// ConstExpr::code keeps its first instruction inline (vm/module.h,
// ConstCode) and moves it to the heap when a second one comes: every
// instruction stays, in order, and a copy has its own.
TEST(Decoder, ConstCodeKeepsEveryInstructionInOrder) {
  using Op = ConstInstr::Op;
  for (size_t n : {0, 1, 2, 3, 9}) {
    ConstCode code;
    for (size_t i = 0; i < n; ++i)
      code.push_back({i % 2 ? Op::I64Const : Op::I32Const, ValType::FuncRef, 10 + i, 0});
    ConstCode copy = code;
    ASSERT_EQ(code.size(), n);
    EXPECT_EQ(code.empty(), n == 0);
    EXPECT_EQ(static_cast<size_t>(code.end() - code.begin()), n);
    size_t i = 0;
    for (const ConstInstr& in : code) {
      EXPECT_EQ(in.op, i % 2 ? Op::I64Const : Op::I32Const);
      EXPECT_EQ(in.value, 10 + i);
      ++i;
    }
    if (n == 0) continue;
    EXPECT_EQ(code.back().value, 10 + n - 1);
    code[0].value = 99;
    EXPECT_EQ(copy[0].value, 10u) << n;
    EXPECT_NE(copy.begin(), code.begin());
  }
}

}  // namespace
}  // namespace wzvm::vm
