// Memory-profile test program (C++, libc++ without exceptions): operator new
// and delete in their plain, array, sized, aligned and nothrow forms. Each
// `new` calls malloc (or aligned_alloc) inside libc++; only the outermost
// call is counted, so each object counts once. Exact numbers are checked in
// tests/memory_profile_test.cc.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <new>
#include <vector>

struct Node {
  Node* next;
  int64_t value;
  int64_t pad;
};  // 24 bytes on wasm32
static_assert(sizeof(Node) == 24);

struct alignas(64) Big {
  char bytes[128];
};

void* volatile keep[64];
static volatile size_t huge = SIZE_MAX / 2;

// 30 nodes of 24 bytes; 10 deleted (sized delete): 20 (480 bytes) stay.
__attribute__((noinline)) void nodes() {
  for (int i = 0; i < 30; ++i) keep[i] = new Node{nullptr, i, 0};
  for (int i = 0; i < 10; ++i) delete static_cast<Node*>(keep[i]);
}

// new int[25] (100 bytes) four times, all deleted[].
__attribute__((noinline)) void arrays() {
  for (int i = 0; i < 4; ++i) {
    int* a = new int[25];
    keep[40] = a;
    delete[] a;
  }
}

// Over-aligned: operator new(size_t, align_val_t), twice, kept.
__attribute__((noinline)) void aligned() {
  keep[41] = new Big;
  keep[42] = new Big;
}

// nothrow new that fails: nothing counted.
__attribute__((noinline)) void failing() { keep[43] = new (std::nothrow) char[huge]; }

// A vector of 100 ints, grown by doubling (1, 2, 4, ..., 128 elements: 8
// allocations, 1020 bytes) and destroyed.
__attribute__((noinline)) void vec() {
  std::vector<int> v;
  for (int i = 0; i < 100; ++i) v.push_back(i);
  keep[44] = v.data();
}

int main() {
  nodes();
  arrays();
  aligned();
  failing();
  vec();
  std::printf("%d\n", keep[43] == nullptr);
  return 0;
}
