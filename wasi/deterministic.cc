#include "wasi/deterministic.h"

#include "wasi/types.h"

namespace wzvm::wasi {

uint64_t Deterministic::next() {
  // SplitMix64: a Weyl sequence scrambled by two multiply-xorshift rounds.
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void Deterministic::random_bytes(uint8_t* out, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (pending_n_ == 0) {
      pending_ = next();
      pending_n_ = 8;
    }
    out[i] = static_cast<uint8_t>(pending_);
    pending_ >>= 8;
    --pending_n_;
  }
}

bool Deterministic::now(uint32_t id, uint64_t instructions, uint64_t& out) const {
  switch (id) {
    case clockid::realtime:
      out = kEpochNs + instructions + slept_;
      return true;
    case clockid::monotonic:
      out = instructions + slept_;
      return true;
    case clockid::process_cputime:
    case clockid::thread_cputime:
      out = instructions;
      return true;
  }
  return false;
}

void Deterministic::sleep_until(uint64_t deadline, uint64_t instructions) {
  uint64_t now = instructions + slept_;
  if (deadline > now) slept_ += deadline - now;
}

}  // namespace wzvm::wasi
