// Replays every input in tests/regress/ through the bodies of all five fuzz
// targets (fuzz/targets.h): each fuzzing finding is checked in there once
// minimized, with a line in tests/regress/README.md saying what it found and
// where it was fixed. Run under the sanitizer build too (build-asan/), where
// a memory error in the replay is a test failure.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz/targets.h"

namespace {

namespace fs = std::filesystem;

std::vector<fs::path> inputs() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(fs::path(WZVM_SOURCE_DIR) / "tests" / "regress"))
    if (e.path().extension() == ".wasm") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(Regress, FuzzFindingsStayFixed) {
  auto files = inputs();
  ASSERT_FALSE(files.empty()) << "no inputs in tests/regress/";
  for (const fs::path& f : files) {
    SCOPED_TRACE(f.filename().string());
    std::ifstream in(f, std::ios::binary);
    std::vector<uint8_t> b(std::istreambuf_iterator<char>(in), {});
    EXPECT_EQ(wzvm::fuzz::check_decode(b.data(), b.size()), "");
    EXPECT_EQ(wzvm::fuzz::check_validate(b.data(), b.size()), "");
    EXPECT_EQ(wzvm::fuzz::check_instantiate(b.data(), b.size()), "");
    EXPECT_EQ(wzvm::fuzz::check_execute(b.data(), b.size()), "");
    EXPECT_EQ(wzvm::fuzz::check_differential(b.data(), b.size()), "");
  }
}

}  // namespace

// ---------------------------------------------------------------------------
// The differential campaign against binaryen and V8 (fuzz/binaryen.h).

#include "fuzz/binaryen.h"

namespace {

namespace bz = wzvm::fuzz::binaryen;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Each module in tests/regress/binaryen/ runs, in all three ways the
// campaign runs it, to exactly the events its .expected file gives (the
// spec's outcome, worked out by hand where the other engine was wrong).
TEST(Regress, BinaryenDivergencesStayFixed) {
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(fs::path(WZVM_SOURCE_DIR) / "tests" / "regress" / "binaryen")) {
    if (e.path().extension() != ".wasm") continue;
    SCOPED_TRACE(e.path().filename().string());
    std::string bytes = slurp(e.path());
    std::string expected = slurp(fs::path(e.path()).replace_extension(".expected"));
    ASSERT_FALSE(expected.empty());
    std::vector<uint8_t> b(bytes.begin(), bytes.end());
    for (bz::Mode mode : {bz::Mode::Plain, bz::Mode::Sampled, bz::Mode::Counted}) {
      bz::Run r = bz::run_wzvm(b, mode);
      EXPECT_TRUE(r.complete);
      EXPECT_EQ(r.text, expected);
    }
    ++n;
  }
  EXPECT_GE(n, 1u);
}

// Binaryen's own printing (as `wasm-opt --fuzz-exec-before` prints it) read
// back: the module's types decide how a result reads ("254" for an f64, an
// i64 above 2^53, NaN payloads, a v128, a tuple with a reference).
TEST(BinaryenHarness, ReadsBinaryensOutput) {
  wzvm::vm::Module m;
  auto add = [&](const char* name, std::vector<wzvm::vm::ValType> results) {
    m.types.push_back({{}, std::move(results)});
    m.func_type_indices.push_back(static_cast<uint32_t>(m.types.size() - 1));
    m.exports.push_back(
        {name, wzvm::vm::ExternKind::Func, static_cast<uint32_t>(m.func_type_indices.size() - 1)});
  };
  using wzvm::vm::ValType;
  add("f", {ValType::F64});
  add("big", {ValType::I64});
  add("tuple", {ValType::I32, ValType::F32, ValType::FuncRef, ValType::V128});
  add("nan", {ValType::F32});
  const char* text =
      "[fuzz-exec] calling f\n"
      "[LoggingExternalInterface logging 9 305419896]\n"
      "[LoggingExternalInterface logging 0.10000000149011612]\n"
      "[LoggingExternalInterface logging -nan:0x200000]\n"
      "[fuzz-exec] note result: f => 254\n"
      "[fuzz-exec] calling big\n"
      "[fuzz-exec] note result: big => -9223372036854775807\n"
      "[fuzz-exec] calling tuple\n"
      "[fuzz-exec] note result: tuple => (-7, -0, funcref(fimport$0), i32x4 0x00013354 0x0001ffff 0x4e5a000d "
      "0x0000ffff)\n"
      "[fuzz-exec] calling nan\n"
      "[trap final > memory: 1180244352 > 1048576]\n";
  bool host_limit = true;
  EXPECT_EQ(bz::canonical_binaryen(text, m, &host_limit),
            "call f\nlog 9 305419896\nlog 0.10000000149011612\nlog -nan:0x200000\nresult f => 254\n"
            "call big\nresult big => -9223372036854775807\n"
            "call tuple\nresult tuple => -7, -0, ref, i32x4 0x00013354 0x0001ffff 0x4e5a000d 0x0000ffff\n"
            "call nan\ntrap memory\n");
  EXPECT_FALSE(host_limit);
  // wzvm's side prints the same values the same way.
  EXPECT_EQ(bz::value_text(wzvm::vm::Value::from_f64_bits(0x406fc00000000000ull), true), "254");
  EXPECT_EQ(bz::value_text(wzvm::vm::Value::from_f32_bits(0x3dcccccd), true), "0.10000000149011612");
  EXPECT_EQ(bz::value_text(wzvm::vm::Value::from_f32_bits(0xffa00000), true), "-nan:0x200000");
  EXPECT_EQ(bz::value_text(wzvm::vm::Value::from_f32_bits(0x80000000), true), "-0");
}

