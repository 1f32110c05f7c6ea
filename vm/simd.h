#pragma once
// WebAssembly SIMD (v128) semantics, exactly as the spec defines them
// (https://webassembly.github.io/spec/core/exec/instructions.html#vector-instructions,
// lane-wise operators from https://webassembly.github.io/spec/core/exec/numerics.html).
//
// The functors here are named in the last column of the 0xFD rows of
// vm/opcodes.def and have the interface of vm/numerics.h (kTraps, op<R, A>),
// with R and A one of v128_t, uint32_t, uint64_t, float, double; so the
// interpreter's generic Unary/Binary handlers run them. Most are templates
// over a lane-vector type whose signedness picks the operation: VLt<i8x16> is
// i8x16.lt_s, VLt<u8x16> is i8x16.lt_u, VShr<i32x4> is i32x4.shr_s.
//
// Implementation: GCC/Clang vector extensions (`vector_size(16)`), which
// compile to SSE2 on x86-64 (the baseline: no -march flag needed) and to NEON
// on AArch64. Where SSE2 has an instruction with exactly the spec's meaning
// that the vector extensions cannot express (saturating add, rounding average,
// pack with saturation, movemask, pmaddwd, sqrt) it is used directly; SSSE3
// and SSE4.1 instructions only when the build enables them (__SSSE3__,
// __SSE4_1__). Every intrinsic path has a portable twin; define
// WZVM_SIMD_PORTABLE to build (and test) the portable code on x86-64.
//
// Lane order is little-endian (lane 0 in the lowest bytes), which is what the
// vector types give on a little-endian host. Float NaN results: where the
// spec allows any NaN (nan:arithmetic / nan:canonical), the hardware's quiet
// NaN or the canonical NaN is returned; operations the spec defines on bits
// (abs, neg) keep payloads.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#include "vm/numerics.h"

#if defined(__SSE2__) && !defined(WZVM_SIMD_PORTABLE)
#include <emmintrin.h>
#include <tmmintrin.h>
#define WZVM_SIMD_SSE2 1
#if defined(__SSSE3__)
#define WZVM_SIMD_SSSE3 1
#elif defined(__x86_64__)
// Byte shuffles (i8x16.shuffle, i8x16.swizzle) are a 16-step loop without
// SSSE3's pshufb, several times the cost of any other vector op; clang emits
// shuffles for every zero-extension and lane rearrangement. So baseline
// builds call a pshufb version when the CPU has SSSE3 (every x86-64 CPU since
// 2006), decided once: function multiversioning for these two only.
#define WZVM_SIMD_SSSE3_AT_RUNTIME 1
#endif
#if defined(__SSE4_1__)
#include <smmintrin.h>
#define WZVM_SIMD_SSE41 1
#endif
#endif

