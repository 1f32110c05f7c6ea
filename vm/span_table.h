#pragma once
// SpanTable: short sequences of 32-bit words -> a 32-bit id, for the
// profilers' per-event lookups (a CPython stack's words on every
// allocation, a call-tree node's children). Open addressing over one array of 16-byte slots, the
// sequences in one arena: a lookup costs a hash of the words, one slot and
// one arena compare, where std::unordered_map<std::string, ...> cost a
// bucket, a node and the string's own block (three cache misses; 2.6% of a
// memory-profiled CPython run), plus a heap block per entry to free at exit.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace wzvm::vm {

class SpanTable {
 public:
  SpanTable() : slots_(kInitialSlots) {}

  // The id stored for words[0, n), or nullptr.
  const uint32_t* find(const uint32_t* words, size_t n) const {
    const uint32_t h = hash(words, n);
    for (size_t i = h & mask();; i = (i + 1) & mask()) {
      const Slot& s = slots_[i];
      if (s.size == 0) return nullptr;
      if (s.hash == h && s.size == n + 1 && std::equal(words, words + n, &arena_[s.offset])) return &s.id;
    }
  }
  // Stores `id` for words[0, n), which find() did not have.
  void insert(const uint32_t* words, size_t n, uint32_t id) {
    if ((count_ + 1) * 2 > slots_.size()) grow();
    place(Slot{hash(words, n), static_cast<uint32_t>(arena_.size()), static_cast<uint32_t>(n + 1), id});
    arena_.insert(arena_.end(), words, words + n);
    ++count_;
  }
  size_t size() const { return count_; }
  // Which slot a sequence tries first (public for tests to make collisions).
  static uint32_t hash(const uint32_t* words, size_t n) {
    uint64_t h = n * 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < n; ++i) h = (h ^ words[i]) * 0xFF51AFD7ED558CCDull;
    return static_cast<uint32_t>(h >> 32 ^ h);
  }

 private:
  struct Slot {
    uint32_t hash = 0, offset = 0;
    uint32_t size = 0;  // words + 1; 0: empty
    uint32_t id = 0;
  };
  static constexpr size_t kInitialSlots = 1024;  // a power of two
  size_t mask() const { return slots_.size() - 1; }
  void place(const Slot& s) {
    size_t i = s.hash & mask();
    while (slots_[i].size) i = (i + 1) & mask();
    slots_[i] = s;
  }
  void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    for (const Slot& s : old)
      if (s.size) place(s);
  }
  std::vector<Slot> slots_;
  std::vector<uint32_t> arena_;
  size_t count_ = 0;
};

}  // namespace wzvm::vm
