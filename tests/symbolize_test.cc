// profiler/symbolize and profiler/demangle: source lines, inlined frames and
// names of the test programs in testdata/dwarf/, compared with what their
// sources say (line numbers worked out by hand from the files, which mark
// them in comments), not with a snapshot of earlier output.

#include "profiler/symbolize.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "profiler/demangle.h"
#include "profiler/dwarf_info.h"
#include "profiler/dwarf_lines.h"
#include "vm/module.h"

namespace wzvm::profiler {
namespace {

using Frames = std::vector<SourceFrame>;

std::string dwarf_program(const std::string& name) {
  return std::string(WZVM_TESTDATA_DIR) + "/dwarf/" + name;
}

// Loads a built test program; skips the test if its toolchain was missing
// at configure time (testdata/dwarf/CMakeLists.txt says so then).
#define LOAD_OR_SKIP(var, path)                                                                            \
  std::shared_ptr<const vm::Module> var;                                                                   \
  do {                                                                                                     \
    if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not built (toolchain missing)";          \
    std::ifstream in(path, std::ios::binary);                                                              \
    auto loaded = vm::load_module({std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()}); \
    ASSERT_TRUE(loaded.ok()) << path;                                                                      \
    var = *loaded;                                                                                         \
  } while (0)

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// The defined function whose DWARF or fallback name is `name`.
uint32_t find_function(const vm::Module& m, const Symbolizer& sym, std::string_view name) {
  for (uint32_t i = 0; i < m.functions.size(); ++i)
    if (sym.function(m.num_imported_funcs + i).function == name) return m.num_imported_funcs + i;
  ADD_FAILURE() << "no function " << name;
  return 0;
}

// lookup() of every byte offset in a function's body.
std::vector<Frames> lookups_in(const vm::Module& m, const Symbolizer& sym, uint32_t func_index) {
  const vm::Function& f = m.functions[func_index - m.num_imported_funcs];
  std::vector<Frames> out;
  for (uint32_t a = f.body_offset; a < f.body_end; ++a) out.push_back(sym.lookup(a));
  return out;
}

std::string describe(const Frames& fs) {
  std::string s;
  for (const SourceFrame& f : fs)
    s += std::string(f.function) + "@" + std::to_string(f.line) + ":" + std::to_string(f.column) + " ";
  return s;
}

// ---- C (testdata/dwarf/inline.c), DWARF 4 and DWARF 5 ----

class InlineC : public testing::TestWithParam<const char*> {};

TEST_P(InlineC, OneLevelOfInliningInnermostFirst) {
  LOAD_OR_SKIP(m, dwarf_program(GetParam()));
  Symbolizer sym(*m);
  EXPECT_EQ(sym.warning(), "");
  EXPECT_TRUE(sym.has_line_numbers());
  EXPECT_TRUE(sym.has_inline_frames());

  uint32_t hash = find_function(*m, sym, "hash");
  SourceFrame fn = sym.function(hash);
  EXPECT_TRUE(ends_with(fn.function_file, "testdata/dwarf/inline.c")) << fn.function_file;
  EXPECT_EQ(fn.start_line, 18u);
  EXPECT_FALSE(fn.inlined);

  std::set<uint32_t> mix_lines;
  for (const Frames& fs : lookups_in(*m, sym, hash)) {
    ASSERT_FALSE(fs.empty());
    // The physical function is last, and only it is not inlined.
    EXPECT_EQ(fs.back().function, "hash");
    EXPECT_FALSE(fs.back().inlined);
    if (fs.size() == 1) {
      // hash's own code: lines 18-23 of inline.c.
      EXPECT_GE(fs[0].line, 18u) << describe(fs);
      EXPECT_LE(fs[0].line, 23u) << describe(fs);
      continue;
    }
    // Inside the inlined mix(): [mix at its own line, hash at the call].
    ASSERT_EQ(fs.size(), 2u) << describe(fs);
    EXPECT_EQ(fs[0].function, "mix");
    EXPECT_TRUE(fs[0].inlined);
    EXPECT_EQ(fs[0].start_line, 12u);
    EXPECT_TRUE(ends_with(fs[0].file, "inline.c"));
    EXPECT_TRUE(fs[0].line == 13 || fs[0].line == 14) << describe(fs);
    mix_lines.insert(fs[0].line);
    EXPECT_EQ(fs[1].line, 21u);
    EXPECT_EQ(fs[1].column, 9u);
    EXPECT_TRUE(ends_with(fs[1].file, "inline.c"));
  }
  EXPECT_EQ(mix_lines, (std::set<uint32_t>{13, 14}));
}

TEST_P(InlineC, TwoLevelsOfInlining) {
  LOAD_OR_SKIP(m, dwarf_program(GetParam()));
  Symbolizer sym(*m);
  uint32_t work = find_function(*m, sym, "work");
  EXPECT_EQ(sym.function(work).start_line, 36u);
  size_t in_square = 0, in_sum_squares = 0;
  for (const Frames& fs : lookups_in(*m, sym, work)) {
    ASSERT_FALSE(fs.empty());
    EXPECT_EQ(fs.back().function, "work");
    if (fs.size() == 3) {
      // square() inside sum_squares() inside work().
      ++in_square;
      EXPECT_EQ(fs[0].function, "square");
      EXPECT_EQ(fs[0].line, 27u);
      EXPECT_EQ(fs[0].start_line, 26u);
      EXPECT_EQ(fs[1].function, "sum_squares");
      EXPECT_EQ(fs[1].line, 32u);  // the call of square
      EXPECT_EQ(fs[1].column, 36u);
      EXPECT_EQ(fs[2].line, 39u);  // the call of sum_squares
      EXPECT_EQ(fs[2].column, 12u);
    } else if (fs.size() == 2) {
      ++in_sum_squares;
      EXPECT_EQ(fs[0].function, "sum_squares");
      EXPECT_GE(fs[0].line, 30u) << describe(fs);
      EXPECT_LE(fs[0].line, 33u) << describe(fs);
      EXPECT_EQ(fs[1].line, 39u);
      EXPECT_EQ(fs[1].column, 12u);
    } else {
      ASSERT_EQ(fs.size(), 1u) << describe(fs);
      EXPECT_GE(fs[0].line, 36u) << describe(fs);
      EXPECT_LE(fs[0].line, 44u) << describe(fs);
    }
  }
  EXPECT_GT(in_square, 0u);
  EXPECT_GT(in_sum_squares, 0u);
}

TEST_P(InlineC, MainAndAddressesOutsideCode) {
  LOAD_OR_SKIP(m, dwarf_program(GetParam()));
  Symbolizer sym(*m);
  // clang names C's main(argc, argv) __main_argc_argv for wasm: the linkage
  // name is kept as the system name, the source name is shown.
  uint32_t main = find_function(*m, sym, "main");
  EXPECT_EQ(sym.function(main).system_name, "__main_argc_argv");
  EXPECT_EQ(sym.function(main).start_line, 48u);
  // Module offsets outside every function body (the header, the data
  // section) have no frames.
  EXPECT_TRUE(sym.lookup(0).empty());
  EXPECT_TRUE(sym.lookup(static_cast<uint32_t>(m->bytes.size() - 1)).empty());
  EXPECT_EQ(sym.function_at(m->functions[main - m->num_imported_funcs].body_offset), main);
}

INSTANTIATE_TEST_SUITE_P(Dwarf, InlineC, testing::Values("inline.wasm", "inline5.wasm"),
                         [](const auto& info) {
                           return std::string(info.param) == "inline.wasm" ? "v4" : "v5";
                         });

TEST(Symbolize, MalformedRangeListsAreLeftOutNotFatal) {
  // Debian 12's libdwarf crashes on some malformed .debug_rnglists; the
  // symbolizer checks the section's framing first and leaves it out.
  std::string path = dwarf_program("inline5.wasm");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not built";
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  auto loaded = vm::load_module(bytes);
  ASSERT_TRUE(loaded.ok());
  for (const vm::CustomSection& c : (*loaded)->customs)
    if (c.name == ".debug_rnglists") bytes[c.offset + 4] = 0x99;  // the first unit's version
  auto broken = vm::load_module(bytes);
  ASSERT_TRUE(broken.ok());
  Symbolizer sym(**broken);
  EXPECT_NE(sym.warning().find(".debug_rnglists"), std::string::npos) << sym.warning();
  // Functions described by low/high pc keep their names and lines.
  uint32_t hash = find_function(**broken, sym, "hash");
  EXPECT_EQ(sym.function(hash).start_line, 18u);
}

// ---- no debug info ----

TEST(Symbolize, WithoutDwarfFunctionLevel) {
  // inline.c built without -g: only wasi-libc's objects carry DWARF.
  LOAD_OR_SKIP(m, dwarf_program("inline-nodebug.wasm"));
  Symbolizer sym(*m);
  uint32_t hash = find_function(*m, sym, "hash");  // from the name section
  SourceFrame fn = sym.function(hash);
  EXPECT_EQ(fn.start_line, 0u);
  EXPECT_EQ(fn.function_file, "");
  for (const Frames& fs : lookups_in(*m, sym, hash)) {
    ASSERT_EQ(fs.size(), 1u);
    EXPECT_EQ(fs[0].function, "hash");
    EXPECT_EQ(fs[0].line, 0u);
    EXPECT_FALSE(fs[0].inlined);
  }
}

TEST(Symbolize, FallbackNamesExportThenIndex) {
  // (module
  //   (func (export "_ZN3geo5norm2ERKNS_3VecIiEE"))   ;; a C++ name, mangled
  //   (func))                                          ;; no name at all
  // No name section, no DWARF.
  std::vector<uint8_t> bytes = {0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00,
                                0x00, 0x01, 0x04, 0x01, 0x60, 0x00, 0x00,  // type: [] -> []
                                0x03, 0x03, 0x02, 0x00, 0x00,              // two functions of type 0
                                0x07, 0x1f, 0x01, 0x1b};  // export section, one export, name of 27 bytes
  for (char c : std::string("_ZN3geo5norm2ERKNS_3VecIiEE")) bytes.push_back(static_cast<uint8_t>(c));
  for (uint8_t b : {0x00, 0x00,                                             // func 0
                    0x0a, 0x07, 0x02, 0x02, 0x00, 0x0b, 0x02, 0x00, 0x0b})  // code: two empty bodies
    bytes.push_back(b);
  auto loaded = vm::load_module(bytes);
  ASSERT_TRUE(loaded.ok());
  const vm::Module& m = **loaded;
  Symbolizer sym(m);
  EXPECT_FALSE(sym.has_line_numbers());
  EXPECT_FALSE(sym.has_inline_frames());
  EXPECT_EQ(sym.warning(), "");
  EXPECT_EQ(sym.function(0).function, "geo::norm2(geo::Vec<int> const&)");
  EXPECT_EQ(sym.function(0).system_name, "_ZN3geo5norm2ERKNS_3VecIiEE");
  EXPECT_EQ(sym.function(1).function, "wasm-function[1]");
  Frames fs = sym.lookup(m.functions[1].body_offset);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].function, "wasm-function[1]");
  EXPECT_EQ(fs[0].line, 0u);
}

// ---- C++ (testdata/dwarf/geometry.cc) ----

TEST(Symbolize, CxxQualifiedDemangledNames) {
  LOAD_OR_SKIP(m, dwarf_program("geometry.wasm"));
  Symbolizer sym(*m);
  uint32_t norm_i = find_function(*m, sym, "geo::norm2(geo::Vec<int> const&)");
  uint32_t norm_d = find_function(*m, sym, "geo::norm2(geo::Vec<double> const&)");
  EXPECT_EQ(sym.function(norm_i).system_name, "_ZN3geo5norm2ERKNS_3VecIiEE");
  EXPECT_EQ(sym.function(norm_i).start_line, 22u);
  EXPECT_EQ(sym.function(norm_d).system_name, "_ZN3geo5norm2ERKNS_3VecIdEE");
  EXPECT_EQ(sym.function(norm_d).start_line, 25u);

  for (auto [fi, type, call_line] : {std::tuple{norm_i, "int", 23u}, std::tuple{norm_d, "double", 26u}}) {
    size_t inlined = 0;
    for (const Frames& fs : lookups_in(*m, sym, fi)) {
      ASSERT_FALSE(fs.empty());
      if (fs.size() == 1) continue;
      ASSERT_EQ(fs.size(), 2u) << describe(fs);
      ++inlined;
      // The member function, named through DW_AT_specification.
      std::string t(type);
      EXPECT_EQ(fs[0].function, "geo::Vec<" + t + ">::dot(geo::Vec<" + t + "> const&) const");
      EXPECT_EQ(fs[0].system_name, "_ZNK3geo3VecI" + std::string(t == "int" ? "i" : "d") + "E3dotERKS1_");
      EXPECT_EQ(fs[0].line, 17u);
      EXPECT_EQ(fs[0].start_line, 16u);
      EXPECT_EQ(fs[1].line, call_line);
      EXPECT_EQ(fs[1].column, 12u);
    }
    EXPECT_GT(inlined, 0u) << type;
  }
}

// Symbolizers built on several threads at once (the live pprof endpoint
// builds one per request, on the HTTP server's threads) read the same
// tables as one built alone. libdwarf keeps process-global state, so
// unserialized readers corrupted each other's file names and the heap
// (profiler/symbolize.cc, the lock in the constructor).
TEST(Symbolize, ConcurrentSymbolizersAgree) {
  LOAD_OR_SKIP(m, dwarf_program("geometry.wasm"));
  // Every address of every defined function: name, file, line, column of
  // each frame.
  auto digest = [&](const Symbolizer& sym) {
    std::string d;
    for (const vm::Function& f : m->functions)
      for (uint32_t a = f.body_offset; a < f.body_end; ++a)
        for (const SourceFrame& fr : sym.lookup(a))
          d.append(fr.function).append("|").append(fr.file).append(":") +=
              std::to_string(fr.line) + ":" + std::to_string(fr.column) + "\n";
    return d;
  };
  const std::string want = digest(Symbolizer(*m));
  ASSERT_NE(want.find("geometry.cc:"), std::string::npos);  // real DWARF lines, not fallback names
  constexpr int kThreads = 6, kRounds = 15;
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        Symbolizer sym(*m);
        if (!sym.warning().empty() || digest(sym) != want) ++mismatches[t];
      }
    });
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
}