namespace wzvm::vm {

// Lane vectors. Integer arithmetic is done on the unsigned types (wrap-around
// is defined); the signed types select signed comparisons and shifts.
typedef int8_t i8x16 __attribute__((vector_size(16)));
typedef uint8_t u8x16 __attribute__((vector_size(16)));
typedef int16_t i16x8 __attribute__((vector_size(16)));
typedef uint16_t u16x8 __attribute__((vector_size(16)));
typedef int32_t i32x4 __attribute__((vector_size(16)));
typedef uint32_t u32x4 __attribute__((vector_size(16)));
typedef int64_t i64x2 __attribute__((vector_size(16)));
typedef uint64_t u64x2 __attribute__((vector_size(16)));
typedef float f32x4 __attribute__((vector_size(16)));
typedef double f64x2 __attribute__((vector_size(16)));

// The C type of a v128 value in slots and memory (two 8-byte slots).
using v128_t = u64x2;

// Memory access types of the v128 loads that are not a plain 16-byte load
// (the Extra column of their Load rows). sizeof is the access size, which is
// also the natural alignment the validator checks; the conversion to v128_t
// is the instruction's meaning.
//   LoadExtend<T>  v128.loadNxM_s/u: 8 bytes of T lanes, each widened to 2x
//   LoadSplat<T>   v128.loadN_splat: one T in every lane
//   LoadZero<T>    v128.loadN_zero: T in lane 0, zeros above
template <class T>
struct LoadExtend;
template <class T>
struct LoadSplat;
template <class T>
struct LoadZero;

namespace simd {

#define WZVM_SIMD_INLINE __attribute__((always_inline)) inline

// Reinterpret between 16-byte vector types (a bit cast).
template <class To, class From>
WZVM_SIMD_INLINE To vcast(From v) {
  static_assert(sizeof(To) == 16 && sizeof(From) == 16);
  return (To)v;
}

template <class V>
using Lane = std::remove_cvref_t<decltype(std::declval<V>()[0])>;
template <class V>
inline constexpr int kLanes = 16 / sizeof(Lane<V>);

template <class T>
struct VecOf;
template <>
struct VecOf<int8_t> {
  using type = i8x16;
};
template <>
struct VecOf<uint8_t> {
  using type = u8x16;
};
template <>
struct VecOf<int16_t> {
  using type = i16x8;
};
template <>
struct VecOf<uint16_t> {
  using type = u16x8;
};
template <>
struct VecOf<int32_t> {
  using type = i32x4;
};
template <>
struct VecOf<uint32_t> {
  using type = u32x4;
};
template <>
struct VecOf<int64_t> {
  using type = i64x2;
};
template <>
struct VecOf<uint64_t> {
  using type = u64x2;
};
template <>
struct VecOf<float> {
  using type = f32x4;
};
template <>
struct VecOf<double> {
  using type = f64x2;
};
template <class T>
using Vec = typename VecOf<T>::type;

// 8-byte vectors: one half of a v128 (extends, narrows, low-lane conversions).
typedef int8_t i8x8 __attribute__((vector_size(8)));
typedef uint8_t u8x8 __attribute__((vector_size(8)));
typedef int16_t i16x4 __attribute__((vector_size(8)));
typedef uint16_t u16x4 __attribute__((vector_size(8)));
typedef int32_t i32x2 __attribute__((vector_size(8)));
typedef uint32_t u32x2 __attribute__((vector_size(8)));
typedef float f32x2 __attribute__((vector_size(8)));
template <class T>
struct HalfOf;
template <>
struct HalfOf<int8_t> {
  using type = i8x8;
};
template <>
struct HalfOf<uint8_t> {
  using type = u8x8;
};
template <>
struct HalfOf<int16_t> {
  using type = i16x4;
};
template <>
struct HalfOf<uint16_t> {
  using type = u16x4;
};
template <>
struct HalfOf<int32_t> {
  using type = i32x2;
};
template <>
struct HalfOf<uint32_t> {
  using type = u32x2;
};
template <>
struct HalfOf<float> {
  using type = f32x2;
};
template <class T>
using Half = typename HalfOf<T>::type;

// Integer types of the same width as a lane.
template <class T>
using UInt = std::conditional_t<
    sizeof(T) == 1, uint8_t,
    std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
template <class T>
using SInt = std::make_signed_t<UInt<T>>;
template <class T>
struct WiderOf;
template <>
struct WiderOf<int8_t> {
  using type = int16_t;
};
template <>
struct WiderOf<uint8_t> {
  using type = uint16_t;
};
template <>
struct WiderOf<int16_t> {
  using type = int32_t;
};
template <>
struct WiderOf<uint16_t> {
  using type = uint32_t;
};
template <>
struct WiderOf<int32_t> {
  using type = int64_t;
};
template <>
struct WiderOf<uint32_t> {
  using type = uint64_t;
};
template <class T>
struct NarrowerOf;
template <>
struct NarrowerOf<int16_t> {
  using type = int8_t;
};
template <>
struct NarrowerOf<uint16_t> {
  using type = uint8_t;
};
template <>
struct NarrowerOf<int32_t> {
  using type = int16_t;
};
template <>
struct NarrowerOf<uint32_t> {
  using type = uint16_t;
};
template <>
struct NarrowerOf<int64_t> {
  using type = int32_t;
};
template <>
struct NarrowerOf<uint64_t> {
  using type = uint32_t;
};

template <class V>
using UVec = Vec<UInt<Lane<V>>>;
template <class V>
using SVec = Vec<SInt<Lane<V>>>;

// Lane-wise select: mask lanes are all ones or all zeros (comparison results).
template <class V, class M>
WZVM_SIMD_INLINE V select(M mask, V a, V b) {
  auto m = vcast<u64x2>(mask);
  return vcast<V>((m & vcast<u64x2>(a)) | (~m & vcast<u64x2>(b)));
}
// Every lane x. Floats are broadcast as bits: 0.0 + x would turn -0 into +0
// and quiet a signaling NaN.
template <class V>
WZVM_SIMD_INLINE V splat(Lane<V> x) {
  using T = UInt<Lane<V>>;
  T bits;
  std::memcpy(&bits, &x, sizeof bits);
  return vcast<V>(Vec<T>{} + bits);
}

// The halves of a v128 as 8-byte vectors.
template <class H>
WZVM_SIMD_INLINE H low_half(v128_t v) {
  H h;
  std::memcpy(&h, &v, 8);
  return h;
}
template <class H>
WZVM_SIMD_INLINE H high_half(v128_t v) {
  H h;
  std::memcpy(&h, reinterpret_cast<const uint8_t*>(&v) + 8, 8);
  return h;
}
template <class L, class H>
WZVM_SIMD_INLINE v128_t join(L lo, H hi) {
  static_assert(sizeof(L) == 8 && sizeof(H) == 8);
  v128_t r;
  std::memcpy(&r, &lo, 8);
  std::memcpy(reinterpret_cast<uint8_t*>(&r) + 8, &hi, 8);
  return r;
}

#if WZVM_SIMD_SSE2
WZVM_SIMD_INLINE __m128i m(v128_t v) { return vcast<__m128i>(v); }
WZVM_SIMD_INLINE v128_t v(__m128i x) { return vcast<v128_t>(x); }
#endif

// Float sign bit and the canonical NaN of lane type V's floats.
template <class V>
inline constexpr UInt<Lane<V>> kSignBit = UInt<Lane<V>>(1) << (8 * sizeof(Lane<V>) - 1);
template <class V>
inline constexpr UInt<Lane<V>> kQuietBit = UInt<Lane<V>>(1) << (std::numeric_limits<Lane<V>>::digits - 2);
template <class V>
inline constexpr UInt<Lane<V>> kCanonicalNaN = (UInt<Lane<V>>(~UInt<Lane<V>>(0)) >> 1) & ~((kQuietBit<V>)-1);

template <class V>
WZVM_SIMD_INLINE V copysign(V mag, V sign) {
  using U = UVec<V>;
  constexpr auto s = kSignBit<V>;
  return vcast<V>((vcast<U>(mag) & ~s) | (vcast<U>(sign) & s));
}
template <class V>
WZVM_SIMD_INLINE V fabs(V x) {
  return vcast<V>(vcast<UVec<V>>(x) & ~kSignBit<V>);
}
// NaN lanes get their quiet bit set (nan:arithmetic); others pass unchanged.
template <class V>
WZVM_SIMD_INLINE V quiet(V x) {
  using U = UVec<V>;
  return vcast<V>(vcast<U>(x) | (vcast<U>(x != x) & kQuietBit<V>));
}

// pshufb zeroes lanes whose index has bit 7 set and otherwise uses the low
// four bits. Adding 0x70 with unsigned saturation keeps 0..15 in the low
// bits with bit 7 clear and sends 16..255 to bit 7.
#if WZVM_SIMD_SSSE3 || WZVM_SIMD_SSSE3_AT_RUNTIME
#if WZVM_SIMD_SSSE3
#define WZVM_SIMD_PSHUFB_FN WZVM_SIMD_INLINE
#else
#define WZVM_SIMD_PSHUFB_FN __attribute__((target("ssse3"), noinline)) inline
#endif
WZVM_SIMD_PSHUFB_FN v128_t swizzle_pshufb(v128_t a, v128_t idx) {
  return v(_mm_shuffle_epi8(m(a), _mm_adds_epu8(m(idx), _mm_set1_epi8(0x70))));
}
// Indices 16..31 pick from b: XOR 0x10 maps them to 0..15 and 0..15 to
// 16..31, which the swizzle then zeroes; the two halves are OR-ed.
WZVM_SIMD_PSHUFB_FN v128_t shuffle_pshufb(v128_t a, v128_t b, v128_t sel) {
  __m128i s = m(sel), k = _mm_set1_epi8(0x70);
  __m128i from_a = _mm_shuffle_epi8(m(a), _mm_adds_epu8(s, k));
  __m128i from_b = _mm_shuffle_epi8(m(b), _mm_adds_epu8(_mm_xor_si128(s, _mm_set1_epi8(0x10)), k));
  return v(_mm_or_si128(from_a, from_b));
}
#undef WZVM_SIMD_PSHUFB_FN
#endif
#if WZVM_SIMD_SSSE3_AT_RUNTIME
inline bool cpu_has_ssse3() {
  static const bool has = __builtin_cpu_supports("ssse3");
  return has;
}
#endif

// i8x16.swizzle: byte i of the result is byte idx[i] of a, or 0 if idx[i] >= 16.
WZVM_SIMD_INLINE v128_t swizzle(v128_t a, v128_t idx) {
#if WZVM_SIMD_SSSE3
  return swizzle_pshufb(a, idx);
#else
#if WZVM_SIMD_SSSE3_AT_RUNTIME
  if (__builtin_expect(cpu_has_ssse3(), 1)) return swizzle_pshufb(a, idx);
#endif
  u8x16 x = vcast<u8x16>(a), s = vcast<u8x16>(idx), r;
  for (int i = 0; i < 16; ++i) r[i] = s[i] < 16 ? x[s[i] & 15] : 0;
  return vcast<v128_t>(r);
#endif
}
// i8x16.shuffle: byte i of the result is byte sel[i] (< 32) of a:b.
WZVM_SIMD_INLINE v128_t shuffle(v128_t a, v128_t b, v128_t sel) {
#if WZVM_SIMD_SSSE3
  return shuffle_pshufb(a, b, sel);
#else
#if WZVM_SIMD_SSSE3_AT_RUNTIME
  if (__builtin_expect(cpu_has_ssse3(), 1)) return shuffle_pshufb(a, b, sel);
#endif
  uint8_t src[32], s[16], out[16];
  std::memcpy(src, &a, 16);
  std::memcpy(src + 16, &b, 16);
  std::memcpy(s, &sel, 16);
  for (int i = 0; i < 16; ++i) out[i] = src[s[i] & 31];
  v128_t r;
  std::memcpy(&r, out, 16);
  return r;
#endif
}

}  // namespace simd

template <class T>
struct LoadExtend {
  T lanes[8 / sizeof(T)];
  explicit operator v128_t() const {
    simd::Half<T> h;
    std::memcpy(&h, lanes, 8);
    return simd::vcast<v128_t>(__builtin_convertvector(h, simd::Vec<typename simd::WiderOf<T>::type>));
  }
};
template <class T>
struct LoadSplat {
  T value;
  explicit operator v128_t() const { return simd::vcast<v128_t>(simd::splat<simd::Vec<T>>(value)); }
};
template <class T>
struct LoadZero {
  T value;
  explicit operator v128_t() const {
    simd::Vec<T> r{};
    r[0] = value;
    return simd::vcast<v128_t>(r);
  }
};

namespace num {

using simd::vcast;

// ---------------------------------------------------------------------------
// Bitwise (v128.not/and/andnot/or/xor). v128.bitselect is a Special row (three
// operands), implemented by simd::bitselect below.

struct VNot {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a) {
    return ~a;
  }
};
struct VAnd {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a, A b) {
    return a & b;
  }
};
struct VAndNot {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a, A b) {
    return a & ~b;
  }
};
struct VOr {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a, A b) {
    return a | b;
  }
};
struct VXor {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a, A b) {
    return a ^ b;
  }
};

