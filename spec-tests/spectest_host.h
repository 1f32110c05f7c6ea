#pragma once
// The `spectest` host module that the spec tests import from
// (https://github.com/WebAssembly/spec/blob/main/interpreter/host/spectest.ml).

#include <string>
#include <unordered_map>

#include "vm/result.h"
#include "vm/runtime.h"

namespace wzvm::spectest {

using ExportMap = std::unordered_map<std::string, vm::Extern>;

// Create the spectest functions, globals, table and memory in `store`.
// With `verbose`, the print functions write their arguments to stdout.
vm::Result<ExportMap> make_spectest_module(vm::Store& store, bool verbose);

}  // namespace wzvm::spectest