// Compile units are read when a lookup first needs one, and each is merged
// into the table built so far: lookups in any order, reading the units in
// any order, answer as a Symbolizer that read them all first.
TEST(Symbolize, UnitsReadOnDemandInAnyOrderAgreeWithAllAtOnce) {
  for (const char* program : {"geometry.wasm", "hashing.wasm"}) {
    LOAD_OR_SKIP(m, dwarf_program(program));
    auto frames_at = [](const Symbolizer& sym, uint32_t a) {
      std::string d;
      for (const SourceFrame& fr : sym.lookup(a))
        d.append(fr.function).append("|").append(fr.file).append(":") +=
            std::to_string(fr.line) + ":" + std::to_string(fr.column) + "\n";
      return d;
    };
    std::vector<uint32_t> addrs;
    for (const vm::Function& f : m->functions)
      for (uint32_t a = f.body_offset; a < f.body_end; ++a) addrs.push_back(a);
    Symbolizer all(*m);
    ASSERT_TRUE(all.has_line_numbers()) << program;  // reads every unit
    std::vector<std::string> want;
    for (uint32_t a : addrs) want.push_back(frames_at(all, a));
    // Backwards, and from the middle outwards by a stride that jumps
    // between units.
    std::vector<size_t> backwards(addrs.size()), strided;
    for (size_t i = 0; i < addrs.size(); ++i) backwards[i] = addrs.size() - 1 - i;
    for (size_t start = 0; start < 7; ++start)
      for (size_t i = start; i < addrs.size(); i += 7)
        strided.push_back((i + addrs.size() / 2) % addrs.size());
    for (const std::vector<size_t>* order : {&backwards, &strided}) {
      Symbolizer lazy(*m);
      size_t wrong = 0;
      for (size_t i : *order) wrong += frames_at(lazy, addrs[i]) != want[i];
      EXPECT_EQ(wrong, 0u) << program << (order == &backwards ? " backwards" : " strided");
    }
  }
}

