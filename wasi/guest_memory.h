#pragma once
// Bounds-checked access to the calling instance's memory 0, for the WASI host
// functions. Every guest pointer and length goes through `check` before the
// host touches a byte: [ptr, ptr + len) is compared against the memory's
// current size in 64-bit arithmetic, so no sum can wrap. A failed check is
// WASI's EFAULT, never a host read or write out of bounds.
//
// The size is read once per call: a host function never runs guest code, so
// memory cannot grow (and never moves: MemInst reserves its address range)
// while it runs.

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "vm/runtime.h"

namespace wzvm::wasi {

class GuestMemory {
 public:
  explicit GuestMemory(vm::MemInst* mem)
      : base_(mem ? mem->data : nullptr), size_(mem ? mem->current_size() : 0) {}
  // A plain buffer as the guest's memory: tests call the host functions
  // directly with one.
  GuestMemory(uint8_t* base, uint64_t size) : base_(base), size_(size) {}

  bool check(uint64_t ptr, uint64_t len) const {
    return base_ != nullptr && ptr <= size_ && len <= size_ - ptr;
  }
  // Only after check(ptr, len) succeeded.
  uint8_t* raw(uint64_t ptr) const { return base_ + ptr; }

  // Little-endian scalar access (wasm memory is little-endian, and so is every
  // host wzvm supports); memcpy because guest pointers need not be aligned.
  template <class T>
  bool load(uint64_t ptr, T& out) const {
    static_assert(std::is_trivially_copyable_v<T>);
    if (!check(ptr, sizeof(T))) return false;
    std::memcpy(&out, base_ + ptr, sizeof(T));
    return true;
  }
  template <class T>
  bool store(uint64_t ptr, T value) const {
    static_assert(std::is_trivially_copyable_v<T>);
    if (!check(ptr, sizeof(T))) return false;
    std::memcpy(base_ + ptr, &value, sizeof(T));
    return true;
  }
  // A guest string (ptr, len) copied out; false when out of bounds.
  bool string(uint64_t ptr, uint64_t len, std::string& out) const {
    if (!check(ptr, len)) return false;
    out.assign(reinterpret_cast<const char*>(base_ + ptr), len);
    return true;
  }

 private:
  uint8_t* base_;
  uint64_t size_;
};

}  // namespace wzvm::wasi