// v128 -> i32 tests.
struct AnyTrue {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a) {
    return R((a[0] | a[1]) != 0);
  }
};
template <class V>
struct AllTrue {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a) {
    v128_t zero_lanes = vcast<v128_t>(vcast<V>(a) == V{});
    return R((zero_lanes[0] | zero_lanes[1]) == 0);
  }
};
// Bit i of the result is the sign bit of lane i (V signed).
template <class V>
struct Bitmask {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a) {
#if WZVM_SIMD_SSE2
    if constexpr (sizeof(simd::Lane<V>) == 1) return R(_mm_movemask_epi8(simd::m(a)));
    if constexpr (sizeof(simd::Lane<V>) == 2)
      return R(_mm_movemask_epi8(_mm_packs_epi16(simd::m(a), _mm_setzero_si128())));  // packs keeps the sign
    if constexpr (sizeof(simd::Lane<V>) == 4) return R(_mm_movemask_ps(_mm_castsi128_ps(simd::m(a))));
    if constexpr (sizeof(simd::Lane<V>) == 8) return R(_mm_movemask_pd(_mm_castsi128_pd(simd::m(a))));
#endif
    V x = vcast<V>(a);
    R r = 0;
    for (int i = 0; i < simd::kLanes<V>; ++i) r |= R(x[i] < 0) << i;
    return r;
  }
};

