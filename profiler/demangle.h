#pragma once
// Symbol demangling for profiles: C++ (Itanium ABI, "_Z...") and Rust (legacy
// "_ZN...17h<hash>E" and v0 "_R..."), by libiberty's demangler, the one GNU
// binutils (nm -C, addr2line -C) and GDB use.

#include <string>
#include <string_view>

namespace wzvm::profiler {

// The demangled form of `symbol`, or `symbol` unchanged when it is not a
// mangled name (C functions, "main", names from a name section that wasm-ld
// already demangled). C++ names keep their parameter lists, so overloads stay
// apart ("geo::norm2(geo::Vec<int> const&)"); Rust names drop the legacy hash
// and the v0 crate disambiguator, as rustfilt does ("hashing::fnv::hash").
std::string demangle(std::string_view symbol);

// True if demangle() would change `symbol`.
bool is_mangled(std::string_view symbol);

}  // namespace wzvm::profiler