// The line-number programs are decoded by hand (profiler/dwarf_lines.h):
// every unit's rows must be libdwarf's, for C with DWARF 4 and 5, C++, Rust
// and CPython (when built). A unit the decoder declines is read by libdwarf
// instead, so declining is allowed, but not for most units: a decoder that
// always declined would agree with everything.
TEST(Symbolize, OwnLineDecoderAgreesWithLibdwarf) {
  std::vector<std::string> programs;
  for (const char* p : {"inline.wasm", "inline5.wasm", "geometry.wasm", "hashing.wasm"})
    programs.push_back(dwarf_program(p));
  programs.push_back(std::string(WZVM_CPYTHON_DIR) + "/python.wasm");
  size_t read = 0;
  for (const std::string& path : programs) {
    if (!std::filesystem::exists(path)) continue;  // a toolchain or CPython missing
    std::ifstream in(path, std::ios::binary);
    auto m = vm::decode_module({std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()});
    ASSERT_TRUE(m.ok()) << path;
    const std::vector<UnitLineRows> units = line_rows_both_ways(**m);
    size_t decoded = 0, rows = 0;
    for (size_t i = 0; i < units.size(); ++i) {
      const UnitLineRows& u = units[i];
      if (!u.own_ok) continue;
      ++decoded;
      rows += u.own.size();
      if (u.own == u.libdwarf) continue;
      size_t at = 0;
      while (at < u.own.size() && at < u.libdwarf.size() && u.own[at] == u.libdwarf[at]) ++at;
      ADD_FAILURE() << path << " unit " << i << ": row " << at << " of " << u.own.size() << " (libdwarf "
                    << u.libdwarf.size() << ") differs";
    }
    EXPECT_GE(decoded * 10, units.size() * 9)
        << path << ": " << decoded << " of " << units.size() << " decoded";
    EXPECT_GT(rows, 1000u) << path;
    ++read;
  }
  if (read == 0) GTEST_SKIP() << "no test program built";
}

