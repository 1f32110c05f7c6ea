#pragma once
// Modules written as raw bytes in tests: the encodings of the binary format
// that such modules are assembled from, so that sizes are computed, not typed.
// Tests bring them in with `using namespace wzvm::wasm_bytes;`.

#include <cstdint>
#include <string_view>
#include <vector>

namespace wzvm::wasm_bytes {

using Bytes = std::vector<uint8_t>;

inline Bytes operator+(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

inline Bytes uleb(uint64_t v) {
  Bytes out;
  do {
    uint8_t byte = v & 0x7f;
    v >>= 7;
    if (v) byte |= 0x80;
    out.push_back(byte);
  } while (v);
  return out;
}

// A name: length and raw bytes (not checked, so tests can write bad UTF-8).
inline Bytes str(std::string_view s) { return uleb(s.size()) + Bytes(s.begin(), s.end()); }

// The magic number and version 1.
inline Bytes header() { return {0x00, 0x61, 0x73, 0x6D, 0x01, 0x00, 0x00, 0x00}; }

inline Bytes section(uint8_t id, const Bytes& payload) { return Bytes{id} + uleb(payload.size()) + payload; }

// A code entry: size, then the body (locals + instructions).
inline Bytes body(const Bytes& b) { return uleb(b.size()) + b; }

}  // namespace wzvm::wasm_bytes