// ---------------------------------------------------------------------------
// Lane-wise integer and float arithmetic. V is the lane vector type
// (unsigned for integers: wrap-around; f32x4/f64x2 for floats: IEEE with the
// hardware's NaN, which is nan:arithmetic as the spec allows).

template <class V>
struct VAdd {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a, A b) {
    return vcast<R>(vcast<V>(a) + vcast<V>(b));
  }
};
template <class V>
struct VSub {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a, A b) {
    return vcast<R>(vcast<V>(a) - vcast<V>(b));
  }
};
template <class V>
struct VMul {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a, A b) {
    return vcast<R>(vcast<V>(a) * vcast<V>(b));
  }
};
template <class V>
struct VDiv {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a, A b) {
    return vcast<R>(vcast<V>(a) / vcast<V>(b));
  }
};
template <class V>
struct VNeg {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a) {
    return vcast<R>(V{} - vcast<V>(a));
  }
};
// V signed; abs(INT_MIN) wraps to INT_MIN, as in the spec.
template <class V>
struct VAbs {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a) {
    using U = simd::UVec<V>;
    U x = vcast<U>(a);
    return vcast<R>(simd::select(vcast<V>(a) < 0, U{} - x, x));
  }
};

// Comparisons: all-ones lanes for true. The signedness of V picks _s/_u;
// float compares are IEEE (false on NaN, except ne).
template <class V>
struct VEq {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a, A b) {
    return vcast<R>(vcast<V>(a) == vcast<V>(b));
  }
};
template <class V>
struct VNe {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a, A b) {
    return vcast<R>(vcast<V>(a) != vcast<V>(b));
  }
};
template <class V>
struct VLt {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a, A b) {
    return vcast<R>(vcast<V>(a) < vcast<V>(b));
  }
};
template <class V>
struct VGt {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a, A b) {
    return vcast<R>(vcast<V>(a) > vcast<V>(b));
  }
};
template <class V>
struct VLe {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a, A b) {
    return vcast<R>(vcast<V>(a) <= vcast<V>(b));
  }
};
template <class V>
struct VGe {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a, A b) {
    return vcast<R>(vcast<V>(a) >= vcast<V>(b));
  }
};

// Integer min/max (V's signedness picks _s/_u).
template <class V>
struct VMin {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a, A b) {
    V x = vcast<V>(a), y = vcast<V>(b);
    return vcast<R>(simd::select(x < y, x, y));
  }
};
template <class V>
struct VMax {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a, A b) {
    V x = vcast<V>(a), y = vcast<V>(b);
    return vcast<R>(simd::select(x > y, x, y));
  }
};
// avgr_u: (a + b + 1) / 2 without overflow; SSE2's pavgb/pavgw are exactly this.
template <class V>
struct AvgrU {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a, A b) {
#if WZVM_SIMD_SSE2
    if constexpr (sizeof(simd::Lane<V>) == 1) return simd::v(_mm_avg_epu8(simd::m(a), simd::m(b)));
    else return simd::v(_mm_avg_epu16(simd::m(a), simd::m(b)));
#else
    V x = vcast<V>(a), y = vcast<V>(b);
    return vcast<R>((x | y) - ((x ^ y) >> 1));
#endif
  }
};