// On malformed line programs the decoder declines or agrees with libdwarf
// (which then reads the unit), and never reads out of bounds (ASan build):
// single bytes of .debug_line's first units changed.
TEST(Symbolize, OwnLineDecoderOnMutatedTablesDeclinesOrAgrees) {
  const std::string path = dwarf_program("inline.wasm");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not built (toolchain missing)";
  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  uint32_t line_at = 0, line_size = 0;
  {
    auto m = vm::decode_module(bytes);
    ASSERT_TRUE(m.ok());
    for (const vm::CustomSection& c : (*m)->customs)
      if (c.name == ".debug_line") line_at = c.offset, line_size = c.size;
  }
  ASSERT_GT(line_size, 0u);
  size_t declined = 0, mutations = 0;
  for (uint32_t i = 0; i < std::min<uint32_t>(line_size, 400); ++i) {
    for (uint8_t flip : {uint8_t{0xff}, uint8_t{0x01}}) {
      std::vector<uint8_t> changed = bytes;
      changed[line_at + i] ^= flip;
      auto m = vm::decode_module(std::move(changed));
      ASSERT_TRUE(m.ok());
      ++mutations;
      for (const UnitLineRows& u : line_rows_both_ways(**m)) {
        if (!u.own_ok) {
          ++declined;
          continue;
        }
        EXPECT_TRUE(u.own == u.libdwarf) << "byte " << i << " ^ " << int(flip);
      }
    }
  }
  EXPECT_GT(declined, 0u) << mutations << " mutations";
}