TEST(BinaryenHarness, FindsADifferenceAndCutsAtStackExhaustion) {
  auto d = bz::compare("call f\nlog 1\nresult f => 2\n", "call f\nlog 1\nresult f => 3\n", "binaryen");
  EXPECT_FALSE(d.equal);
  EXPECT_EQ(d.wzvm_line, "result f => 2");
  EXPECT_EQ(d.other_line, "result f => 3");
  // Depth limits differ between engines: from the call that exhausted the
  // stack in either, nothing is compared; before it, everything is.
  EXPECT_TRUE(bz::compare("call a\nlog 1\ncall b\nlog 5\ntrap exhausted\ncall c\n",
                          "call a\nlog 1\ncall b\nlog 5\nlog 6\ncall c\nlog 7\n", "binaryen")
                  .equal);
  EXPECT_FALSE(
      bz::compare("call a\nlog 2\ncall b\ntrap exhausted\n", "call a\nlog 1\ncall b\nlog 5\n", "binaryen")
          .equal);
}

// What the campaign counts as a NaN difference and what it does not.
TEST(BinaryenHarness, NanDifferencesOnlyWhereBothAreNans) {
  EXPECT_TRUE(bz::nan_only_difference("log -nan:0x7fffff", "log nan:0x400000"));
  // An f64 made of two f32 lanes that are NaNs of other signs (f32x4.div 0/0
  // on x86 against binaryen), read back as one f64 value.
  EXPECT_TRUE(
      bz::nan_only_difference("result f => -2.2471185615950619e+307", "result f => 2.2471174879937118e+307"));
  // A logged i64 (two i32 halves) that holds an f64 NaN.
  EXPECT_TRUE(bz::nan_only_difference("log -123 -1", "log 0 2146959360"));
  EXPECT_TRUE(bz::nan_only_difference("result f => i32x4 0xffffffff 0xffffffff 0x00000000 0x7ff80000",
                                      "result f => i32x4 0x00000000 0x7ff80000 0x00000000 0x7ff80000"));
  EXPECT_FALSE(bz::nan_only_difference("log 1", "log 2"));
  EXPECT_FALSE(bz::nan_only_difference("result f => 1.5", "result f => -1.5"));
  EXPECT_FALSE(bz::nan_only_difference("result f => i32x4 0x00000001 0x00000000 0x00000000 0x00000000",
                                       "result f => i32x4 0x00000002 0x00000000 0x00000000 0x00000000"));
  EXPECT_FALSE(bz::nan_only_difference("trap memory", "trap unreachable"));
}

// The SIMD de-NaN rewrite wraps exactly the float arithmetic, inside strings
// nothing, and adds its two helpers.
TEST(BinaryenHarness, DeNansSimdFloatArithmetic) {
  bool changed = false;
  std::string out = bz::denan_simd_text(
      "(module\n (data (i32.const 0) \"(f32x4.add\")\n (func $f (result v128)\n  (f64x2.sub\n   (f32x4.neg "
      "(v128.const i32x4 0 0 0 0))\n"
      "   (f32x4.demote_f64x2_zero (v128.const i32x4 0 0 0 0)))))\n",
      &changed);
  EXPECT_TRUE(changed);
  EXPECT_NE(out.find("(call $wzvm_denan_f64x2 (f64x2.sub"), std::string::npos) << out;
  EXPECT_NE(out.find("(call $wzvm_denan_f32x4 (f32x4.demote_f64x2_zero"), std::string::npos) << out;
  EXPECT_EQ(out.find("$wzvm_denan_f32x4 (f32x4.neg"), std::string::npos) << out;  // neg is exact
  EXPECT_NE(out.find("\"(f32x4.add\""), std::string::npos) << out;
  EXPECT_NE(out.find("(func $wzvm_denan_f32x4"), std::string::npos) << out;
}

// final:hashMemory is appended to the exports and points at hashMemory.
TEST(BinaryenHarness, ExportsTheMemoryHashLast) {
  // (module (func (result i32) i32.const 7) (export "hashMemory" (func 0)))
  std::vector<uint8_t> m = {0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x05, 0x01,
                            0x60, 0x00, 0x01, 0x7f, 0x03, 0x02, 0x01, 0x00, 0x07, 0x0e, 0x01,
                            0x0a, 'h',  'a',  's',  'h',  'M',  'e',  'm',  'o',  'r',  'y',
                            0x00, 0x00, 0x0a, 0x06, 0x01, 0x04, 0x00, 0x41, 0x07, 0x0b};
  auto loaded = wzvm::vm::load_module(bz::with_final_exports(m));
  ASSERT_TRUE(loaded) << loaded.error().to_string();
  ASSERT_EQ((*loaded)->exports.size(), 2u);
  EXPECT_EQ((*loaded)->exports[1].name, "final:hashMemory");
  EXPECT_EQ((*loaded)->exports[1].index, 0u);
  EXPECT_EQ(bz::run_wzvm(bz::with_final_exports(m), bz::Mode::Plain).text,
            "call hashMemory\nresult hashMemory => 7\ncall final:hashMemory\nresult final:hashMemory => 7\n");
}

}  // namespace
