#pragma once
// WebAssembly numeric semantics, exactly as the spec defines them
// (https://webassembly.github.io/spec/core/exec/numerics.html).
//
// One struct per functor named in the last column of the Unary/Binary rows of
// vm/opcodes.def. Every functor has the same shape so the interpreter can
// expand the table generically:
//
//   struct F {
//     static constexpr bool kTraps;
//     template <class R, class A> static R op(A a);                        // Unary,  !kTraps
//     template <class R, class A> static R op(A a, A b);                   // Binary, !kTraps
//     template <class R, class A> static TrapCode op(A a, R& out);         // Unary,  kTraps
//     template <class R, class A> static TrapCode op(A a, A b, R& out);    // Binary, kTraps
//   };
//
// R is the result C type and A the operand C type, each one of uint32_t,
// uint64_t, float, double (I32, I64, F32, F64). Integers are carried unsigned;
// signed operations convert to the signed type internally (well defined in
// C++20: modular conversion, arithmetic right shift). Nothing here has UB:
// shift counts are masked, overflowing arithmetic is done on unsigned types,
// and float->int casts are only performed on values known to be in range.
//
// Float assumptions: IEEE-754 binary32/binary64 with round-to-nearest-even as
// the current rounding mode and no x87 excess precision (x86-64 SSE, AArch64).
// Operations whose NaN result the spec leaves as nan:arithmetic (add, sub,
// mul, div, sqrt, demote, promote) rely on the hardware, which returns a quiet
// NaN; ceil/floor/trunc/nearest and min/max quiet NaNs explicitly; operations the spec defines on the
// bits (abs, neg, copysign) are done on the bits so payloads survive.

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "vm/runtime.h"

namespace wzvm::vm::num {

#define WZVM_NUM_INLINE __attribute__((always_inline)) static inline

namespace detail {

template <class T>
struct FloatBits;
template <>
struct FloatBits<float> {
  using U = uint32_t;
  static constexpr U kSign = 0x80000000u;
  static constexpr U kQuiet = 0x00400000u;
};
template <>
struct FloatBits<double> {
  using U = uint64_t;
  static constexpr U kSign = 0x8000000000000000ull;
  static constexpr U kQuiet = 0x0008000000000000ull;
};

template <class T>
inline constexpr unsigned kBits = sizeof(T) * 8;

template <class T>
using Signed = std::make_signed_t<T>;

template <class T>
WZVM_NUM_INLINE typename FloatBits<T>::U bits(T x) {
  return std::bit_cast<typename FloatBits<T>::U>(x);
}
template <class T>
WZVM_NUM_INLINE T from_bits(typename FloatBits<T>::U u) {
  return std::bit_cast<T>(u);
}

// A NaN operand turned into an arithmetic NaN (quiet bit set, payload kept);
// a canonical NaN stays canonical. This is what the spec allows for
// fmin/fmax when an operand is NaN.
template <class T>
WZVM_NUM_INLINE T quiet(T x) {
  return from_bits<T>(bits(x) | FloatBits<T>::kQuiet);
}

// 2^n as a float constant (exact for every n used here).
template <class F>
constexpr F pow2(unsigned n) {
  F r = 1;
  while (n--) r *= 2;
  return r;
}

// trunc: is the float x in the domain of the integer type R (signed or
// unsigned)? https://webassembly.github.io/spec/core/exec/numerics.html#op-trunc-s
// The result trunc(x) must lie in [min, max]; this is decided without
// rounding x first. NaN compares false everywhere, so it is out of range.
template <class R, class A>
WZVM_NUM_INLINE bool in_range_s(A x) {
  constexpr unsigned N = kBits<R>;
  constexpr A hi = pow2<A>(N - 1);  // exclusive: 2^(N-1) itself overflows
  if constexpr (std::numeric_limits<A>::digits > static_cast<int>(N)) {
    // A (f64 for i32) has fractions near -2^(N-1): -2^(N-1) - 0.5 is fine,
    // -2^(N-1) - 1 is not. The bound is exact in A.
    constexpr A lo = -pow2<A>(N - 1) - 1;
    return x > lo && x < hi;
  } else {
    // A is integral-valued at magnitude 2^(N-1); the next value below
    // -2^(N-1) (e.g. -2147483904.0f) already overflows.
    constexpr A lo = -pow2<A>(N - 1);
    return x >= lo && x < hi;
  }
}
template <class R, class A>
WZVM_NUM_INLINE bool in_range_u(A x) {
  // (-1, 2^N): -0.9 truncates to 0, which is fine.
  constexpr A hi = pow2<A>(kBits<R>);
  return x > A(-1) && x < hi;
}

}  // namespace detail

// ---------------------------------------------------------------------------
// Comparisons (result is i32 0/1). For unsigned integer A, Lt/Gt/Le/Ge are the
// unsigned compares (lt_u ...); for floats the IEEE compares (false on NaN,
// -0 == +0). https://webassembly.github.io/spec/core/exec/numerics.html#op-ieq

struct Eqz {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a) {
    return R(a == 0);
  }
};
struct Eq {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a, A b) {
    return R(a == b);
  }
};
struct Ne {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a, A b) {
    return R(a != b);
  }
};
struct Lt {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a, A b) {
    return R(a < b);
  }
};
struct Gt {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a, A b) {
    return R(a > b);
  }
};
struct Le {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a, A b) {
    return R(a <= b);
  }
};
struct Ge {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a, A b) {
    return R(a >= b);
  }
};
struct LtS {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a, A b) {
    return R(detail::Signed<A>(a) < detail::Signed<A>(b));
  }
};
struct GtS {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a, A b) {
    return R(detail::Signed<A>(a) > detail::Signed<A>(b));
  }
};
struct LeS {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a, A b) {
    return R(detail::Signed<A>(a) <= detail::Signed<A>(b));
  }
};
struct GeS {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a, A b) {
    return R(detail::Signed<A>(a) >= detail::Signed<A>(b));
  }
};