// The DIE trees are walked by InfoReader (profiler/dwarf_info.h), not
// libdwarf: every unit's scopes (names, declarations, calls, parents,
// ranges) must be libdwarf's, and every unit of these producers must be
// read by it (a reader that always declined would agree with everything).
// Then whole Symbolizers, one each way, must answer every lookup alike.
void expect_scopes_both_ways(const std::string& path, size_t lookup_stride) {
  std::ifstream in(path, std::ios::binary);
  auto m = vm::decode_module({std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()});
  ASSERT_TRUE(m.ok()) << path;
  const std::vector<dwarf::UnitScopes> units = dwarf::scopes_both_ways(**m);
  size_t scopes = 0, inlined = 0, declined = 0;
  for (size_t i = 0; i < units.size(); ++i) {
    const dwarf::UnitScopes& u = units[i];
    if (!u.own_ok) {
      ++declined;
      continue;
    }
    scopes += u.own.size();
    for (const dwarf::ScopeRow& r : u.own) inlined += r.parent != UINT32_MAX && !r.call_file.empty();
    if (u.own == u.libdwarf) continue;
    size_t at = 0;
    while (at < u.own.size() && at < u.libdwarf.size() && u.own[at] == u.libdwarf[at]) ++at;
    std::string what = at < u.own.size() ? u.own[at].name : "(none)";
    std::string want = at < u.libdwarf.size() ? u.libdwarf[at].name : "(none)";
    ADD_FAILURE() << path << " unit " << i << ": scope " << at << " of " << u.own.size() << " (libdwarf "
                  << u.libdwarf.size() << ") differs: " << what << " / libdwarf " << want;
  }
  EXPECT_EQ(declined, 0u) << path << ": " << declined << " of " << units.size() << " units declined";
  EXPECT_GT(scopes, 10u) << path;
  EXPECT_GT(inlined, 0u) << path;

  // Whole tables: lookups through one Symbolizer read each way.
  dwarf::set_own_die_reader(false);
  Symbolizer theirs(**m);
  dwarf::set_own_die_reader(true);
  Symbolizer ours(**m);
  auto text = [](const std::vector<SourceFrame>& fs) {
    std::string d;
    for (const SourceFrame& f : fs) {
      d.append(f.function).append("|").append(f.system_name).append("|").append(f.function_file).append(":");
      d.append(std::to_string(f.start_line)).append("|").append(f.file).append(":");
      d.append(std::to_string(f.line)).append(":").append(std::to_string(f.column));
      d.append(f.inlined ? " inlined\n" : "\n");
    }
    return d;
  };
  std::vector<uint32_t> addrs;
  for (const vm::Function& f : (*m)->functions)
    for (uint32_t a = f.body_offset; a < f.body_end; a += a == f.body_offset ? 1 : lookup_stride)
      addrs.push_back(a);
  ours.prefetch(addrs);
  theirs.prefetch(addrs);
  size_t wrong = 0;
  for (uint32_t a : addrs)
    if (text(ours.lookup(a)) != text(theirs.lookup(a)) && ++wrong < 5)
      ADD_FAILURE() << path << " at " << a << ":\n"
                    << text(ours.lookup(a)) << "libdwarf:\n"
                    << text(theirs.lookup(a));
  EXPECT_EQ(wrong, 0u) << path << ", " << addrs.size() << " addresses";
  EXPECT_EQ(ours.has_inline_frames(), theirs.has_inline_frames());
  EXPECT_EQ(ours.warning(), theirs.warning());
}

