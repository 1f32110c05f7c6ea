#pragma once
// The internal code that vm/compile.cc produces and vm/interp.cc runs.
//
// A function's code is a flat array of 32-bit words. Each operation is an op
// word (an IOp) followed by its operands. Operands name frame slots directly
// (register-style three-address code): the value stack of a wasm function is
// laid out at fixed frame slots after its locals, so lowering resolves every
// stack position to a slot and `local.get` costs nothing. Branch targets are
// word offsets relative to the op word; stack heights are resolved, so a
// branch is a jump plus, when needed, an explicit copy of the carried values.
// See docs/RATIONALE.md ("The internal code").

#include <cstdint>
#include <vector>

namespace wzvm::vm {

enum class IOp : uint32_t {
#define WZVM_OP(Name, ...) Name,
#include "vm/opcodes.def"
#undef WZVM_OP
#define WZVM_IOP(Name, ...) Name,
#include "vm/internal_ops.def"
#undef WZVM_IOP
  Count
};

const char* iop_name(IOp op);

struct CompiledFunc {
  std::vector<uint32_t> code;
  uint32_t param_slots = 0;   // slots of the parameters (fp[0..param_slots))
  uint32_t local_slots = 0;   // params + declared locals; fp[param_slots..local_slots) zeroed on entry
  uint32_t frame_slots = 0;   // local_slots + the deepest value stack
  uint32_t result_slots = 0;
  // Word offset -> byte offset in the module of the wasm instruction that
  // produced it, as sorted pairs; used by backtraces and profiles.
  std::vector<std::pair<uint32_t, uint32_t>> source_map;
};

}  // namespace wzvm::vm
