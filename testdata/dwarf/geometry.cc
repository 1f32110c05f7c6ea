// DWARF test program for C++ names (tests/symbolize_test.cc). The tests
// assert line numbers of this file worked out by hand: do not move the code
// in lines 1-40; add new code at the end.
//
// Built with clang-14 --target=wasm32-wasi -g -O2 -fno-exceptions against
// Debian's wasm32 libc++. A member function template instance, always
// inlined, checks that inlined frames get their qualified, demangled names.
#include <cstdio>
#include <cstdlib>

namespace geo {

template <typename T>
struct Vec {
  T x, y, z;
  __attribute__((always_inline)) T dot(const Vec& o) const {
    return x * o.x + y * o.y + z * o.z;  // line 17
  }
};

// Overloads: the demangled names must tell them apart.
__attribute__((noinline)) int norm2(const Vec<int>& v) {
  return v.dot(v);  // line 23: call of dot at column 12
}
__attribute__((noinline)) double norm2(const Vec<double>& v) {
  return v.dot(v);  // line 26
}

}  // namespace geo

int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 1000;
  long long total = 0;
  double dtotal = 0;
  for (int i = 0; i < n; ++i) {
    geo::Vec<int> v{i, i + 1, i + 2};
    geo::Vec<double> d{i * 0.5, i * 0.25, 1.0};
    total += geo::norm2(v);
    dtotal += geo::norm2(d);
  }
  std::printf("%lld %g\n", total, dtotal);
  return 0;
}