TEST(Symbolize, OwnDieReaderAgreesWithLibdwarf) {
  size_t read = 0;
  for (const char* p : {"inline.wasm", "inline5.wasm", "geometry.wasm", "hashing.wasm", "hashing-v0.wasm"}) {
    const std::string path = dwarf_program(p);
    if (!std::filesystem::exists(path)) continue;  // its toolchain missing
    expect_scopes_both_ways(path, 1);
    ++read;
  }
  if (read == 0) GTEST_SKIP() << "no test program built";
}

TEST(Symbolize, OwnDieReaderAgreesWithLibdwarfOnCPython) {
  const std::string path = std::string(WZVM_CPYTHON_DIR) + "/python.wasm";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not built (bash scripts/build-cpython.sh)";
  expect_scopes_both_ways(path, 61);
  // The data layout the CPython profiler reads (Symbolizer::layout, the
  // top-level scan) is the same both ways too.
  std::ifstream in(path, std::ios::binary);
  auto m = vm::decode_module({std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()});
  ASSERT_TRUE(m.ok());
  auto layout = [&](bool own, std::string& out) {
    dwarf::set_own_die_reader(own);
    Symbolizer sym(**m);
    dwarf::set_own_die_reader(true);
    // Some of what profiler/cpython.cc asks for.
    std::map<std::string, Symbolizer::Field> fields;
    for (const char* p :
         {"pyruntimestate.interpreters.main", "_is.threads.head", "_ts.cframe", "_PyInterpreterFrame.f_code",
          "PyCodeObject.co_firstlineno", "PyBytesObject.ob_sval", "PyASCIIObject", "PyASCIIObject.state.kind",
          "PyASCIIObject.state.ascii"})
      fields[p];
    std::map<std::string, uint64_t> variables = {{"_PyRuntime", 0}, {"Py_Version", 0}, {"PyBytes_Type", 0}};
    std::string why;
    const bool ok = sym.layout(fields, variables, why);
    out = why;
    for (const auto& [k, f] : fields)
      out += k + "=" + std::to_string(f.offset) + "/" + std::to_string(f.bit_offset) + "/" +
             std::to_string(f.bit_size) + "/" + std::to_string(f.size) + ";";
    for (const auto& [k, v] : variables) out += k + "@" + std::to_string(v) + ";";
    return ok;
  };
  std::string ours, theirs;
  const bool ok = layout(true, ours);
  EXPECT_EQ(ok, layout(false, theirs));
  EXPECT_EQ(ours, theirs);
}

