// fp8_convert.hpp on the host, where every code can be checked: the GPU kernels and the CPU
// reference share these functions, so what holds here holds for their arithmetic (the devices'
// f16 multiply and NVIDIA's conversion instruction aside, which the GPU suite covers).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include "float_convert.hpp"  // and through it fp8_convert.hpp

namespace {

struct Format {
  bool fnuz;
  int bias;
  double largest;
  const char* name;
};
const Format kFormats[] = {{false, 7, 448.0, "e4m3fn"}, {true, 8, 240.0, "e4m3fnuz"}};

// The formats' definitions, written out independently of the code under test.
bool is_nan_code(uint32_t c, const Format& f) { return f.fnuz ? c == 0x80u : (c & 0x7fu) == 0x7fu; }
double value_of(uint32_t c, const Format& f) {
  const int e = static_cast<int>((c >> 3) & 15u), m = static_cast<int>(c & 7u);
  const double mag = e == 0 ? std::ldexp(m / 8.0, 1 - f.bias) : std::ldexp(1.0 + m / 8.0, e - f.bias);
  return (c & 0x80u) ? -mag : mag;
}

TEST(Fp8Convert, EveryCodeDecodes) {
  for (const Format& f : kFormats)
    for (uint32_t c = 0; c < 256; ++c) {
      const float got = ac_fp8::to_float(c, f.fnuz);
      if (is_nan_code(c, f)) {
        EXPECT_TRUE(std::isnan(got)) << f.name << " code " << c;
        continue;
      }
      EXPECT_EQ(static_cast<double>(got), value_of(c, f)) << f.name << " code " << c;
    }
  EXPECT_EQ(ac_fp8::to_float(0x7e, false), 448.f);
  EXPECT_EQ(ac_fp8::to_float(0x7f, true), 240.f);
  EXPECT_EQ(ac_fp8::to_float(0x01, false), std::ldexp(1.f, -9));  // the smallest subnormal
  EXPECT_EQ(ac_fp8::to_float(0x01, true), std::ldexp(1.f, -10));
}

// The kernels' path: two codes placed in an f16 pair (value times 2^-8 or 2^-7), times the
// unscale, for every pair of codes (each lane's neighbour must not leak into it).
TEST(Fp8Convert, EveryPairOfCodesThroughF16) {
  for (const Format& f : kFormats)
    for (uint32_t lo = 0; lo < 256; ++lo)
      for (uint32_t hi = 0; hi < 256; ++hi) {
        const uint32_t pair = ac_fp8::scaled_f16x2(ac_fp8::spread(lo | hi << 8), f.fnuz);
        const uint32_t codes[2] = {lo, hi};
        for (int lane = 0; lane < 2; ++lane) {
          const uint16_t h = static_cast<uint16_t>(pair >> (16 * lane));
          const double got = static_cast<double>(aiter_compat::cpu::f16_to_float(h)) * ac_fp8::unscale(f.fnuz);
          if (is_nan_code(codes[lane], f)) {
            ASSERT_TRUE(std::isnan(got)) << f.name << " codes " << lo << ", " << hi << " lane " << lane;
          } else {
            ASSERT_EQ(got, value_of(codes[lane], f)) << f.name << " codes " << lo << ", " << hi << " lane " << lane;
          }
        }
      }
  // The unscale as an f16 pair is the float unscale in both lanes.
  for (const Format& f : kFormats) {
    const uint32_t u = ac_fp8::unscale_f16x2(f.fnuz);
    EXPECT_EQ(aiter_compat::cpu::f16_to_float(static_cast<uint16_t>(u)), ac_fp8::unscale(f.fnuz));
    EXPECT_EQ(aiter_compat::cpu::f16_to_float(static_cast<uint16_t>(u >> 16)), ac_fp8::unscale(f.fnuz));
  }
}

// The nearest code by value, ties to the even code (the one whose lowest bit is 0), saturating;
// found by search over every finite code.
uint32_t nearest_code(double x, const Format& f) {
  if (std::isnan(x)) return f.fnuz ? 0x80u : 0x7fu;
  const double mag = std::min(std::fabs(x), f.largest);
  uint32_t best = 0;
  double best_err = std::numeric_limits<double>::infinity();
  for (uint32_t c = 0; c < 0x80u; ++c) {
    if (is_nan_code(c, f)) continue;
    const double err = std::fabs(value_of(c, f) - mag);
    if (err < best_err || (err == best_err && (c & 1u) == 0)) best = c, best_err = err;
  }
  if (best == 0) return f.fnuz ? 0u : (std::signbit(x) ? 0x80u : 0u);  // fnuz has no negative zero
  return (std::signbit(x) ? 0x80u : 0u) | best;
}

TEST(Fp8Convert, EncodesToTheNearestCode) {
  for (const Format& f : kFormats) {
    // Every code, the midpoints between neighbours and points just off them.
    for (uint32_t c = 0; c + 1 < 0x80u; ++c) {
      if (is_nan_code(c, f) || is_nan_code(c + 1, f)) continue;
      const double a = value_of(c, f), b = value_of(c + 1, f), mid = (a + b) / 2;
      for (double x : {a, b, mid, std::nextafter(mid, 0.0), std::nextafter(mid, 1e9)})
        for (double s : {1.0, -1.0}) {
          const float v = static_cast<float>(s * x);
          if (static_cast<double>(v) != s * x) continue;  // not a float: skip
          ASSERT_EQ(ac_fp8::from_float(v, f.fnuz), nearest_code(v, f)) << f.name << " x " << v;
        }
    }
    // Random floats over the whole range, and beyond it.
    std::mt19937 rng(20261203u);
    std::uniform_real_distribution<double> exponent(-14.0, 12.0), sign(-1.0, 1.0);
    for (int i = 0; i < 200000; ++i) {
      const float v = static_cast<float>((sign(rng) < 0 ? -1.0 : 1.0) * std::exp2(exponent(rng)));
      ASSERT_EQ(ac_fp8::from_float(v, f.fnuz), nearest_code(v, f)) << f.name << " x " << v;
    }
    const float inf = std::numeric_limits<float>::infinity();
    EXPECT_EQ(ac_fp8::from_float(inf, f.fnuz), f.fnuz ? 0x7fu : 0x7eu) << f.name;   // saturates
    EXPECT_EQ(ac_fp8::from_float(-inf, f.fnuz), f.fnuz ? 0xffu : 0xfeu) << f.name;
    EXPECT_TRUE(is_nan_code(ac_fp8::from_float(std::nanf(""), f.fnuz), f)) << f.name;
    EXPECT_EQ(ac_fp8::from_float(std::numeric_limits<float>::denorm_min(), f.fnuz), 0u) << f.name;
    EXPECT_EQ(ac_fp8::from_float(-0.f, f.fnuz), f.fnuz ? 0u : 0x80u) << f.name;
  }
}

}  // namespace

