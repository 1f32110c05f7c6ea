// load_module: the whole pipeline from bytes to a runnable Module.

#include "vm/module.h"

namespace wzvm::vm {

Result<std::shared_ptr<const Module>> load_module(std::vector<uint8_t> bytes, const LoadOptions& options) {
  auto decoded = decode_module(std::move(bytes));
  if (!decoded) return decoded.error();
  std::unique_ptr<Module> module = std::move(decoded.value());
  if (Status s = validate_module(*module); !s) return s.error();
  if (Status s = compile_functions(*module, options); !s) return s.error();
  return std::shared_ptr<const Module>(std::move(module));
}

}  // namespace wzvm::vm
