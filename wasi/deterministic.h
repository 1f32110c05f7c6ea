#pragma once
// Deterministic runs (wasi::Config::deterministic, the CLI's --deterministic):
// what a guest can learn from outside becomes a function of its inputs, so
// the same module, arguments, environment, files and seed execute the same
// instructions on every run and every machine. The two sources of change a
// WASI guest reads without asking for them are replaced here:
//
// - randomness: random_get returns one stream of SplitMix64 (Steele, Lea and
//   Flood, "Fast splittable pseudorandom number generators", 2014; Java's
//   SplittableRandom) seeded with the seed, each 64-bit output's 8 bytes
//   little-endian, one byte after the other across calls: the bytes depend
//   only on the seed and on how many bytes were asked before, not on how the
//   requests were cut.
// - time: every clock reads a virtual clock that advances one nanosecond per
//   wasm instruction the guest executed (counted exactly, as --fuel counts:
//   vm::Profiling::fuel_used) plus the time it slept in poll_oneoff, which
//   is skipped instead of waited. Realtime starts at kEpochNs; monotonic at
//   0; the CPU-time clocks count instructions only (sleeping uses no CPU).
//   Every clock's resolution is 1 ns.
//
// The rest of what the guest sees is already its input (arguments, --env,
// files' contents and metadata, stdin) or is made so in the handlers
// (fd_readdir lists entries sorted by name, poll_oneoff waits for every fd it
// asks about instead of racing them against a timeout).

#include <cstddef>
#include <cstdint>

namespace wzvm::wasi {

class Deterministic {
 public:
  // 2000-01-01T00:00:00Z: a fixed realtime start, far enough from 1970 that
  // programs treating small times as "unset" do not.
  static constexpr uint64_t kEpochNs = 946684800ull * 1000000000ull;

  explicit Deterministic(uint64_t seed) : state_(seed) {}

  void random_bytes(uint8_t* out, size_t n);

  // The clock `id` (wasi clockid) after `instructions` executed
  // instructions; false for an unknown clock.
  bool now(uint32_t id, uint64_t instructions, uint64_t& out) const;
  // poll_oneoff: the guest sleeps until the monotonic clock reads `deadline`
  // (nothing happens if it already does).
  void sleep_until(uint64_t deadline, uint64_t instructions);

 private:
  uint64_t next();
  uint64_t state_;
  uint64_t pending_ = 0;    // bytes of the last output not handed out yet
  unsigned pending_n_ = 0;  // how many
  uint64_t slept_ = 0;      // ns skipped by poll_oneoff
};

}  // namespace wzvm::wasi