// ---------------------------------------------------------------------------
// Integer bit counting. clz/ctz of 0 is the bit width.
// https://webassembly.github.io/spec/core/exec/numerics.html#op-iclz

struct Clz {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a) {
    return R(std::countl_zero(a));
  }
};
struct Ctz {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a) {
    return R(std::countr_zero(a));
  }
};
struct Popcnt {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a) {
    return R(std::popcount(a));
  }
};

// ---------------------------------------------------------------------------
// Arithmetic shared by integers (modulo 2^N: unsigned C arithmetic) and floats
// (IEEE, NaN in -> arithmetic NaN out, which the hardware provides).
// https://webassembly.github.io/spec/core/exec/numerics.html#op-iadd

struct Add {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a, A b) {
    return R(a + b);
  }
};
struct Sub {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a, A b) {
    return R(a - b);
  }
};
struct Mul {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a, A b) {
    return R(a * b);
  }
};

// ---------------------------------------------------------------------------
// Integer division. https://webassembly.github.io/spec/core/exec/numerics.html#op-idiv-s
// div by 0 traps; div_s INT_MIN / -1 (result 2^(N-1) unrepresentable) traps
// with integer overflow; rem_s INT_MIN % -1 is 0 (and is UB in C, so b == -1
// is answered without dividing).

struct DivU {
  static constexpr bool kTraps = true;
  template <class R, class A>
  WZVM_NUM_INLINE TrapCode op(A a, A b, R& out) {
    if (b == 0) [[unlikely]]
      return TrapCode::IntegerDivideByZero;
    out = R(a / b);
    return TrapCode::None;
  }
};
struct RemU {
  static constexpr bool kTraps = true;
  template <class R, class A>
  WZVM_NUM_INLINE TrapCode op(A a, A b, R& out) {
    if (b == 0) [[unlikely]]
      return TrapCode::IntegerDivideByZero;
    out = R(a % b);
    return TrapCode::None;
  }
};
struct DivS {
  static constexpr bool kTraps = true;
  template <class R, class A>
  WZVM_NUM_INLINE TrapCode op(A a, A b, R& out) {
    using S = detail::Signed<A>;
    if (b == 0) [[unlikely]]
      return TrapCode::IntegerDivideByZero;
    if (S(a) == std::numeric_limits<S>::min() && S(b) == -1) [[unlikely]]
      return TrapCode::IntegerOverflow;
    out = R(A(S(a) / S(b)));
    return TrapCode::None;
  }
};
struct RemS {
  static constexpr bool kTraps = true;
  template <class R, class A>
  WZVM_NUM_INLINE TrapCode op(A a, A b, R& out) {
    using S = detail::Signed<A>;
    if (b == 0) [[unlikely]]
      return TrapCode::IntegerDivideByZero;
    if (S(b) == -1) [[unlikely]] {
      out = 0;  // x rem -1 == 0 for every x, including INT_MIN
      return TrapCode::None;
    }
    out = R(A(S(a) % S(b)));  // C truncates toward zero; sign follows a, as in the spec
    return TrapCode::None;
  }
};