// Saturating add/sub (V's signedness picks _s/_u); SSE2 has all four shapes.
template <class V>
struct AddSat {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a, A b) {
    using L = simd::Lane<V>;
#if WZVM_SIMD_SSE2
    if constexpr (std::is_same_v<L, int8_t>) return simd::v(_mm_adds_epi8(simd::m(a), simd::m(b)));
    if constexpr (std::is_same_v<L, uint8_t>) return simd::v(_mm_adds_epu8(simd::m(a), simd::m(b)));
    if constexpr (std::is_same_v<L, int16_t>) return simd::v(_mm_adds_epi16(simd::m(a), simd::m(b)));
    if constexpr (std::is_same_v<L, uint16_t>) return simd::v(_mm_adds_epu16(simd::m(a), simd::m(b)));
#endif
    using U = simd::UVec<V>;
    U x = vcast<U>(a), y = vcast<U>(b), r = x + y;
    if constexpr (std::is_unsigned_v<L>) {
      return vcast<R>(r | vcast<U>(r < x));  // carry: saturate to all ones
    } else {
      using S = simd::SVec<V>;
      S overflow = vcast<S>((x ^ r) & (y ^ r)) < 0;  // both operands' sign differs from the result's
      U sat = vcast<U>(vcast<S>(x) >> (8 * sizeof(L) - 1)) ^ U(simd::splat<U>(std::numeric_limits<L>::max()));
      return vcast<R>(simd::select(overflow, sat, r));
    }
  }
};
template <class V>
struct SubSat {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a, A b) {
    using L = simd::Lane<V>;
#if WZVM_SIMD_SSE2
    if constexpr (std::is_same_v<L, int8_t>) return simd::v(_mm_subs_epi8(simd::m(a), simd::m(b)));
    if constexpr (std::is_same_v<L, uint8_t>) return simd::v(_mm_subs_epu8(simd::m(a), simd::m(b)));
    if constexpr (std::is_same_v<L, int16_t>) return simd::v(_mm_subs_epi16(simd::m(a), simd::m(b)));
    if constexpr (std::is_same_v<L, uint16_t>) return simd::v(_mm_subs_epu16(simd::m(a), simd::m(b)));
#endif
    using U = simd::UVec<V>;
    U x = vcast<U>(a), y = vcast<U>(b), r = x - y;
    if constexpr (std::is_unsigned_v<L>) {
      return vcast<R>(r & vcast<U>(x >= y));  // borrow: saturate to 0
    } else {
      using S = simd::SVec<V>;
      S overflow =
          vcast<S>((x ^ y) & (x ^ r)) < 0;  // operands' signs differ and the result's differs from x's
      U sat = vcast<U>(vcast<S>(x) >> (8 * sizeof(L) - 1)) ^ U(simd::splat<U>(std::numeric_limits<L>::max()));
      return vcast<R>(simd::select(overflow, sat, r));
    }
  }
};

// Shifts: v128 x i32 -> v128, the count taken modulo the lane width. V's
// signedness picks shr_s/shr_u.
template <class V>
struct VShl {
  static constexpr bool kTraps = false;
  template <class R, class A, class B>
  WZVM_SIMD_INLINE static R op(A a, B n) {
    return vcast<R>(vcast<V>(a) << static_cast<int>(n & (8 * sizeof(simd::Lane<V>) - 1)));
  }
};
template <class V>
struct VShr {
  static constexpr bool kTraps = false;
  template <class R, class A, class B>
  WZVM_SIMD_INLINE static R op(A a, B n) {
    return vcast<R>(vcast<V>(a) >> static_cast<int>(n & (8 * sizeof(simd::Lane<V>) - 1)));
  }
};

// i8x16.popcnt (the classic SWAR count, on all 16 bytes at once).
struct VPopcnt {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a) {
    u8x16 x = vcast<u8x16>(a);
    x = x - ((x >> 1) & 0x55);
    x = (x & 0x33) + ((x >> 2) & 0x33);
    return vcast<R>((x + (x >> 4)) & 0x0F);
  }
};

// ---------------------------------------------------------------------------
// Widening and narrowing. V is the result's lane vector; the operand lanes
// are half as wide with the same signedness (narrow: twice as wide, signed).

