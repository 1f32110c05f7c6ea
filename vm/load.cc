// load_module: the whole pipeline from bytes to a runnable Module.

#include "vm/module.h"

namespace wzvm::vm {

namespace {
constexpr FeatureInfo kFeatures[] = {
#define WZVM_FEATURE(Id, Name, Alias, Status, DefaultOn) \
  {Feature::Id, Name, Alias, #Status[0] == 'D', DefaultOn},
#include "vm/features.def"
#undef WZVM_FEATURE
};
}  // namespace

std::span<const FeatureInfo> feature_table() { return kFeatures; }

const FeatureInfo* find_feature(std::string_view name) {
  for (const FeatureInfo& f : kFeatures)
    if (name == f.name || (*f.alias && name == f.alias)) return &f;
  return nullptr;
}

uint32_t Features::default_bits() {
  uint32_t b = 0;
  for (const FeatureInfo& f : kFeatures)
    if (f.default_on && f.implemented) b |= 1u << static_cast<unsigned>(f.id);
  return b;
}

Features Features::all() {
  Features all = wasm2();
  for (const FeatureInfo& f : kFeatures)
    if (f.implemented) all.set(f.id, true);
  return all;
}

Result<std::shared_ptr<const Module>> load_module(std::vector<uint8_t> bytes, const LoadOptions& options) {
  auto decoded = decode_module(std::move(bytes), options.features);
  if (!decoded) return decoded.error();
  std::unique_ptr<Module> module = std::move(decoded.value());
  if (Status s = validate_module(*module); !s) return s.error();
  if (Status s = compile_functions(*module, options); !s) return s.error();
  module->needs_counting = options.count_instructions && !options.fuel;
  return std::shared_ptr<const Module>(std::move(module));
}

}  // namespace wzvm::vm
