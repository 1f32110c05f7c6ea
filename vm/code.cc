// The names of the internal ops (vm/code.h), for messages and tools.

#include "vm/code.h"

#include <cstddef>

namespace wzvm::vm {

const char* iop_name(IOp op) {
  static const char* const names[] = {
#define WZVM_IOP_ENTRY(Name, text, Where) text,
#include "vm/iops.inc"
#undef WZVM_IOP_ENTRY
  };
  static_assert(sizeof(names) / sizeof(names[0]) == static_cast<size_t>(IOp::Count));
  auto i = static_cast<size_t>(op);
  return i < sizeof(names) / sizeof(names[0]) ? names[i] : "?";
}

}  // namespace wzvm::vm
