#include "llmserve/kernels/dequantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "tests/unit/model/test_files.h"

namespace llmserve::kernels {
namespace {

using testing::fixture_path;
using testing::read_bytes;

class DequantFixture : public ::testing::TestWithParam<DType> {};

// Raw random blocks vs the gguf package's dequantizer (tests/reference/make_dequant_fixtures.py).
TEST_P(DequantFixture, MatchesGgufPackage) {
  const DType type = GetParam();
  const std::string name(dtype_name(type));
  const auto raw = read_bytes(fixture_path("dequant/" + name + ".raw"));
  const auto exp_bytes = read_bytes(fixture_path("dequant/" + name + ".f32"));
  ASSERT_FALSE(raw.empty()) << name;
  const int64_t n = static_cast<int64_t>(exp_bytes.size() / 4);
  ASSERT_EQ(row_bytes(type, n), raw.size());
  std::vector<float> expected(static_cast<size_t>(n)), got(static_cast<size_t>(n), NAN);
  std::memcpy(expected.data(), exp_bytes.data(), exp_bytes.size());
  ASSERT_TRUE(dtype_can_dequantize(type));
  dequantize_row(type, raw.data(), got.data(), n);
  for (int64_t i = 0; i < n; ++i) {
    const float tol = 1e-6f * std::max(1.0f, std::fabs(expected[i]));
    ASSERT_NEAR(got[i], expected[i], tol) << name << " element " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, DequantFixture,
                         ::testing::Values(DType::F16, DType::BF16, DType::Q4_0, DType::Q4_1,
                                           DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q8_1,
                                           DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K,
                                           DType::Q6_K, DType::Q8_K),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(Dequantize, F32IsACopy) {
  const float src[4] = {1.5f, -2.0f, 0.0f, 3e30f};
  float dst[4];
  dequantize_row(DType::F32, src, dst, 4);
  EXPECT_EQ(0, std::memcmp(src, dst, sizeof(src)));
}

TEST(Dequantize, OnlyKnownTypes) {
  EXPECT_FALSE(dtype_can_dequantize(DType::I32));
  EXPECT_FALSE(dtype_can_dequantize(DType::F64));
  EXPECT_TRUE(dtype_can_dequantize(DType::Q6_K));
}

// Every half bit pattern: to f32 agrees with the compiler's _Float16, and back is exact.
TEST(HalfFloat, AllPatternsRoundTrip) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto bits = static_cast<uint16_t>(h);
    _Float16 ref;
    std::memcpy(&ref, &bits, 2);
    const float f = fp16_to_fp32(bits);
    if (std::isnan(static_cast<float>(ref))) {
      EXPECT_TRUE(std::isnan(f)) << h;
      EXPECT_TRUE(std::isnan(fp16_to_fp32(fp32_to_fp16(f))));
      continue;
    }
    ASSERT_EQ(static_cast<float>(ref), f) << h;
    ASSERT_EQ(bits, fp32_to_fp16(f)) << h;
  }
}

// Rounding of arbitrary floats (incl. subnormal halves, ties, overflow) agrees with _Float16.
TEST(HalfFloat, RoundingMatchesCompiler) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> bits_dist;
  for (int i = 0; i < 200000; ++i) {
    uint32_t u = bits_dist(rng);
    if (i % 2) u = (u & 0x8FFFFFFFu) | 0x30000000u;  // bias towards the half range
    float f;
    std::memcpy(&f, &u, 4);
    if (std::isnan(f)) continue;
    const _Float16 ref = static_cast<_Float16>(f);
    uint16_t ref_bits;
    std::memcpy(&ref_bits, &ref, 2);
    ASSERT_EQ(ref_bits, fp32_to_fp16(f)) << f;
  }
  EXPECT_EQ(0x7C00, fp32_to_fp16(65520.0f));
  EXPECT_EQ(0x7BFF, fp32_to_fp16(65519.0f));
}

TEST(BFloat16, RoundTripAndRounding) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const float f = bf16_to_fp32(static_cast<uint16_t>(b));
    if (std::isnan(f)) continue;
    ASSERT_EQ(b, fp32_to_bf16(f));
  }
  EXPECT_EQ(0x3F80, fp32_to_bf16(1.0f));
  // 1 + 2^-8 is a tie between 0x3F80 and 0x3F81: round to even.
  EXPECT_EQ(0x3F80, fp32_to_bf16(1.00390625f));
  EXPECT_EQ(0x3F82, fp32_to_bf16(1.01171875f));
  EXPECT_TRUE(std::isnan(bf16_to_fp32(fp32_to_bf16(NAN))));
}

}  // namespace
}  // namespace llmserve::kernels