// On malformed DIE trees InfoReader declines or agrees with libdwarf (which
// then reads the unit), and never reads out of bounds (ASan build): single
// bytes of .debug_info and .debug_abbrev changed, across both sections.
TEST(Symbolize, OwnDieReaderOnMutatedSectionsDeclinesOrAgrees) {
  size_t declined = 0, agreed = 0, mutations = 0;
  for (const char* program : {"inline.wasm", "inline5.wasm"}) {
    const std::string path = dwarf_program(program);
    if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not built (toolchain missing)";
    std::ifstream in(path, std::ios::binary);
    const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    std::vector<std::pair<uint32_t, uint32_t>> sections;  // offset, size
    {
      auto m = vm::decode_module(bytes);
      ASSERT_TRUE(m.ok());
      for (const vm::CustomSection& c : (*m)->customs)
        if (c.name == ".debug_info" || c.name == ".debug_abbrev") sections.push_back({c.offset, c.size});
    }
    ASSERT_EQ(sections.size(), 2u) << path;
    for (auto [at, size] : sections) {
      // About 150 places per section, the start (headers, the first
      // abbreviations) densely.
      std::vector<uint32_t> places;
      for (uint32_t i = 0; i < std::min<uint32_t>(size, 60); ++i) places.push_back(i);
      for (uint32_t i = 60; i < size; i += std::max<uint32_t>(1, size / 90)) places.push_back(i);
      for (uint32_t i : places) {
        for (uint8_t flip : {uint8_t{0xff}, uint8_t{0x01}, uint8_t{0x40}}) {
          std::vector<uint8_t> changed = bytes;
          changed[at + i] ^= flip;
          auto m = vm::decode_module(std::move(changed));
          ASSERT_TRUE(m.ok());
          ++mutations;
          const std::vector<dwarf::UnitScopes> units = dwarf::scopes_both_ways(**m);
          for (size_t k = 0; k < units.size(); ++k) {
            const dwarf::UnitScopes& u = units[k];
            if (!u.own_ok) {
              ++declined;
              continue;
            }
            ++agreed;
            EXPECT_TRUE(u.own == u.libdwarf) << program << " byte " << i << " of section at " << at << " ^ "
                                             << int(flip) << ", unit " << k;
          }
        }
      }
    }
  }
  EXPECT_GT(declined, 0u) << mutations << " mutations";
  EXPECT_GT(agreed, declined) << mutations << " mutations";
}

// ---- Rust (testdata/dwarf/hashing.rs), legacy and v0 mangling ----

class RustNames : public testing::TestWithParam<const char*> {};

TEST_P(RustNames, InlinedStepInsideHash) {
  LOAD_OR_SKIP(m, dwarf_program(GetParam()));
  Symbolizer sym(*m);
  EXPECT_TRUE(sym.has_inline_frames());
  uint32_t hash = find_function(*m, sym, "hashing::fnv::hash");
  SourceFrame fn = sym.function(hash);
  EXPECT_EQ(fn.start_line, 16u);
  EXPECT_TRUE(ends_with(fn.function_file, "testdata/dwarf/hashing.rs"));
  bool v0 = std::string(GetParam()).find("v0") != std::string::npos;
  EXPECT_EQ(fn.system_name.substr(0, v0 ? 3 : 23), v0 ? "_RN" : "_ZN7hashing3fnv4hash17h") << fn.system_name;

  size_t in_step = 0;
  for (const Frames& fs : lookups_in(*m, sym, hash)) {
    ASSERT_FALSE(fs.empty());
    EXPECT_EQ(fs.back().function, "hashing::fnv::hash");
    for (size_t i = 0; i + 1 < fs.size(); ++i) EXPECT_TRUE(fs[i].inlined);
    // step() may itself have std's wrapping_mul inlined into it: find it
    // anywhere but last; the frame after it is hash at the call of step.
    for (size_t i = 0; i + 1 < fs.size(); ++i) {
      if (fs[i].function != "hashing::step") continue;
      ++in_step;
      EXPECT_EQ(fs[i].line, 11u) << describe(fs);
      EXPECT_EQ(fs[i].start_line, 10u);
      EXPECT_EQ(fs[i + 1].function, "hashing::fnv::hash");
      EXPECT_EQ(fs[i + 1].line, 19u);
      EXPECT_EQ(fs[i + 1].column, 17u);
      // What step calls is inlined from core, at the lines of core's source.
      for (size_t j = 0; j < i; ++j) EXPECT_NE(fs[j].file.find("library/core/"), std::string_view::npos);
    }
  }
  EXPECT_GT(in_step, 0u);
}