// ---------------------------------------------------------------------------
// Bitwise, shifts and rotates. Shift counts are taken modulo N.
// https://webassembly.github.io/spec/core/exec/numerics.html#op-ishl

struct And {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a, A b) {
    return R(a & b);
  }
};
struct Or {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a, A b) {
    return R(a | b);
  }
};
struct Xor {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a, A b) {
    return R(a ^ b);
  }
};
struct Shl {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a, A b) {
    return R(a << (b & (detail::kBits<A> - 1)));
  }
};
struct ShrU {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a, A b) {
    return R(a >> (b & (detail::kBits<A> - 1)));
  }
};
struct ShrS {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a, A b) {
    // C++20: >> on a negative signed value is an arithmetic shift.
    return R(A(detail::Signed<A>(a) >> (b & (detail::kBits<A> - 1))));
  }
};
struct Rotl {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a, A b) {
    return R(std::rotl(a, int(b & (detail::kBits<A> - 1))));
  }
};
struct Rotr {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a, A b) {
    return R(std::rotr(a, int(b & (detail::kBits<A> - 1))));
  }
};

// ---------------------------------------------------------------------------
// Float-only unary and binary operators.
// https://webassembly.github.io/spec/core/exec/numerics.html#op-fabs
// abs/neg/copysign are defined on the sign bit alone, so they are bit
// operations: they never canonicalize or quiet a NaN. (Abs/Neg on integer A
// are also given the two's-complement meaning, in case a future table row
// wants them.)

struct Abs {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a) {
    if constexpr (std::is_floating_point_v<A>) {
      return detail::from_bits<A>(detail::bits(a) & ~detail::FloatBits<A>::kSign);
    } else {
      return R(detail::Signed<A>(a) < 0 ? A(0) - a : a);
    }
  }
};
struct Neg {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a) {
    if constexpr (std::is_floating_point_v<A>) {
      return detail::from_bits<A>(detail::bits(a) ^ detail::FloatBits<A>::kSign);
    } else {
      return R(A(0) - a);
    }
  }
};
struct Copysign {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a, A b) {
    constexpr auto kSign = detail::FloatBits<A>::kSign;
    return detail::from_bits<A>((detail::bits(a) & ~kSign) | (detail::bits(b) & kSign));
  }
};

// Rounding to integral: the spec results are exact, so the libm functions are
// exact too (ceil(-0.5) = -0). But glibc's ceil/floor/trunc/rint return a
// signaling NaN unchanged, and the spec wants nan:arithmetic (f32.wast:
// ceil(nan:0x200000) is nan:arithmetic), so NaNs are quieted explicitly.
// https://webassembly.github.io/spec/core/exec/numerics.html#op-fceil
struct Ceil {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a) {
    if (a != a) [[unlikely]]
      return detail::quiet(a);
    return std::ceil(a);
  }
};
struct Floor {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a) {
    if (a != a) [[unlikely]]
      return detail::quiet(a);
    return std::floor(a);
  }
};
struct Trunc {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a) {
    if (a != a) [[unlikely]]
      return detail::quiet(a);
    return std::trunc(a);
  }
};
// fnearest is round-half-to-even (0.5 -> +0, 1.5 -> 2, -0.5 -> -0): exactly
// rint under the default round-to-nearest-even mode. (std::round rounds
// half away from zero and would be wrong.)
// https://webassembly.github.io/spec/core/exec/numerics.html#op-fnearest
struct Nearest {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a) {
    if (a != a) [[unlikely]]
      return detail::quiet(a);
    return std::rint(a);
  }
};
struct Sqrt {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a) {
    return std::sqrt(a);
  }
};
struct FDiv {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a, A b) {
    return R(a / b);
  }
};

// fmin/fmax: NaN if either operand is NaN, and -0 < +0. Neither the C
// fmin/fmax (which drop a NaN) nor x86 minss/maxss (which return the second
// operand on NaN or equal zeros) match, so compare explicitly.
// https://webassembly.github.io/spec/core/exec/numerics.html#op-fmin
struct FMin {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a, A b) {
    if (a < b) return a;
    if (b < a) return b;
    if (a == b) {
      // Equal values, or -0 and +0: OR-ing the bits makes min(-0, +0) = -0.
      return detail::from_bits<A>(detail::bits(a) | detail::bits(b));
    }
    return detail::quiet(a != a ? a : b);
  }
};
struct FMax {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a, A b) {
    if (a > b) return a;
    if (b > a) return b;
    if (a == b) {
      // AND-ing the bits makes max(-0, +0) = +0.
      return detail::from_bits<A>(detail::bits(a) & detail::bits(b));
    }
    return detail::quiet(a != a ? a : b);
  }
};