template <class V>
struct ExtendLow {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a) {
    using N = typename simd::NarrowerOf<simd::Lane<V>>::type;
    return vcast<R>(__builtin_convertvector(simd::low_half<simd::Half<N>>(a), V));
  }
};
template <class V>
struct ExtendHigh {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a) {
    using N = typename simd::NarrowerOf<simd::Lane<V>>::type;
    return vcast<R>(__builtin_convertvector(simd::high_half<simd::Half<N>>(a), V));
  }
};
// Products of extended lanes fit the wide lane, so there is no overflow.
template <class V>
struct ExtMulLow {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a, A b) {
    using U = simd::UVec<V>;
    return vcast<R>(vcast<U>(ExtendLow<V>::template op<v128_t, A>(a)) *
                    vcast<U>(ExtendLow<V>::template op<v128_t, A>(b)));
  }
};
template <class V>
struct ExtMulHigh {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a, A b) {
    using U = simd::UVec<V>;
    return vcast<R>(vcast<U>(ExtendHigh<V>::template op<v128_t, A>(a)) *
                    vcast<U>(ExtendHigh<V>::template op<v128_t, A>(b)));
  }
};
// Adjacent pairs: in a wide lane, the even narrow lane is the low half and
// the odd one the high half, so shifts extract both (arithmetic for _s).
template <class V>
struct ExtAddPairwise {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a) {
    constexpr int kHalf = 4 * sizeof(simd::Lane<V>);
    V w = vcast<V>(a);
    V even = (w << kHalf) >> kHalf, odd = w >> kHalf;
    using U = simd::UVec<V>;
    return vcast<R>(vcast<U>(even) + vcast<U>(odd));
  }
};
// i32x4.dot_i16x8_s: pairwise products summed; only -32768^2 * 2 overflows,
// and wraps (pmaddwd does the same).
struct Dot {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a, A b) {
#if WZVM_SIMD_SSE2
    return simd::v(_mm_madd_epi16(simd::m(a), simd::m(b)));
#else
    i32x4 x = vcast<i32x4>(a), y = vcast<i32x4>(b);
    i32x4 xe = (x << 16) >> 16, xo = x >> 16, ye = (y << 16) >> 16, yo = y >> 16;
    return vcast<R>(vcast<u32x4>(xe * ye) + vcast<u32x4>(xo * yo));
#endif
  }
};
// i16x8.q15mulr_sat_s: (a * b + 2^14) >> 15, saturated; only -32768 * -32768
// saturates (to 32767).
struct Q15MulrSat {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a, A b) {
#if WZVM_SIMD_SSSE3
    __m128i r = _mm_mulhrs_epi16(simd::m(a), simd::m(b));  // gives 0x8000 for the saturating case
    return simd::v(_mm_xor_si128(r, _mm_cmpeq_epi16(r, _mm_set1_epi16(static_cast<short>(0x8000)))));
#else
    i32x4 x = vcast<i32x4>(a), y = vcast<i32x4>(b);
    i32x4 xe = (x << 16) >> 16, xo = x >> 16, ye = (y << 16) >> 16, yo = y >> 16;
    i32x4 pe = (xe * ye + 0x4000) >> 15, po = (xo * yo + 0x4000) >> 15;
    pe = simd::select(pe > 0x7FFF, simd::splat<i32x4>(0x7FFF), pe);
    po = simd::select(po > 0x7FFF, simd::splat<i32x4>(0x7FFF), po);
    return vcast<R>((vcast<u32x4>(pe) & 0xFFFF) | (vcast<u32x4>(po) << 16));
#endif
  }
};
// narrow: signed wide lanes of a (low half) and b (high half), saturated to
// V's lane range.
template <class V>
struct Narrow {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a, A b) {
    using N = simd::Lane<V>;
#if WZVM_SIMD_SSE2
    if constexpr (std::is_same_v<N, int8_t>) return simd::v(_mm_packs_epi16(simd::m(a), simd::m(b)));
    if constexpr (std::is_same_v<N, uint8_t>) return simd::v(_mm_packus_epi16(simd::m(a), simd::m(b)));
    if constexpr (std::is_same_v<N, int16_t>) return simd::v(_mm_packs_epi32(simd::m(a), simd::m(b)));
#if WZVM_SIMD_SSE41
    if constexpr (std::is_same_v<N, uint16_t>) return simd::v(_mm_packus_epi32(simd::m(a), simd::m(b)));
#endif
#endif
    using WL = std::make_signed_t<typename simd::WiderOf<N>::type>;
    using W = simd::Vec<WL>;
    constexpr WL lo = std::numeric_limits<N>::min(), hi = std::numeric_limits<N>::max();
    auto clamp = [](W x) {
      x = simd::select(x < lo, simd::splat<W>(lo), x);
      return simd::select(x > hi, simd::splat<W>(hi), x);
    };
    using H = simd::Half<N>;
    return vcast<R>(simd::join(__builtin_convertvector(clamp(vcast<W>(a)), H),
                               __builtin_convertvector(clamp(vcast<W>(b)), H)));
  }
};

// ---------------------------------------------------------------------------
// Splat and swizzle.

template <class V>
struct Splat {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a) {
    return vcast<R>(simd::splat<V>(static_cast<simd::Lane<V>>(a)));
  }
};
// i8x16.swizzle: lanes of a picked by b; indices >= 16 give 0.
struct Swizzle {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a, A b) {
    return simd::swizzle(a, b);
  }
};

// ---------------------------------------------------------------------------
// Float lane operators. V is f32x4 or f64x2.

