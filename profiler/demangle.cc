#include "profiler/demangle.h"

#include <cstdlib>
#include <memory>
#include <string>

// libiberty's header is C and has no extern "C" of its own for every
// toolchain; cplus_demangle has C linkage.
extern "C" {
#include <libiberty/demangle.h>
}

namespace wzvm::profiler {
namespace {

// nullptr when `symbol` is not mangled. DMGL_AUTO tries Rust first (legacy
// Rust symbols are also valid Itanium names, and would otherwise keep their
// "::h0123456789abcdef" hash), then the Itanium C++ ABI.
std::unique_ptr<char, decltype(&std::free)> try_demangle(std::string_view symbol) {
  std::unique_ptr<char, decltype(&std::free)> none(nullptr, &std::free);
  // Every scheme we accept starts with "_Z" or "_R"; anything else (C names,
  // already-demangled names) is left alone without a call.
  if (symbol.size() < 3 || symbol[0] != '_' || (symbol[1] != 'Z' && symbol[1] != 'R')) return none;
  std::string z(symbol);  // NUL-terminated copy for the C API
  char* out = cplus_demangle(z.c_str(), DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO);
  return std::unique_ptr<char, decltype(&std::free)>(out, &std::free);
}

}  // namespace

std::string demangle(std::string_view symbol) {
  auto out = try_demangle(symbol);
  return out ? std::string(out.get()) : std::string(symbol);
}

bool is_mangled(std::string_view symbol) { return try_demangle(symbol) != nullptr; }

}  // namespace wzvm::profiler