// ---------------------------------------------------------------------------
// Conversions. https://webassembly.github.io/spec/core/exec/numerics.html#conversions

// i32.wrap_i64: keep the low 32 bits.
struct Wrap {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a) {
    return R(a);
  }
};
// i64.extend_i32_s / _u.
struct ExtendS {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a) {
    return R(detail::Signed<R>(detail::Signed<A>(a)));
  }
};
struct ExtendU {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a) {
    return R(a);
  }
};
// iN.extendM_s: sign-extend the low M bits in place.
// https://webassembly.github.io/spec/core/exec/numerics.html#op-iextendn-s
struct Extend8S {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a) {
    return R(detail::Signed<R>(static_cast<int8_t>(a)));
  }
};
struct Extend16S {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a) {
    return R(detail::Signed<R>(static_cast<int16_t>(a)));
  }
};
struct Extend32S {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a) {
    return R(detail::Signed<R>(static_cast<int32_t>(a)));
  }
};

// iN.trunc_fM_s/_u: NaN -> invalid conversion; a value whose truncation is not
// representable -> integer overflow (both traps).
// https://webassembly.github.io/spec/core/exec/numerics.html#op-trunc-s
struct TruncS {
  static constexpr bool kTraps = true;
  template <class R, class A>
  WZVM_NUM_INLINE TrapCode op(A a, R& out) {
    if (!detail::in_range_s<R>(a)) [[unlikely]]
      return a != a ? TrapCode::InvalidConversion : TrapCode::IntegerOverflow;
    out = R(static_cast<detail::Signed<R>>(a));  // in range: the C cast is defined and truncates
    return TrapCode::None;
  }
};
struct TruncU {
  static constexpr bool kTraps = true;
  template <class R, class A>
  WZVM_NUM_INLINE TrapCode op(A a, R& out) {
    if (!detail::in_range_u<R>(a)) [[unlikely]]
      return a != a ? TrapCode::InvalidConversion : TrapCode::IntegerOverflow;
    out = static_cast<R>(a);
    return TrapCode::None;
  }
};
// iN.trunc_sat_fM_s/_u: NaN -> 0, out of range -> the nearest bound.
// https://webassembly.github.io/spec/core/exec/numerics.html#op-trunc-sat-s
struct TruncSatS {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a) {
    using S = detail::Signed<R>;
    if (detail::in_range_s<R>(a)) [[likely]]
      return R(static_cast<S>(a));
    if (a != a) return 0;
    return a < 0 ? R(std::numeric_limits<S>::min()) : R(std::numeric_limits<S>::max());
  }
};
struct TruncSatU {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a) {
    if (detail::in_range_u<R>(a)) [[likely]]
      return static_cast<R>(a);
    if (a != a || a < 0) return 0;
    return std::numeric_limits<R>::max();
  }
};

// fM.convert_iN_s/_u: round to nearest-even. The compilers' int->float
// conversions (including u64 -> f32/f64, which gcc and clang do with the
// halve-with-sticky-bit trick on x86-64) round once, correctly; the tests check
// the double-rounding cases from conversions.wast.
// https://webassembly.github.io/spec/core/exec/numerics.html#op-convert-s
struct ConvertS {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a) {
    return static_cast<R>(static_cast<detail::Signed<A>>(a));
  }
};
struct ConvertU {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a) {
    return static_cast<R>(a);
  }
};
// f32.demote_f64 (round to nearest) / f64.promote_f32 (exact). A NaN comes out
// as a quiet NaN (hardware behaviour), which is what nan:arithmetic allows.
struct Demote {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a) {
    return static_cast<R>(a);
  }
};
struct Promote {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a) {
    return static_cast<R>(a);
  }
};
// Reinterpret: same bits, other type.
struct Reinterpret {
  static constexpr bool kTraps = false;
  template <class R, class A>
  WZVM_NUM_INLINE R op(A a) {
    static_assert(sizeof(R) == sizeof(A));
    return std::bit_cast<R>(a);
  }
};

#undef WZVM_NUM_INLINE

}  // namespace wzvm::vm::num
