// Tests for vm/numerics.h: the corner cases of the WebAssembly numeric
// semantics (https://webassembly.github.io/spec/core/exec/numerics.html).
// Expected values are taken from the spec test suite (conversions.wast,
// i32.wast, i64.wast, f32.wast, f64.wast, float_exprs.wast, int_exprs.wast)
// where it has them. Every operand goes through `opaque` so the operations are
// evaluated at run time, not folded by the compiler.

#include "vm/numerics.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace wzvm::vm::num {
namespace {

using u32 = uint32_t;
using u64 = uint64_t;

template <class T>
T opaque(T x) {
  volatile T v = x;
  return v;
}

float f32(u32 bits) { return std::bit_cast<float>(bits); }
double f64(u64 bits) { return std::bit_cast<double>(bits); }
u32 bits(float x) { return std::bit_cast<u32>(x); }
u64 bits(double x) { return std::bit_cast<u64>(x); }

// Unary / binary entry points the way the interpreter calls them.
template <class F, class R, class A>
R un(A a) {
  static_assert(!F::kTraps);
  return F::template op<R, A>(opaque(a));
}
template <class F, class R, class A>
R bin(A a, A b) {
  static_assert(!F::kTraps);
  return F::template op<R, A>(opaque(a), opaque(b));
}

// A trapping op's outcome: the trap code and, if none, the value.
template <class R>
struct Outcome {
  TrapCode trap;
  R value;
};
template <class F, class R, class A>
Outcome<R> trap_un(A a) {
  static_assert(F::kTraps);
  R out{};
  TrapCode t = F::template op<R, A>(opaque(a), out);
  return {t, out};
}
template <class F, class R, class A>
Outcome<R> trap_bin(A a, A b) {
  static_assert(F::kTraps);
  R out{};
  TrapCode t = F::template op<R, A>(opaque(a), opaque(b), out);
  return {t, out};
}

// Checks an Outcome is a value (bit-exact for floats).
#define EXPECT_OK(outcome, expected)                   \
  do {                                                 \
    auto o_ = (outcome);                               \
    EXPECT_EQ(o_.trap, TrapCode::None);                \
    EXPECT_EQ(o_.value, decltype(o_.value)(expected)); \
  } while (0)
#define EXPECT_TRAP(outcome, code) EXPECT_EQ((outcome).trap, TrapCode::code)

constexpr u32 kF32Quiet = 0x00400000u;
constexpr u64 kF64Quiet = 0x0008000000000000ull;
constexpr u32 kF32Canon = 0x7fc00000u;
constexpr u64 kF64Canon = 0x7ff8000000000000ull;

bool is_arith_nan(float x) { return std::isnan(x) && (bits(x) & kF32Quiet); }
bool is_arith_nan(double x) { return std::isnan(x) && (bits(x) & kF64Quiet); }

constexpr float kInfF = std::numeric_limits<float>::infinity();
constexpr double kInfD = std::numeric_limits<double>::infinity();
constexpr u32 kMin32 = 0x80000000u;
constexpr u64 kMin64 = 0x8000000000000000ull;

// ---------------------------------------------------------------------------
// Integer comparisons

TEST(Numerics, IntCompareSignedVsUnsigned) {
  EXPECT_EQ((bin<Lt, u32>(u32(-1), 1u)), 0u);   // lt_u
  EXPECT_EQ((bin<LtS, u32>(u32(-1), 1u)), 1u);  // lt_s
  EXPECT_EQ((bin<Gt, u32>(kMin32, 0x7fffffffu)), 1u);
  EXPECT_EQ((bin<GtS, u32>(kMin32, 0x7fffffffu)), 0u);
  EXPECT_EQ((bin<LeS, u32>(kMin32, kMin32)), 1u);
  EXPECT_EQ((bin<GeS, u32>(u32(-1), 0u)), 0u);
  EXPECT_EQ((bin<Ge, u32>(u32(-1), 0u)), 1u);
  EXPECT_EQ((bin<Le, u32>(0u, u32(-1))), 1u);
  EXPECT_EQ((bin<LtS, u32>(u64(-1), u64(1))), 1u);
  EXPECT_EQ((bin<Lt, u32>(u64(-1), u64(1))), 0u);
  EXPECT_EQ((bin<GtS, u32>(kMin64, u64(0x7fffffffffffffff))), 0u);
  EXPECT_EQ((bin<Eq, u32>(u64(1) << 40, u64(0))), 0u);
  EXPECT_EQ((bin<Ne, u32>(u64(1) << 40, u64(0))), 1u);
  EXPECT_EQ((un<Eqz, u32>(u64(1) << 40)), 0u);  // i64.eqz must see the high bits
  EXPECT_EQ((un<Eqz, u32>(u64(0))), 1u);
  EXPECT_EQ((un<Eqz, u32>(0u)), 1u);
}

// ---------------------------------------------------------------------------
// Bit counting

TEST(Numerics, ClzCtzPopcnt) {
  EXPECT_EQ((un<Clz, u32>(0u)), 32u);
  EXPECT_EQ((un<Ctz, u32>(0u)), 32u);
  EXPECT_EQ((un<Clz, u64>(u64(0))), 64u);
  EXPECT_EQ((un<Ctz, u64>(u64(0))), 64u);
  EXPECT_EQ((un<Clz, u32>(0x00008000u)), 16u);
  EXPECT_EQ((un<Ctz, u32>(0x00008000u)), 15u);
  EXPECT_EQ((un<Clz, u32>(0xffffffffu)), 0u);
  EXPECT_EQ((un<Clz, u64>(u64(0x00008000))), 48u);
  EXPECT_EQ((un<Ctz, u64>(u64(0x8000000000000000))), 63u);
  EXPECT_EQ((un<Popcnt, u32>(0xffffffffu)), 32u);
  EXPECT_EQ((un<Popcnt, u32>(0xaaaa5555u)), 16u);
  EXPECT_EQ((un<Popcnt, u64>(u64(-1))), 64u);
  EXPECT_EQ((un<Popcnt, u64>(u64(0x99999999aaaaaaaa))), 32u);
}

// ---------------------------------------------------------------------------
// Integer arithmetic wraps modulo 2^N

TEST(Numerics, IntArithmeticWraps) {
  EXPECT_EQ((bin<Add, u32>(0x7fffffffu, 1u)), kMin32);
  EXPECT_EQ((bin<Add, u32>(u32(-1), 1u)), 0u);
  EXPECT_EQ((bin<Sub, u32>(kMin32, 1u)), 0x7fffffffu);
  EXPECT_EQ((bin<Sub, u32>(0u, 1u)), 0xffffffffu);
  EXPECT_EQ((bin<Mul, u32>(kMin32, u32(-1))), kMin32);
  EXPECT_EQ((bin<Mul, u32>(0x01234567u, 0x76543210u)), 0x358e7470u);  // i32.wast
  EXPECT_EQ((bin<Mul, u64>(u64(0x0123456789abcdef), u64(0xfedcba9876543210))),
            u64(0x2236d88fe5618cf0));  // i64.wast
  EXPECT_EQ((bin<Add, u64>(u64(0x7fffffffffffffff), u64(1))), kMin64);
  EXPECT_EQ((bin<Sub, u64>(kMin64, u64(1))), u64(0x7fffffffffffffff));
}

// ---------------------------------------------------------------------------
// Division and remainder (https://webassembly.github.io/spec/core/exec/numerics.html#op-idiv-s)

TEST(Numerics, DivS32) {
  EXPECT_TRAP((trap_bin<DivS, u32>(1u, 0u)), IntegerDivideByZero);
  EXPECT_TRAP((trap_bin<DivS, u32>(0u, 0u)), IntegerDivideByZero);
  EXPECT_TRAP((trap_bin<DivS, u32>(kMin32, u32(-1))), IntegerOverflow);
  EXPECT_OK((trap_bin<DivS, u32>(kMin32, 2u)), 0xc0000000u);
  EXPECT_OK((trap_bin<DivS, u32>(kMin32 + 1, u32(-1))), 0x7fffffffu);
  EXPECT_OK((trap_bin<DivS, u32>(u32(-7), 2u)), u32(-3));  // truncates toward zero
  EXPECT_OK((trap_bin<DivS, u32>(7u, u32(-2))), u32(-3));
  EXPECT_OK((trap_bin<DivS, u32>(u32(-7), u32(-2))), 3u);
  EXPECT_OK((trap_bin<DivS, u32>(u32(-1), u32(-1))), 1u);
}

TEST(Numerics, DivS64) {
  EXPECT_TRAP((trap_bin<DivS, u64>(u64(1), u64(0))), IntegerDivideByZero);
  EXPECT_TRAP((trap_bin<DivS, u64>(kMin64, u64(-1))), IntegerOverflow);
  EXPECT_OK((trap_bin<DivS, u64>(kMin64, u64(2))), u64(0xc000000000000000));
  EXPECT_OK((trap_bin<DivS, u64>(u64(-7), u64(2))), u64(-3));
  EXPECT_OK((trap_bin<DivS, u64>(u64(7), u64(-2))), u64(-3));
}

TEST(Numerics, DivU) {
  EXPECT_TRAP((trap_bin<DivU, u32>(1u, 0u)), IntegerDivideByZero);
  EXPECT_TRAP((trap_bin<DivU, u64>(u64(1), u64(0))), IntegerDivideByZero);
  EXPECT_OK((trap_bin<DivU, u32>(kMin32, u32(-1))), 0u);
  EXPECT_OK((trap_bin<DivU, u32>(kMin32, 2u)), 0x40000000u);
  EXPECT_OK((trap_bin<DivU, u32>(u32(-5), 2u)), 0x7ffffffdu);
  EXPECT_OK((trap_bin<DivU, u64>(kMin64, u64(2))), u64(0x4000000000000000));
  EXPECT_OK((trap_bin<DivU, u64>(u64(-5), u64(2))), u64(0x7ffffffffffffffd));
}

TEST(Numerics, RemS) {
  EXPECT_TRAP((trap_bin<RemS, u32>(1u, 0u)), IntegerDivideByZero);
  EXPECT_TRAP((trap_bin<RemS, u64>(u64(1), u64(0))), IntegerDivideByZero);
  // INT_MIN rem -1 is 0, not a trap (and not UB).
  EXPECT_OK((trap_bin<RemS, u32>(kMin32, u32(-1))), 0u);
  EXPECT_OK((trap_bin<RemS, u64>(kMin64, u64(-1))), u64(0));
  EXPECT_OK((trap_bin<RemS, u32>(5u, u32(-1))), 0u);
  EXPECT_OK((trap_bin<RemS, u32>(kMin32, 2u)), 0u);
  EXPECT_OK((trap_bin<RemS, u32>(kMin32, 3u)), u32(-2));
  // The sign follows the dividend.
  EXPECT_OK((trap_bin<RemS, u32>(u32(-7), 2u)), u32(-1));
  EXPECT_OK((trap_bin<RemS, u32>(7u, u32(-2))), 1u);
  EXPECT_OK((trap_bin<RemS, u32>(u32(-7), u32(-2))), u32(-1));
  EXPECT_OK((trap_bin<RemS, u64>(u64(-7), u64(2))), u64(-1));
  EXPECT_OK((trap_bin<RemS, u64>(kMin64, u64(3))), u64(-2));
}

TEST(Numerics, RemU) {
  EXPECT_TRAP((trap_bin<RemU, u32>(1u, 0u)), IntegerDivideByZero);
  EXPECT_TRAP((trap_bin<RemU, u64>(u64(1), u64(0))), IntegerDivideByZero);
  EXPECT_OK((trap_bin<RemU, u32>(kMin32, u32(-1))), kMin32);
  EXPECT_OK((trap_bin<RemU, u32>(u32(-5), 2u)), 1u);
  EXPECT_OK((trap_bin<RemU, u32>(0x8ff00ff0u, 0x10001u)), 0x8001u);  // i32.wast
  EXPECT_OK((trap_bin<RemU, u64>(kMin64, u64(-1))), kMin64);
  EXPECT_OK((trap_bin<RemU, u64>(u64(0x8ff00ff00ff00ff0), u64(0x100000001))),
            u64(0x80000001));  // i64.wast
}

// ---------------------------------------------------------------------------
// Shifts and rotates: the count is taken modulo N
// (https://webassembly.github.io/spec/core/exec/numerics.html#op-ishl)

TEST(Numerics, Shifts32) {
  EXPECT_EQ((bin<Shl, u32>(1u, 31u)), kMin32);
  EXPECT_EQ((bin<Shl, u32>(1u, 32u)), 1u);
  EXPECT_EQ((bin<Shl, u32>(1u, 33u)), 2u);
  EXPECT_EQ((bin<Shl, u32>(1u, u32(-1))), kMin32);
  EXPECT_EQ((bin<Shl, u32>(1u, 0x7fffffffu)), kMin32);
  EXPECT_EQ((bin<ShrS, u32>(kMin32, 31u)), 0xffffffffu);
  EXPECT_EQ((bin<ShrS, u32>(kMin32, 32u)), kMin32);
  EXPECT_EQ((bin<ShrS, u32>(u32(-1), 100u)), 0xffffffffu);
  EXPECT_EQ((bin<ShrS, u32>(0x7fffffffu, 33u)), 0x3fffffffu);
  EXPECT_EQ((bin<ShrU, u32>(kMin32, 31u)), 1u);
  EXPECT_EQ((bin<ShrU, u32>(kMin32, 32u)), kMin32);
  EXPECT_EQ((bin<ShrU, u32>(u32(-1), u32(-1))), 1u);
}

TEST(Numerics, Shifts64) {
  EXPECT_EQ((bin<Shl, u64>(u64(1), u64(63))), kMin64);
  EXPECT_EQ((bin<Shl, u64>(u64(1), u64(64))), u64(1));
  EXPECT_EQ((bin<Shl, u64>(u64(1), u64(65))), u64(2));
  EXPECT_EQ((bin<Shl, u64>(u64(1), u64(32))), u64(1) << 32);  // no 32-bit masking
  EXPECT_EQ((bin<Shl, u64>(u64(1), u64(-1))), kMin64);
  EXPECT_EQ((bin<ShrS, u64>(kMin64, u64(63))), u64(-1));
  EXPECT_EQ((bin<ShrS, u64>(kMin64, u64(64))), kMin64);
  EXPECT_EQ((bin<ShrS, u64>(u64(-1), u64(0x8000000000000001))), u64(-1));
  EXPECT_EQ((bin<ShrU, u64>(kMin64, u64(63))), u64(1));
  EXPECT_EQ((bin<ShrU, u64>(kMin64, u64(64))), kMin64);
  EXPECT_EQ((bin<ShrU, u64>(u64(-1), u64(-1))), u64(1));
}

TEST(Numerics, Rotates) {
  // i32.wast
  EXPECT_EQ((bin<Rotl, u32>(1u, 32u)), 1u);
  EXPECT_EQ((bin<Rotl, u32>(0xabcd9876u, 1u)), 0x579b30edu);
  EXPECT_EQ((bin<Rotl, u32>(0xfe00dc00u, 4u)), 0xe00dc00fu);
  EXPECT_EQ((bin<Rotl, u32>(0x00008000u, 37u)), 0x00100000u);
  EXPECT_EQ((bin<Rotl, u32>(0xb0c1d2e3u, 0xff05u)), 0x183a5c76u);
  EXPECT_EQ((bin<Rotl, u32>(0x769abcdfu, 0xffffffedu)), 0x579beed3u);
  EXPECT_EQ((bin<Rotr, u32>(1u, 1u)), kMin32);
  EXPECT_EQ((bin<Rotr, u32>(1u, 32u)), 1u);
  EXPECT_EQ((bin<Rotr, u32>(0xb0c1d2e3u, 0x0005u)), 0x1d860e97u);
  EXPECT_EQ((bin<Rotr, u32>(0xb0c1d2e3u, 0xff05u)), 0x1d860e97u);
  EXPECT_EQ((bin<Rotr, u32>(0x769abcdfu, 0xffffffedu)), 0xe6fbb4d5u);
  EXPECT_EQ((bin<Rotr, u32>(0x00008000u, 37u)), 0x00000400u);
  // i64.wast
  EXPECT_EQ((bin<Rotl, u64>(u64(1), u64(64))), u64(1));
  EXPECT_EQ((bin<Rotl, u64>(u64(0xabd1234ef567809c), u64(63))), u64(0x55e891a77ab3c04e));
  EXPECT_EQ((bin<Rotl, u64>(u64(0xabd1234ef567809c), u64(0x800000000000003f))), u64(0x55e891a77ab3c04e));
  EXPECT_EQ((bin<Rotr, u64>(u64(1), u64(1))), kMin64);
  EXPECT_EQ((bin<Rotr, u64>(u64(0xabcd1234ef567809), u64(53))), u64(0x6891a77ab3c04d5e));
  EXPECT_EQ((bin<Rotr, u64>(u64(0xabcd1234ef567809), u64(0x35))), u64(0x6891a77ab3c04d5e));
}

TEST(Numerics, Bitwise) {
  EXPECT_EQ((bin<And, u32>(0xf0f0ffffu, 0xfffff0f0u)), 0xf0f0f0f0u);
  EXPECT_EQ((bin<Or, u32>(0xf0f0ffffu, 0xfffff0f0u)), 0xffffffffu);
  EXPECT_EQ((bin<Xor, u32>(0xf0f0ffffu, 0xfffff0f0u)), 0x0f0f0f0fu);
  EXPECT_EQ((bin<Xor, u64>(u64(-1), u64(0x8000000000000000))), u64(0x7fffffffffffffff));
}

// ---------------------------------------------------------------------------
// Integer conversions and sign extension

TEST(Numerics, WrapExtend) {
  EXPECT_EQ((un<Wrap, u32>(u64(0x123456789abcdef0))), 0x9abcdef0u);
  EXPECT_EQ((un<Wrap, u32>(u64(-1))), 0xffffffffu);
  EXPECT_EQ((un<ExtendS, u64>(0x7fffffffu)), u64(0x7fffffff));
  EXPECT_EQ((un<ExtendS, u64>(kMin32)), u64(0xffffffff80000000));
  EXPECT_EQ((un<ExtendS, u64>(u32(-1))), u64(-1));
  EXPECT_EQ((un<ExtendU, u64>(kMin32)), u64(0x80000000));
  EXPECT_EQ((un<ExtendU, u64>(u32(-1))), u64(0xffffffff));
}

TEST(Numerics, ExtendNS) {
  EXPECT_EQ((un<Extend8S, u32>(0x7fu)), 0x7fu);
  EXPECT_EQ((un<Extend8S, u32>(0x80u)), 0xffffff80u);
  EXPECT_EQ((un<Extend8S, u32>(0x12345680u)), 0xffffff80u);  // high bits ignored
  EXPECT_EQ((un<Extend8S, u32>(0xfedcba7fu)), 0x7fu);
  EXPECT_EQ((un<Extend16S, u32>(0x7fffu)), 0x7fffu);
  EXPECT_EQ((un<Extend16S, u32>(0x8000u)), 0xffff8000u);
  EXPECT_EQ((un<Extend16S, u32>(0x12348000u)), 0xffff8000u);
  EXPECT_EQ((un<Extend16S, u32>(0xfedc7fffu)), 0x7fffu);
  EXPECT_EQ((un<Extend8S, u64>(u64(0x80))), u64(-128));
  EXPECT_EQ((un<Extend8S, u64>(u64(0x0123456789abcd80))), u64(-128));
  EXPECT_EQ((un<Extend8S, u64>(u64(0xfedcba987654327f))), u64(0x7f));
  EXPECT_EQ((un<Extend16S, u64>(u64(0x0123456789ab8000))), u64(-32768));
  EXPECT_EQ((un<Extend16S, u64>(u64(0xfedcba9876547fff))), u64(0x7fff));
  EXPECT_EQ((un<Extend32S, u64>(u64(0x7fffffff))), u64(0x7fffffff));
  EXPECT_EQ((un<Extend32S, u64>(u64(0x80000000))), u64(0xffffffff80000000));
  EXPECT_EQ((un<Extend32S, u64>(u64(0x0123456780000000))), u64(0xffffffff80000000));
  EXPECT_EQ((un<Extend32S, u64>(u64(0xfedcba987fffffff))), u64(0x7fffffff));
}

// ---------------------------------------------------------------------------
// Float comparisons: IEEE (NaN unordered, -0 == +0)

TEST(Numerics, FloatCompare) {
  const float nanf = f32(kF32Canon);
  const double nand = f64(kF64Canon);
  EXPECT_EQ((bin<Eq, u32>(nanf, nanf)), 0u);
  EXPECT_EQ((bin<Ne, u32>(nanf, nanf)), 1u);
  EXPECT_EQ((bin<Lt, u32>(nanf, 0.0f)), 0u);
  EXPECT_EQ((bin<Gt, u32>(nanf, 0.0f)), 0u);
  EXPECT_EQ((bin<Le, u32>(nanf, nanf)), 0u);
  EXPECT_EQ((bin<Ge, u32>(0.0f, nanf)), 0u);
  EXPECT_EQ((bin<Eq, u32>(-0.0f, 0.0f)), 1u);
  EXPECT_EQ((bin<Lt, u32>(-0.0f, 0.0f)), 0u);
  EXPECT_EQ((bin<Le, u32>(-0.0f, 0.0f)), 1u);
  EXPECT_EQ((bin<Lt, u32>(-1.0f, 0.0f)), 1u);  // signed, not bit order
  EXPECT_EQ((bin<Lt, u32>(-kInfF, kInfF)), 1u);
  EXPECT_EQ((bin<Eq, u32>(nand, nand)), 0u);
  EXPECT_EQ((bin<Ne, u32>(nand, 1.0)), 1u);
  EXPECT_EQ((bin<Ge, u32>(nand, nand)), 0u);
  EXPECT_EQ((bin<Eq, u32>(-0.0, 0.0)), 1u);
  EXPECT_EQ((bin<Gt, u32>(0.0, -0.0)), 0u);
  EXPECT_EQ((bin<Lt, u32>(-2.0, -1.0)), 1u);
}

// ---------------------------------------------------------------------------
// Float arithmetic: NaN in -> NaN out

TEST(Numerics, FloatArithmeticNaN) {
  const float snan = f32(0x7fa00000u);
  const double snand = f64(0x7ff4000000000000ull);
  EXPECT_TRUE(is_arith_nan(bin<Add, float>(snan, 1.0f)));
  EXPECT_TRUE(is_arith_nan(bin<Sub, float>(1.0f, snan)));
  EXPECT_TRUE(is_arith_nan(bin<Mul, float>(snan, 0.0f)));
  EXPECT_TRUE(is_arith_nan(bin<FDiv, float>(snan, 1.0f)));
  EXPECT_TRUE(is_arith_nan(bin<Add, double>(snand, 1.0)));
  EXPECT_TRUE(is_arith_nan(bin<Mul, double>(1.0, snand)));
  EXPECT_TRUE(is_arith_nan(bin<Sub, float>(kInfF, kInfF)));
  EXPECT_TRUE(is_arith_nan(bin<Mul, double>(kInfD, 0.0)));
  EXPECT_TRUE(is_arith_nan(bin<FDiv, double>(0.0, 0.0)));
  EXPECT_TRUE(is_arith_nan(un<Sqrt, float>(-1.0f)));
  EXPECT_TRUE(is_arith_nan(un<Sqrt, double>(snand)));
  EXPECT_EQ(bits(un<Sqrt, float>(-0.0f)), 0x80000000u);
  EXPECT_EQ((bin<FDiv, float>(1.0f, -0.0f)), -kInfF);
  EXPECT_EQ((un<Sqrt, double>(4.0)), 2.0);
  // Double rounding would get these wrong (float_exprs.wast, f32 ops must not
  // be done in higher precision).
  EXPECT_EQ(bits(bin<Add, float>(f32(0x3f800001u), f32(0x33800000u))), 0x3f800002u);
  EXPECT_EQ(bits(bin<Mul, float>(f32(0x3f800001u), f32(0x3f800001u))), 0x3f800002u);
}

// ---------------------------------------------------------------------------
// abs / neg / copysign: pure sign-bit operations, NaN payloads untouched
// (https://webassembly.github.io/spec/core/exec/numerics.html#op-fneg)

TEST(Numerics, SignOpsKeepNaNPayload) {
  EXPECT_EQ(bits(un<Neg, float>(f32(0x7fa00000u))), 0xffa00000u);  // signaling stays signaling
  EXPECT_EQ(bits(un<Neg, float>(f32(0xffc00001u))), 0x7fc00001u);
  EXPECT_EQ(bits(un<Abs, float>(f32(0xffa00001u))), 0x7fa00001u);
  EXPECT_EQ(bits(un<Abs, float>(f32(0x7fa00001u))), 0x7fa00001u);
  EXPECT_EQ(bits(un<Neg, double>(f64(0x7ff4000000000001ull))), 0xfff4000000000001ull);
  EXPECT_EQ(bits(un<Abs, double>(f64(0xfff4000000000001ull))), 0x7ff4000000000001ull);
  EXPECT_EQ(bits(bin<Copysign, float>(f32(0x7fa00000u), -1.0f)), 0xffa00000u);
  EXPECT_EQ(bits(bin<Copysign, float>(f32(0xffa00000u), 1.0f)), 0x7fa00000u);
  EXPECT_EQ(bits(bin<Copysign, float>(1.0f, f32(0xffc00000u))), 0xbf800000u);  // sign of a NaN counts
  EXPECT_EQ(bits(bin<Copysign, double>(f64(0x7ff4000000000000ull), -0.0)), 0xfff4000000000000ull);
  EXPECT_EQ(bits(bin<Copysign, double>(2.0, f64(0xfff8000000000000ull))), bits(-2.0));
  EXPECT_EQ(bits(un<Neg, float>(0.0f)), 0x80000000u);
  EXPECT_EQ(bits(un<Abs, double>(-0.0)), 0u);
  EXPECT_EQ(bits(bin<Copysign, float>(-kInfF, 0.0f)), bits(kInfF));
}

// ---------------------------------------------------------------------------
// min / max (https://webassembly.github.io/spec/core/exec/numerics.html#op-fmin)

TEST(Numerics, MinMaxSignedZeros) {
  EXPECT_EQ(bits(bin<FMin, float>(-0.0f, 0.0f)), 0x80000000u);
  EXPECT_EQ(bits(bin<FMin, float>(0.0f, -0.0f)), 0x80000000u);
  EXPECT_EQ(bits(bin<FMax, float>(-0.0f, 0.0f)), 0u);
  EXPECT_EQ(bits(bin<FMax, float>(0.0f, -0.0f)), 0u);
  EXPECT_EQ(bits(bin<FMin, double>(-0.0, 0.0)), 0x8000000000000000ull);
  EXPECT_EQ(bits(bin<FMin, double>(0.0, -0.0)), 0x8000000000000000ull);
  EXPECT_EQ(bits(bin<FMax, double>(-0.0, 0.0)), 0ull);
  EXPECT_EQ(bits(bin<FMax, double>(0.0, -0.0)), 0ull);
  EXPECT_EQ(bits(bin<FMin, float>(-0.0f, -0.0f)), 0x80000000u);
  EXPECT_EQ(bits(bin<FMax, float>(-0.0f, -0.0f)), 0x80000000u);
  EXPECT_EQ((bin<FMin, float>(1.0f, 2.0f)), 1.0f);
  EXPECT_EQ((bin<FMin, float>(2.0f, 1.0f)), 1.0f);
  EXPECT_EQ((bin<FMax, float>(1.0f, 2.0f)), 2.0f);
  EXPECT_EQ((bin<FMax, double>(-kInfD, -1.0)), -1.0);
  EXPECT_EQ((bin<FMin, double>(-kInfD, -1.0)), -kInfD);
  EXPECT_EQ((bin<FMax, double>(kInfD, 3.0)), kInfD);
}

TEST(Numerics, MinMaxNaN) {
  const float qnan = f32(kF32Canon);
  const float snan = f32(0x7fa00000u);
  const float nnan = f32(0xffc00000u);
  for (float x : {0.0f, -0.0f, 1.0f, -kInfF, kInfF}) {
    EXPECT_TRUE(is_arith_nan(bin<FMin, float>(qnan, x)));
    EXPECT_TRUE(is_arith_nan(bin<FMin, float>(x, qnan)));
    EXPECT_TRUE(is_arith_nan(bin<FMax, float>(qnan, x)));
    EXPECT_TRUE(is_arith_nan(bin<FMax, float>(x, qnan)));
    EXPECT_TRUE(is_arith_nan(bin<FMin, float>(snan, x)));
    EXPECT_TRUE(is_arith_nan(bin<FMax, float>(x, snan)));
    // A canonical input gives a canonical result (either sign).
    EXPECT_EQ(bits(bin<FMin, float>(x, nnan)) & 0x7fffffffu, kF32Canon);
    EXPECT_EQ(bits(bin<FMax, float>(qnan, x)) & 0x7fffffffu, kF32Canon);
  }
  EXPECT_TRUE(is_arith_nan(bin<FMin, float>(snan, snan)));
  EXPECT_TRUE(is_arith_nan(bin<FMax, float>(qnan, snan)));
  const double qnand = f64(kF64Canon);
  const double snand = f64(0x7ff4000000000000ull);
  for (double x : {0.0, -0.0, 1.0, -kInfD, kInfD}) {
    EXPECT_TRUE(is_arith_nan(bin<FMin, double>(qnand, x)));
    EXPECT_TRUE(is_arith_nan(bin<FMax, double>(x, qnand)));
    EXPECT_TRUE(is_arith_nan(bin<FMin, double>(x, snand)));
    EXPECT_TRUE(is_arith_nan(bin<FMax, double>(snand, x)));
    EXPECT_EQ(bits(bin<FMin, double>(x, qnand)) & 0x7fffffffffffffffull, kF64Canon);
  }
}

// ---------------------------------------------------------------------------
// Rounding to integral (https://webassembly.github.io/spec/core/exec/numerics.html#op-fnearest)

TEST(Numerics, NearestTiesToEven) {
  EXPECT_EQ(bits(un<Nearest, float>(0.5f)), 0u);
  EXPECT_EQ(bits(un<Nearest, float>(-0.5f)), 0x80000000u);
  EXPECT_EQ((un<Nearest, float>(1.5f)), 2.0f);
  EXPECT_EQ((un<Nearest, float>(2.5f)), 2.0f);
  EXPECT_EQ((un<Nearest, float>(-1.5f)), -2.0f);
  EXPECT_EQ((un<Nearest, float>(-2.5f)), -2.0f);
  EXPECT_EQ((un<Nearest, float>(3.5f)), 4.0f);
  EXPECT_EQ((un<Nearest, float>(0.49999997f)), 0.0f);
  EXPECT_EQ(bits(un<Nearest, float>(-0.0f)), 0x80000000u);
  EXPECT_EQ(bits(un<Nearest, float>(-0.25f)), 0x80000000u);
  // float_exprs.wast: values at 2^23 are already integral.
  EXPECT_EQ((un<Nearest, float>(8388609.0f)), 8388609.0f);
  EXPECT_EQ((un<Nearest, float>(-8388609.0f)), -8388609.0f);
  EXPECT_EQ((un<Nearest, float>(kInfF)), kInfF);
  EXPECT_TRUE(is_arith_nan(un<Nearest, float>(f32(0x7fa00000u))));
  EXPECT_EQ(bits(un<Nearest, double>(0.5)), 0ull);
  EXPECT_EQ(bits(un<Nearest, double>(-0.5)), 0x8000000000000000ull);
  EXPECT_EQ((un<Nearest, double>(1.5)), 2.0);
  EXPECT_EQ((un<Nearest, double>(2.5)), 2.0);
  EXPECT_EQ((un<Nearest, double>(-3.5)), -4.0);
  EXPECT_EQ((un<Nearest, double>(4503599627370497.0)), 4503599627370497.0);
  EXPECT_EQ((un<Nearest, double>(-4503599627370497.0)), -4503599627370497.0);
  EXPECT_EQ((un<Nearest, double>(0x1.fffffffffffffp-2)), 0.0);  // 0.49999999999999994
}

TEST(Numerics, CeilFloorTrunc) {
  EXPECT_EQ(bits(un<Ceil, float>(-0.5f)), 0x80000000u);
  EXPECT_EQ((un<Ceil, float>(0.5f)), 1.0f);
  EXPECT_EQ((un<Ceil, float>(-1.5f)), -1.0f);
  EXPECT_EQ((un<Floor, float>(-0.5f)), -1.0f);
  EXPECT_EQ(bits(un<Floor, float>(-0.0f)), 0x80000000u);
  EXPECT_EQ((un<Floor, float>(0.5f)), 0.0f);
  EXPECT_EQ(bits(un<Trunc, float>(-0.5f)), 0x80000000u);
  EXPECT_EQ((un<Trunc, float>(1.9f)), 1.0f);
  EXPECT_EQ((un<Trunc, float>(-1.9f)), -1.0f);
  EXPECT_EQ(bits(un<Ceil, double>(-0.5)), 0x8000000000000000ull);
  EXPECT_EQ((un<Floor, double>(-0.5)), -1.0);
  EXPECT_EQ(bits(un<Trunc, double>(-0.9)), 0x8000000000000000ull);
  EXPECT_EQ((un<Ceil, double>(4503599627370497.0)), 4503599627370497.0);
  EXPECT_EQ((un<Floor, double>(-4503599627370497.0)), -4503599627370497.0);
  EXPECT_EQ((un<Ceil, float>(-kInfF)), -kInfF);
  EXPECT_TRUE(is_arith_nan(un<Ceil, float>(f32(0x7fa00000u))));
  EXPECT_TRUE(is_arith_nan(un<Floor, double>(f64(0x7ff4000000000000ull))));
  EXPECT_TRUE(is_arith_nan(un<Trunc, double>(f64(kF64Canon))));
  EXPECT_TRUE(is_arith_nan(un<Trunc, float>(f32(0xffa00000u))));
  EXPECT_TRUE(is_arith_nan(un<Ceil, double>(f64(0xfff0000000000001ull))));
  EXPECT_TRUE(is_arith_nan(un<Nearest, double>(f64(0x7ff4000000000000ull))));
  // A canonical NaN stays canonical.
  EXPECT_EQ(bits(un<Floor, float>(f32(kF32Canon))), kF32Canon);
}

// ---------------------------------------------------------------------------
// Trapping float -> int truncation
// (https://webassembly.github.io/spec/core/exec/numerics.html#op-trunc-s)

template <class R, class A>
void expect_common_traps(bool is_signed) {
  auto run = [&](A x) { return is_signed ? trap_un<TruncS, R>(x) : trap_un<TruncU, R>(x); };
  const A inf = std::numeric_limits<A>::infinity();
  EXPECT_TRAP(run(std::numeric_limits<A>::quiet_NaN()), InvalidConversion);
  EXPECT_TRAP(run(-std::numeric_limits<A>::quiet_NaN()), InvalidConversion);
  EXPECT_TRAP(run(std::numeric_limits<A>::signaling_NaN()), InvalidConversion);
  EXPECT_TRAP(run(inf), IntegerOverflow);
  EXPECT_TRAP(run(-inf), IntegerOverflow);
  EXPECT_OK(run(A(0)), 0);
  EXPECT_OK(run(A(-0.0)), 0);
  EXPECT_OK(run(A(-0.9)), 0);  // truncates to -0, which is 0 for both
  EXPECT_OK(run(A(1.9)), 1);
  EXPECT_OK(run(std::numeric_limits<A>::denorm_min()), 0);
}

TEST(Numerics, TruncI32F32) {
  expect_common_traps<u32, float>(true);
  expect_common_traps<u32, float>(false);
  // signed: valid iff -2147483904 < x < 2147483648
  EXPECT_OK((trap_un<TruncS, u32>(2147483520.0f)), 2147483520u);  // largest float < 2^31
  EXPECT_TRAP((trap_un<TruncS, u32>(2147483648.0f)), IntegerOverflow);
  EXPECT_OK((trap_un<TruncS, u32>(-2147483648.0f)), kMin32);
  EXPECT_TRAP((trap_un<TruncS, u32>(-2147483904.0f)), IntegerOverflow);
  EXPECT_OK((trap_un<TruncS, u32>(-1.9f)), u32(-1));
  // unsigned: valid iff -1 < x < 4294967296
  EXPECT_OK((trap_un<TruncU, u32>(4294967040.0f)), 4294967040u);
  EXPECT_TRAP((trap_un<TruncU, u32>(4294967296.0f)), IntegerOverflow);
  EXPECT_OK((trap_un<TruncU, u32>(-0.99999994f)), 0u);
  EXPECT_TRAP((trap_un<TruncU, u32>(-1.0f)), IntegerOverflow);
  EXPECT_OK((trap_un<TruncU, u32>(2147483648.0f)), kMin32);
}

TEST(Numerics, TruncI32F64) {
  expect_common_traps<u32, double>(true);
  expect_common_traps<u32, double>(false);
  // signed: valid iff -2147483649 < x < 2147483648 (f64 has fractions here)
  EXPECT_OK((trap_un<TruncS, u32>(2147483647.0)), 0x7fffffffu);
  EXPECT_OK((trap_un<TruncS, u32>(2147483647.9999998)), 0x7fffffffu);
  EXPECT_TRAP((trap_un<TruncS, u32>(2147483648.0)), IntegerOverflow);
  EXPECT_OK((trap_un<TruncS, u32>(-2147483648.0)), kMin32);
  EXPECT_OK((trap_un<TruncS, u32>(-2147483648.9)), kMin32);
  EXPECT_OK((trap_un<TruncS, u32>(-2147483648.9999995)), kMin32);
  EXPECT_TRAP((trap_un<TruncS, u32>(-2147483649.0)), IntegerOverflow);
  EXPECT_TRAP((trap_un<TruncS, u32>(1e30)), IntegerOverflow);
  // unsigned: valid iff -1 < x < 4294967296
  EXPECT_OK((trap_un<TruncU, u32>(4294967295.0)), 0xffffffffu);
  EXPECT_OK((trap_un<TruncU, u32>(4294967295.9999995)), 0xffffffffu);
  EXPECT_TRAP((trap_un<TruncU, u32>(4294967296.0)), IntegerOverflow);
  EXPECT_OK((trap_un<TruncU, u32>(-0.9999999999999999)), 0u);
  EXPECT_TRAP((trap_un<TruncU, u32>(-1.0)), IntegerOverflow);
  EXPECT_OK((trap_un<TruncU, u32>(1e8)), 100000000u);
}

TEST(Numerics, TruncI64F32) {
  expect_common_traps<u64, float>(true);
  expect_common_traps<u64, float>(false);
  EXPECT_OK((trap_un<TruncS, u64>(9223371487098961920.0f)), u64(9223371487098961920ull));
  EXPECT_TRAP((trap_un<TruncS, u64>(9223372036854775808.0f)), IntegerOverflow);
  EXPECT_OK((trap_un<TruncS, u64>(-9223372036854775808.0f)), kMin64);
  EXPECT_TRAP((trap_un<TruncS, u64>(-9223373136366403584.0f)), IntegerOverflow);
  EXPECT_OK((trap_un<TruncS, u64>(-4294967296.0f)), u64(-4294967296ll));
  EXPECT_OK((trap_un<TruncU, u64>(18446742974197923840.0f)), u64(18446742974197923840ull));
  EXPECT_TRAP((trap_un<TruncU, u64>(18446744073709551616.0f)), IntegerOverflow);
  EXPECT_OK((trap_un<TruncU, u64>(9223372036854775808.0f)), kMin64);
  EXPECT_OK((trap_un<TruncU, u64>(-0.99999994f)), u64(0));
  EXPECT_TRAP((trap_un<TruncU, u64>(-1.0f)), IntegerOverflow);
}

TEST(Numerics, TruncI64F64) {
  expect_common_traps<u64, double>(true);
  expect_common_traps<u64, double>(false);
  EXPECT_OK((trap_un<TruncS, u64>(9223372036854774784.0)), u64(9223372036854774784ull));
  EXPECT_TRAP((trap_un<TruncS, u64>(9223372036854775808.0)), IntegerOverflow);
  EXPECT_OK((trap_un<TruncS, u64>(-9223372036854775808.0)), kMin64);
  EXPECT_TRAP((trap_un<TruncS, u64>(-9223372036854777856.0)), IntegerOverflow);
  EXPECT_OK((trap_un<TruncS, u64>(4294967296.0)), u64(4294967296));
  EXPECT_OK((trap_un<TruncU, u64>(18446744073709549568.0)), u64(18446744073709549568ull));
  EXPECT_TRAP((trap_un<TruncU, u64>(18446744073709551616.0)), IntegerOverflow);
  EXPECT_OK((trap_un<TruncU, u64>(9223372036854775808.0)), kMin64);
  EXPECT_OK((trap_un<TruncU, u64>(-0.9999999999999999)), u64(0));
  EXPECT_TRAP((trap_un<TruncU, u64>(-1.0)), IntegerOverflow);
  EXPECT_OK((trap_un<TruncU, u64>(1e8)), u64(100000000));
}

// ---------------------------------------------------------------------------
// Saturating truncation (https://webassembly.github.io/spec/core/exec/numerics.html#op-trunc-sat-s)

TEST(Numerics, TruncSat) {
  const float nanf = std::numeric_limits<float>::quiet_NaN();
  const double nand = std::numeric_limits<double>::quiet_NaN();
  // i32 <- f32
  EXPECT_EQ((un<TruncSatS, u32>(nanf)), 0u);
  EXPECT_EQ((un<TruncSatS, u32>(-nanf)), 0u);
  EXPECT_EQ((un<TruncSatS, u32>(kInfF)), 0x7fffffffu);
  EXPECT_EQ((un<TruncSatS, u32>(-kInfF)), kMin32);
  EXPECT_EQ((un<TruncSatS, u32>(2147483648.0f)), 0x7fffffffu);
  EXPECT_EQ((un<TruncSatS, u32>(2147483520.0f)), 2147483520u);
  EXPECT_EQ((un<TruncSatS, u32>(-2147483904.0f)), kMin32);
  EXPECT_EQ((un<TruncSatS, u32>(-2147483648.0f)), kMin32);
  EXPECT_EQ((un<TruncSatS, u32>(-1.9f)), u32(-1));
  EXPECT_EQ((un<TruncSatU, u32>(nanf)), 0u);
  EXPECT_EQ((un<TruncSatU, u32>(kInfF)), 0xffffffffu);
  EXPECT_EQ((un<TruncSatU, u32>(-kInfF)), 0u);
  EXPECT_EQ((un<TruncSatU, u32>(-1.0f)), 0u);
  EXPECT_EQ((un<TruncSatU, u32>(-0.9f)), 0u);
  EXPECT_EQ((un<TruncSatU, u32>(4294967296.0f)), 0xffffffffu);
  EXPECT_EQ((un<TruncSatU, u32>(4294967040.0f)), 4294967040u);
  // i32 <- f64
  EXPECT_EQ((un<TruncSatS, u32>(nand)), 0u);
  EXPECT_EQ((un<TruncSatS, u32>(2147483647.9)), 0x7fffffffu);
  EXPECT_EQ((un<TruncSatS, u32>(2147483648.0)), 0x7fffffffu);
  EXPECT_EQ((un<TruncSatS, u32>(-2147483648.9)), kMin32);
  EXPECT_EQ((un<TruncSatS, u32>(-2147483649.0)), kMin32);
  EXPECT_EQ((un<TruncSatS, u32>(-1e300)), kMin32);
  EXPECT_EQ((un<TruncSatU, u32>(nand)), 0u);
  EXPECT_EQ((un<TruncSatU, u32>(4294967295.9)), 0xffffffffu);
  EXPECT_EQ((un<TruncSatU, u32>(4294967296.0)), 0xffffffffu);
  EXPECT_EQ((un<TruncSatU, u32>(-kInfD)), 0u);
  EXPECT_EQ((un<TruncSatU, u32>(1e300)), 0xffffffffu);
  // i64 <- f32
  EXPECT_EQ((un<TruncSatS, u64>(nanf)), u64(0));
  EXPECT_EQ((un<TruncSatS, u64>(9223372036854775808.0f)), u64(0x7fffffffffffffff));
  EXPECT_EQ((un<TruncSatS, u64>(-9223373136366403584.0f)), kMin64);
  EXPECT_EQ((un<TruncSatS, u64>(-kInfF)), kMin64);
  EXPECT_EQ((un<TruncSatS, u64>(9223371487098961920.0f)), u64(9223371487098961920ull));
  EXPECT_EQ((un<TruncSatU, u64>(18446744073709551616.0f)), u64(-1));
  EXPECT_EQ((un<TruncSatU, u64>(18446742974197923840.0f)), u64(18446742974197923840ull));
  EXPECT_EQ((un<TruncSatU, u64>(-1.0f)), u64(0));
  EXPECT_EQ((un<TruncSatU, u64>(nanf)), u64(0));
  // i64 <- f64
  EXPECT_EQ((un<TruncSatS, u64>(nand)), u64(0));
  EXPECT_EQ((un<TruncSatS, u64>(9223372036854775808.0)), u64(0x7fffffffffffffff));
  EXPECT_EQ((un<TruncSatS, u64>(9223372036854774784.0)), u64(9223372036854774784ull));
  EXPECT_EQ((un<TruncSatS, u64>(-9223372036854775808.0)), kMin64);
  EXPECT_EQ((un<TruncSatS, u64>(-9223372036854777856.0)), kMin64);
  EXPECT_EQ((un<TruncSatS, u64>(kInfD)), u64(0x7fffffffffffffff));
  EXPECT_EQ((un<TruncSatU, u64>(18446744073709551616.0)), u64(-1));
  EXPECT_EQ((un<TruncSatU, u64>(18446744073709549568.0)), u64(18446744073709549568ull));
  EXPECT_EQ((un<TruncSatU, u64>(-kInfD)), u64(0));
  EXPECT_EQ((un<TruncSatU, u64>(-0.9)), u64(0));
  EXPECT_EQ((un<TruncSatU, u64>(nand)), u64(0));
}

// ---------------------------------------------------------------------------
// int -> float conversions round once, to nearest-even (conversions.wast)
// (https://webassembly.github.io/spec/core/exec/numerics.html#op-convert-u)

TEST(Numerics, ConvertI32) {
  EXPECT_EQ((un<ConvertS, float>(u32(-1))), -1.0f);
  EXPECT_EQ((un<ConvertS, float>(kMin32)), -2147483648.0f);
  EXPECT_EQ((un<ConvertS, float>(16777217u)), 16777216.0f);
  EXPECT_EQ((un<ConvertS, float>(u32(-16777217))), -16777216.0f);
  EXPECT_EQ((un<ConvertS, float>(16777219u)), 16777220.0f);
  EXPECT_EQ((un<ConvertS, double>(kMin32)), -2147483648.0);
  EXPECT_EQ((un<ConvertS, double>(0x7fffffffu)), 2147483647.0);
  EXPECT_EQ((un<ConvertU, float>(0x7fffffffu)), 2147483648.0f);
  EXPECT_EQ((un<ConvertU, float>(kMin32)), 2147483648.0f);
  EXPECT_EQ((un<ConvertU, float>(0x12345678u)), 0x1.234568p+28f);
  EXPECT_EQ((un<ConvertU, float>(0xffffffffu)), 4294967296.0f);
  EXPECT_EQ((un<ConvertU, float>(0x80000080u)), 0x1.000000p+31f);
  EXPECT_EQ((un<ConvertU, float>(0x80000081u)), 0x1.000002p+31f);
  EXPECT_EQ((un<ConvertU, float>(0x80000082u)), 0x1.000002p+31f);
  EXPECT_EQ((un<ConvertU, float>(0xfffffe80u)), 0x1.fffffcp+31f);
  EXPECT_EQ((un<ConvertU, float>(0xfffffe81u)), 0x1.fffffep+31f);
  EXPECT_EQ((un<ConvertU, float>(0xfffffe82u)), 0x1.fffffep+31f);
  EXPECT_EQ((un<ConvertU, double>(0xffffffffu)), 4294967295.0);
  EXPECT_EQ((un<ConvertU, double>(kMin32)), 2147483648.0);
}

TEST(Numerics, ConvertI64S) {
  EXPECT_EQ((un<ConvertS, float>(u64(-1))), -1.0f);
  EXPECT_EQ((un<ConvertS, float>(u64(0x7fffffffffffffff))), 9223372036854775807.0f);
  EXPECT_EQ((un<ConvertS, float>(kMin64)), -9223372036854775808.0f);
  EXPECT_EQ((un<ConvertS, float>(u64(314159265358979))), 0x1.1db9e8p+48f);
  EXPECT_EQ((un<ConvertS, float>(u64(0x7fffff4000000001))), 0x1.fffffep+62f);
  EXPECT_EQ((un<ConvertS, float>(u64(0x8000004000000001))), -0x1.fffffep+62f);
  EXPECT_EQ((un<ConvertS, float>(u64(0x0020000020000001))), 0x1.000002p+53f);
  EXPECT_EQ((un<ConvertS, float>(u64(0xffdfffffdfffffff))), -0x1.000002p+53f);
  EXPECT_EQ((un<ConvertS, double>(u64(9007199254740993))), 9007199254740992.0);
  EXPECT_EQ((un<ConvertS, double>(u64(-9007199254740993))), -9007199254740992.0);
  EXPECT_EQ((un<ConvertS, double>(u64(9007199254740995))), 9007199254740996.0);
  EXPECT_EQ((un<ConvertS, double>(kMin64)), -9223372036854775808.0);
}

TEST(Numerics, ConvertI64U) {
  EXPECT_EQ((un<ConvertU, float>(u64(0x7fffffffffffffff))), 9223372036854775807.0f);
  EXPECT_EQ((un<ConvertU, float>(kMin64)), 9223372036854775808.0f);
  EXPECT_EQ((un<ConvertU, float>(u64(-1))), 18446744073709551616.0f);
  EXPECT_EQ((un<ConvertU, float>(u64(16777217))), 16777216.0f);
  EXPECT_EQ((un<ConvertU, float>(u64(16777219))), 16777220.0f);
  // Double rounding (u64 -> f64 -> f32) gets these wrong.
  EXPECT_EQ((un<ConvertU, float>(u64(0x0020000020000001))), 0x1.000002p+53f);
  EXPECT_EQ((un<ConvertU, float>(u64(0x0020000020000001))), 9007200328482816.0f);
  EXPECT_EQ((un<ConvertU, float>(u64(0x7fffffbfffffffff))), 0x1.fffffep+62f);
  EXPECT_EQ((un<ConvertU, float>(u64(0x8000008000000001))), 0x1.000002p+63f);
  EXPECT_EQ((un<ConvertU, float>(u64(0xfffffe8000000001))), 0x1.fffffep+63f);
  EXPECT_EQ((un<ConvertU, double>(u64(0x7fffffffffffffff))), 9223372036854775807.0);
  EXPECT_EQ((un<ConvertU, double>(kMin64)), 9223372036854775808.0);
  EXPECT_EQ((un<ConvertU, double>(u64(-1))), 18446744073709551616.0);
  EXPECT_EQ((un<ConvertU, double>(u64(0x8000000000000400))), 0x1.0000000000000p+63);
  EXPECT_EQ((un<ConvertU, double>(u64(0x8000000000000401))), 0x1.0000000000001p+63);
  EXPECT_EQ((un<ConvertU, double>(u64(0x8000000000000402))), 0x1.0000000000001p+63);
  EXPECT_EQ((un<ConvertU, double>(u64(0xfffffffffffff400))), 0x1.ffffffffffffep+63);
  EXPECT_EQ((un<ConvertU, double>(u64(0xfffffffffffff401))), 0x1.fffffffffffffp+63);
  EXPECT_EQ((un<ConvertU, double>(u64(0xfffffffffffff402))), 0x1.fffffffffffffp+63);
  EXPECT_EQ((un<ConvertU, double>(u64(9007199254740993))), 9007199254740992.0);
  EXPECT_EQ((un<ConvertU, double>(u64(9007199254740995))), 9007199254740996.0);
}

// ---------------------------------------------------------------------------
// Demote / promote / reinterpret

TEST(Numerics, DemotePromote) {
  EXPECT_EQ(bits(un<Promote, double>(-0.0f)), 0x8000000000000000ull);
  EXPECT_EQ((un<Promote, double>(0x1p-149f)), 0x1p-149);
  EXPECT_EQ((un<Promote, double>(0x1.fffffep+127f)), 0x1.fffffep+127);
  EXPECT_EQ((un<Promote, double>(0x1.8f867ep+125f)), 6.6382536710104395e+37);
  EXPECT_EQ((un<Promote, double>(-kInfF)), -kInfD);
  // nan -> nan:canonical, nan:0x200000 -> nan:arithmetic (conversions.wast)
  EXPECT_EQ(bits(un<Promote, double>(f32(kF32Canon))) & 0x7fffffffffffffffull, kF64Canon);
  EXPECT_EQ(bits(un<Promote, double>(f32(0xffc00000u))) & 0x7fffffffffffffffull, kF64Canon);
  EXPECT_TRUE(is_arith_nan(un<Promote, double>(f32(0x7fa00000u))));
  EXPECT_TRUE(is_arith_nan(un<Promote, double>(f32(0xffa00000u))));

  EXPECT_EQ(bits(un<Demote, float>(-0.0)), 0x80000000u);
  EXPECT_EQ(bits(un<Demote, float>(-0x0.0000000000001p-1022)), 0x80000000u);
  EXPECT_EQ((un<Demote, float>(0x1.fffffe0000000p-127)), 0x1p-126f);
  EXPECT_EQ((un<Demote, float>(0x1.fffffdfffffffp-127)), 0x1.fffffcp-127f);
  EXPECT_EQ((un<Demote, float>(0x1p-149)), 0x1p-149f);
  EXPECT_EQ((un<Demote, float>(0x1.fffffd0000000p+127)), 0x1.fffffcp+127f);
  EXPECT_EQ((un<Demote, float>(0x1.fffffd0000001p+127)), 0x1.fffffep+127f);
  EXPECT_EQ((un<Demote, float>(0x1.fffffefffffffp+127)), 0x1.fffffep+127f);
  EXPECT_EQ((un<Demote, float>(0x1.ffffffp+127)), kInfF);
  EXPECT_EQ((un<Demote, float>(-0x1.ffffffp+127)), -kInfF);
  EXPECT_EQ((un<Demote, float>(0x1.0000010000000p+0)), 1.0f);  // tie -> even
  EXPECT_EQ((un<Demote, float>(0x1.0000030000000p+0)), 0x1.000004p+0f);
  EXPECT_EQ((un<Demote, float>(0x1p-150)), 0.0f);  // tie -> even (0)
  EXPECT_EQ(bits(un<Demote, float>(f64(kF64Canon))) & 0x7fffffffu, kF32Canon);
  EXPECT_TRUE(is_arith_nan(un<Demote, float>(f64(0x7ff4000000000000ull))));
  EXPECT_TRUE(is_arith_nan(un<Demote, float>(f64(0x7ff0000000000001ull))));  // low payload
}

TEST(Numerics, Reinterpret) {
  EXPECT_EQ((un<Reinterpret, u32>(-0.0f)), 0x80000000u);
  EXPECT_EQ((un<Reinterpret, u32>(f32(0x7fa00001u))), 0x7fa00001u);  // sNaN bits preserved
  EXPECT_EQ((un<Reinterpret, u64>(f64(0xfff4000000000001ull))), 0xfff4000000000001ull);
  EXPECT_EQ(bits(un<Reinterpret, float>(0x7fa00001u)), 0x7fa00001u);
  EXPECT_EQ(bits(un<Reinterpret, double>(0x7ff4000000000001ull)), 0x7ff4000000000001ull);
  EXPECT_EQ((un<Reinterpret, float>(0x3f800000u)), 1.0f);
  EXPECT_EQ((un<Reinterpret, u64>(1.0)), 0x3ff0000000000000ull);
}

// The interpreter relies on these flags to choose the calling form.
static_assert(!Add::kTraps && !Clz::kTraps && !TruncSatS::kTraps && !FMin::kTraps);
static_assert(DivS::kTraps && DivU::kTraps && RemS::kTraps && RemU::kTraps);
static_assert(TruncS::kTraps && TruncU::kTraps);

}  // namespace
}  // namespace wzvm::vm::num
