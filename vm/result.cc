#include "vm/result.h"

#include <cstdio>

namespace wzvm::vm {

std::string Error::to_string() const {
  std::string s = message;
  std::string where;
  auto add = [&](const std::string& part) {
    where += where.empty() ? "" : ", ";
    where += part;
  };
  if (!section.empty()) add("section " + section);
  if (function >= 0) add("function " + std::to_string(function));
  if (offset >= 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "offset 0x%llx", static_cast<unsigned long long>(offset));
    add(buf);
  }
  if (!where.empty()) s += " (" + where + ")";
  return s;
}

}  // namespace wzvm::vm