// abs/neg are sign-bit operations (payloads survive), like the scalar ones.
template <class V>
struct FAbs {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a) {
    return vcast<R>(simd::fabs(vcast<V>(a)));
  }
};
template <class V>
struct FNeg {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a) {
    return vcast<R>(vcast<simd::UVec<V>>(a) ^ simd::kSignBit<V>);
  }
};
template <class V>
struct VSqrt {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a) {
#if WZVM_SIMD_SSE2
    if constexpr (std::is_same_v<V, f32x4>) return vcast<R>(_mm_sqrt_ps(vcast<__m128>(a)));
    else return vcast<R>(_mm_sqrt_pd(vcast<__m128d>(a)));
#else
    V x = vcast<V>(a);
    for (int i = 0; i < simd::kLanes<V>; ++i) x[i] = std::sqrt(x[i]);
    return vcast<R>(x);
#endif
  }
};
// fmin/fmax: NaN if either lane is NaN (the canonical NaN here, which every
// nan:* pattern accepts), -0 < +0. minps/maxps differ on both points, so the
// cases are selected explicitly: a < b, b < a, equal (the bits of the two
// zeros OR-ed for min, AND-ed for max), unordered.
template <class V>
struct VFMin {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a, A b) {
    using U = simd::UVec<V>;
    V x = vcast<V>(a), y = vcast<V>(b);
    U ux = vcast<U>(x), uy = vcast<U>(y);
    U lt = vcast<U>(x < y), gt = vcast<U>(y < x), eq = vcast<U>(x == y);
    return vcast<R>((lt & ux) | (gt & uy) | (eq & (ux | uy)) | (~(lt | gt | eq) & simd::kCanonicalNaN<V>));
  }
};
template <class V>
struct VFMax {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a, A b) {
    using U = simd::UVec<V>;
    V x = vcast<V>(a), y = vcast<V>(b);
    U ux = vcast<U>(x), uy = vcast<U>(y);
    U gt = vcast<U>(x > y), lt = vcast<U>(y > x), eq = vcast<U>(x == y);
    return vcast<R>((gt & ux) | (lt & uy) | (eq & (ux & uy)) | (~(lt | gt | eq) & simd::kCanonicalNaN<V>));
  }
};
// Pseudo-min/max: b < a ? b : a and a < b ? b : a, NaNs and zeros as they fall.
template <class V>
struct VPMin {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a, A b) {
    V x = vcast<V>(a), y = vcast<V>(b);
    return vcast<R>(simd::select(y < x, y, x));
  }
};
template <class V>
struct VPMax {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a, A b) {
    V x = vcast<V>(a), y = vcast<V>(b);
    return vcast<R>(simd::select(x < y, y, x));
  }
};

// Rounding to integral. With SSE4.1, roundps/roundpd (which quiet NaNs).
// Otherwise: for |x| < 2^(mantissa bits), (|x| + 2^m) - 2^m rounds |x| to
// the nearest integer, ties to even (the current rounding mode), exactly;
// floor/ceil/trunc correct that by one, and the result takes x's sign (every
// one of the four keeps the sign, -0 included). Larger |x|, infinities and
// NaNs are already integral and pass through (NaNs quieted).
namespace detail_round {
enum Mode { kNearest, kFloor, kCeil, kTrunc };
template <class V, Mode kMode>
WZVM_SIMD_INLINE V round(V x) {
#if WZVM_SIMD_SSE41
  constexpr int imm = (kMode == kNearest ? _MM_FROUND_TO_NEAREST_INT
                       : kMode == kFloor ? _MM_FROUND_TO_NEG_INF
                       : kMode == kCeil  ? _MM_FROUND_TO_POS_INF
                                         : _MM_FROUND_TO_ZERO) |
                      _MM_FROUND_NO_EXC;
  if constexpr (std::is_same_v<V, f32x4>) return vcast<V>(_mm_round_ps(vcast<__m128>(x), imm));
  else return vcast<V>(_mm_round_pd(vcast<__m128d>(x), imm));
#else
  using L = simd::Lane<V>;
  using U = simd::UVec<V>;
  constexpr L big = L(uint64_t(1) << (std::numeric_limits<L>::digits - 1));
  const V one = simd::splat<V>(L(1));
  V ax = simd::fabs(x);
  auto small = ax < big;
  V r = (ax + big) - big;
  if constexpr (kMode == kTrunc) r = r - vcast<V>(vcast<U>(r > ax) & vcast<U>(one));
  r = simd::copysign(r, x);
  if constexpr (kMode == kFloor) r = r - vcast<V>(vcast<U>(r > x) & vcast<U>(one));
  if constexpr (kMode == kCeil) r = r + vcast<V>(vcast<U>(r < x) & vcast<U>(one));
  r = simd::copysign(r, x);
  return simd::select(small, r, simd::quiet(x));
#endif
}
}  // namespace detail_round
template <class V>
struct VCeil {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a) {
    return vcast<R>(detail_round::round<V, detail_round::kCeil>(vcast<V>(a)));
  }
};
template <class V>
struct VFloor {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a) {
    return vcast<R>(detail_round::round<V, detail_round::kFloor>(vcast<V>(a)));
  }
};
template <class V>
struct VTrunc {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a) {
    return vcast<R>(detail_round::round<V, detail_round::kTrunc>(vcast<V>(a)));
  }
};
template <class V>
struct VNearest {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a) {
    return vcast<R>(detail_round::round<V, detail_round::kNearest>(vcast<V>(a)));
  }
};