// A lookup is a binary search: symbolizing every instruction address of a
// module with std's DWARF (~2 MB of .debug_info) stays far below what a
// linear scan of its table would cost.
TEST_P(RustNames, LookupIsABinarySearch) {
  LOAD_OR_SKIP(m, dwarf_program(GetParam()));
  auto t0 = std::chrono::steady_clock::now();
  Symbolizer sym(*m);
  auto t1 = std::chrono::steady_clock::now();
  size_t lookups = 0, frames = 0;
  for (int round = 0; round < 4; ++round)
    for (const vm::Function& f : m->functions)
      for (uint32_t a = f.body_offset; a < f.body_end; ++a, ++lookups) frames += sym.lookup(a).size();
  auto t2 = std::chrono::steady_clock::now();
  EXPECT_GT(lookups, 200000u);
  EXPECT_GE(frames, lookups);
  // Generous bounds for slow, shared machines (measured: ~0.2 s and ~0.1 s).
  EXPECT_LT(std::chrono::duration<double>(t1 - t0).count(), 5.0);
  EXPECT_LT(std::chrono::duration<double>(t2 - t1).count(), 5.0);
}

INSTANTIATE_TEST_SUITE_P(Dwarf, RustNames, testing::Values("hashing.wasm", "hashing-v0.wasm"),
                         [](const auto& info) {
                           return std::string(info.param) == "hashing.wasm" ? "legacy" : "v0";
                         });

// ---- demangling ----

TEST(Demangle, Cxx) {
  EXPECT_EQ(demangle("_ZN3geo5norm2ERKNS_3VecIiEE"), "geo::norm2(geo::Vec<int> const&)");
  EXPECT_EQ(demangle("_ZNK3geo3VecIiE3dotERKS1_"), "geo::Vec<int>::dot(geo::Vec<int> const&) const");
  EXPECT_EQ(demangle("_ZNSt3__16vectorIiNS_9allocatorIiEEE9push_backERKi"),
            "std::__1::vector<int, std::__1::allocator<int> >::push_back(int const&)");
  EXPECT_EQ(demangle("_Z1fv"), "f()");
  EXPECT_TRUE(is_mangled("_Z1fv"));
}

TEST(Demangle, RustLegacyDropsTheHash) {
  EXPECT_EQ(demangle("_ZN7hashing4step17h05c77a36c10ec5a6E"), "hashing::step");
  EXPECT_EQ(demangle("_ZN4core3ptr85drop_in_place$LT$std..rt..lang_start$LT$$LP$$RP$$GT$..$u7b$$u7b$closure$"
                     "u7d$$u7d$$GT$"
                     "17h7ffc8a2cfdc7fd5aE"),
            "core::ptr::drop_in_place<std::rt::lang_start<()>::{{closure}}>");
}

TEST(Demangle, RustV0) {
  EXPECT_EQ(demangle("_RNvNtCs8cJiOWDdmko_7hashing3fnv4hash"), "hashing::fnv::hash");
  EXPECT_EQ(demangle("_RNvCsi7GFBnvyxwE_1r5outer"), "r::outer");
  EXPECT_EQ(demangle("_RINvNtC3std3mem8align_ofdE"), "std::mem::align_of::<f64>");
}

TEST(Demangle, NotMangledStaysAsIs) {
  for (const char* s : {"main", "__main_argc_argv", "hash", "_Zfoo", "_R", "", "wasm-function[3]"}) {
    EXPECT_EQ(demangle(s), s);
    EXPECT_FALSE(is_mangled(s)) << s;
  }
}

}  // namespace
}  // namespace wzvm::profiler