// The AMD hardware decode (fp8_device.hpp, gfx942 and gfx950): v_cvt_pk_f32_fp8 gives a code's
// value as an f32 (AMD's CDNA3 ISA guide for gfx942's FNUZ codes, CDNA4's for gfx950's OCP
// codes: value_of above, NaN codes NaN), then the kernels keep 16 bits of it. Those two steps
// are exact for every code only if the f32 packs into f16 with v_cvt_pkrtz_f16_f32 (round
// toward zero: a truncation of the mantissa and a rebias, modelled here from the guide) without
// loss, and into bf16 by dropping the low half; both checked here for every code of both formats.
namespace {
namespace pkrtz {
// f32 -> f16 rounding toward zero (normal, subnormal and overflow to the largest finite f16).
uint16_t f32_to_f16_rtz(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t a = bits & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00u;
  const int e = static_cast<int>(a >> 23) - 127;
  if (e > 15) return sign | 0x7bffu;  // toward zero: the largest finite, not infinity
  if (e < -24) return sign;
  const uint32_t mant = (a & 0x7fffffu) | 0x800000u;
  if (e < -14) return sign | static_cast<uint16_t>(mant >> (-e - 1));  // subnormal: mant 2^(e-23) / 2^-24
  return sign | static_cast<uint16_t>(((e + 15) << 10) | ((a >> 13) & 0x3ffu));
}
}  // namespace pkrtz

TEST(Fp8Convert, AmdHardwareDecodeKeepsEveryCodeExactIn16Bits) {
  for (const Format& f : kFormats)
    for (uint32_t c = 0; c < 256; ++c) {
      if (is_nan_code(c, f)) {
        const float nan = std::numeric_limits<float>::quiet_NaN();
        EXPECT_EQ(pkrtz::f32_to_f16_rtz(nan) & 0x7c00u, 0x7c00u) << f.name << " code " << c << ": NaN stays NaN in f16";
        EXPECT_NE(pkrtz::f32_to_f16_rtz(nan) & 0x3ffu, 0u) << f.name << " code " << c;
        continue;
      }
      const float v = static_cast<float>(value_of(c, f));
      const uint16_t h = pkrtz::f32_to_f16_rtz(v);
      EXPECT_EQ(static_cast<double>(aiter_compat::cpu::f16_to_float(h)), value_of(c, f)) << f.name << " code " << c << ": f16 (round toward zero)";
      uint32_t bits;
      std::memcpy(&bits, &v, 4);
      const uint32_t kept = bits & 0xffff0000u;
      float back;
      std::memcpy(&back, &kept, 4);
      EXPECT_EQ(static_cast<double>(back), value_of(c, f)) << f.name << " code " << c << ": bf16 (the high half)";
    }
}

// The model's rounding is toward zero, so the test above could fail: a value between two f16
// values is truncated, and one past the largest is held to it.
TEST(Fp8Convert, RoundTowardZeroModelTruncates) {
  EXPECT_EQ(pkrtz::f32_to_f16_rtz(1.0f + 0x1.ffp-11f), 0x3c00u);  // just under 1 + 2^-10
  EXPECT_EQ(pkrtz::f32_to_f16_rtz(-70000.f), 0xfbffu);
  EXPECT_EQ(pkrtz::f32_to_f16_rtz(0x1p-24f), 0x0001u);
  EXPECT_EQ(pkrtz::f32_to_f16_rtz(0x1.8p-24f), 0x0001u);
  EXPECT_EQ(pkrtz::f32_to_f16_rtz(0x1p-15f), 0x0200u);
}

}  // namespace