// ---------------------------------------------------------------------------
// Conversions. V names the integer side (i32x4 for _s, u32x4 for _u).

// f32x4.convert_i32x4_s/u: rounds to nearest (cvtdq2ps; for unsigned the
// compilers' exact two-halves sequence).
template <class V>
struct ConvertToF32x4 {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a) {
    return vcast<R>(__builtin_convertvector(vcast<V>(a), f32x4));
  }
};
// f64x2.convert_low_i32x4_s/u: exact.
template <class V>
struct ConvertLowToF64x2 {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a) {
    return vcast<R>(__builtin_convertvector(simd::low_half<simd::Half<simd::Lane<V>>>(a), f64x2));
  }
};
// i32x4.trunc_sat_f32x4_s/u: per lane as the scalar trunc_sat (NaN -> 0,
// out of range -> the nearest bound). With SSE2, cvttps2dq (which gives
// 0x80000000 for NaN and out-of-range lanes) plus fix-ups:
//  _s: positive overflow lanes flipped to 0x7FFFFFFF, NaN lanes cleared;
//  _u: NaN and negative lanes cleared first; lanes >= 2^31 converted as
//      x - 2^31 (exact there) with the top bit put back; lanes >= 2^32 all ones.
template <class V>
struct TruncSatF32x4 {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a) {
#if WZVM_SIMD_SSE2
    __m128 x = vcast<__m128>(a);
    const __m128 two31 = _mm_set1_ps(2147483648.0f);
    if constexpr (std::is_signed_v<simd::Lane<V>>) {
      __m128i r = _mm_cvttps_epi32(x);
      r = _mm_xor_si128(r, _mm_castps_si128(_mm_cmpge_ps(x, two31)));
      return simd::v(_mm_and_si128(r, _mm_castps_si128(_mm_cmpord_ps(x, x))));
    } else {
      x = _mm_and_ps(x, _mm_cmpgt_ps(x, _mm_setzero_ps()));  // NaN, negative -> +0
      __m128i big = _mm_castps_si128(_mm_cmpge_ps(x, two31));
      __m128i sat = _mm_castps_si128(_mm_cmpge_ps(x, _mm_set1_ps(4294967296.0f)));
      __m128i lo = _mm_cvttps_epi32(x);
      __m128i hi = _mm_xor_si128(_mm_cvttps_epi32(_mm_sub_ps(x, two31)), _mm_set1_epi32(INT32_MIN));
      __m128i r = _mm_or_si128(_mm_and_si128(big, hi), _mm_andnot_si128(big, lo));
      return simd::v(_mm_or_si128(r, sat));
    }
#else
    using F = std::conditional_t<std::is_signed_v<simd::Lane<V>>, num::TruncSatS, num::TruncSatU>;
    f32x4 x = vcast<f32x4>(a);
    u32x4 r;
    for (int i = 0; i < 4; ++i) r[i] = F::template op<uint32_t, float>(x[i]);
    return vcast<R>(r);
#endif
  }
};
// i32x4.trunc_sat_f64x2_s/u_zero: two lanes, zeros above.
template <class V>
struct TruncSatF64x2Zero {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a) {
    using F = std::conditional_t<std::is_signed_v<simd::Lane<V>>, num::TruncSatS, num::TruncSatU>;
    f64x2 x = vcast<f64x2>(a);
    u32x4 r = {F::template op<uint32_t, double>(x[0]), F::template op<uint32_t, double>(x[1]), 0, 0};
    return vcast<R>(r);
  }
};
// f32x4.demote_f64x2_zero (round to nearest, hardware NaN) and
// f64x2.promote_low_f32x4 (exact).
struct DemoteZero {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a) {
    return vcast<R>(simd::join(__builtin_convertvector(vcast<f64x2>(a), simd::f32x2), simd::f32x2{}));
  }
};
struct PromoteLow {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_SIMD_INLINE static R op(A a) {
    return vcast<R>(__builtin_convertvector(simd::low_half<simd::f32x2>(a), f64x2));
  }
};

}  // namespace num

// ---------------------------------------------------------------------------
// The Special SIMD rows (lane immediates, shuffle, bitselect), as used by the
// interpreter's handlers.
namespace simd {

template <class T>
WZVM_SIMD_INLINE T get_lane(v128_t v, uint32_t lane) {
  T x;
  std::memcpy(&x, reinterpret_cast<const uint8_t*>(&v) + lane * sizeof(T), sizeof(T));
  return x;
}
template <class T>
WZVM_SIMD_INLINE v128_t set_lane(v128_t v, uint32_t lane, T x) {
  std::memcpy(reinterpret_cast<uint8_t*>(&v) + lane * sizeof(T), &x, sizeof(T));
  return v;
}
WZVM_SIMD_INLINE v128_t bitselect(v128_t a, v128_t b, v128_t c) { return (a & c) | (b & ~c); }

#undef WZVM_SIMD_INLINE

}  // namespace simd
}  // namespace wzvm::vm
