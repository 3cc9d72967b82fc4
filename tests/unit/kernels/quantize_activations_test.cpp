// The activation quantizers of the integer matmuls, checked element by element in double
// precision: q8 rounds each element to the nearest multiple of d = amax / 127, and q8x2's residual
// block has exactly d / 256 as its scale, so main * 256 + residual is one 16-bit integer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernel_test_util.h"
#include "kernels/cpu/quantize_activations.h"

namespace llmserve::kernels::cpu {
namespace {

using kernels::testing::random_floats;

// Rows with outliers, an all-zero block and a block of one repeated value.
std::vector<float> activation_rows(int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  auto x = random_floats(rng, k, -3.0f, 3.0f);
  for (int64_t i = 0; i < k; i += 37) x[i] *= 40.0f;
  std::fill(x.begin(), x.begin() + kQK, 0.0f);
  std::fill(x.begin() + kQK, x.begin() + 2 * kQK, -0.75f);
  return x;
}

TEST(QuantizeActivations, Q8RoundsToNearestStepOfTheBlockScale) {
  const int64_t k = 576;
  const auto x = activation_rows(k, 3);
  std::vector<ActQ8> q(k / kQK);
  quantize_row_act_q8(x.data(), k, q.data());
  for (int64_t b = 0; b < k / kQK; ++b) {
    double amax = 0;
    int sum = 0;
    for (int i = 0; i < kQK; ++i) amax = std::max(amax, std::fabs(double{x[b * kQK + i]}));
    EXPECT_NEAR(q[b].d, amax / 127.0, amax * 1e-7) << "block " << b;
    for (int i = 0; i < kQK; ++i) {
      const double err = std::fabs(x[b * kQK + i] - double{q[b].d} * q[b].qs[i]);
      EXPECT_LE(err, 0.5 * q[b].d * (1 + 1e-5)) << "block " << b << " element " << i;
      EXPECT_GE(q[b].qs[i], -127);
      sum += q[b].qs[i];
    }
    EXPECT_FLOAT_EQ(q[b].ds, q[b].d * static_cast<float>(sum));
  }
}

TEST(QuantizeActivations, Q8x2ResidualHasAFixedScaleAndSixteenBitPrecision) {
  const int64_t k = 1536;
  for (uint32_t seed : {1u, 2u, 3u}) {
    const auto x = activation_rows(k, seed);
    std::vector<ActQ8> main(k / kQK), res(k / kQK);
    quantize_row_act_q8x2(x.data(), k, main.data(), res.data());
    for (int64_t b = 0; b < k / kQK; ++b) {
      const ActQ8& m = main[b];
      const ActQ8& r = res[b];
      EXPECT_EQ(r.d, m.d / kQ8x2ResidualRatio) << "block " << b;  // exact: a power of two
      int sum = 0;
      for (int i = 0; i < kQK; ++i) {
        EXPECT_GE(r.qs[i], -127);
        const double value = double{m.d} * m.qs[i] + double{r.d} * r.qs[i];
        const double combined = double{r.d} * (kQ8x2ResidualRatio * m.qs[i] + r.qs[i]);
        EXPECT_DOUBLE_EQ(value, combined);
        // Rounding of the residual, plus the clamp of a residual of exactly half a main step.
        EXPECT_LE(std::fabs(x[b * kQK + i] - value), 1.0 * r.d + 1e-7 * std::fabs(x[b * kQK + i]))
            << "seed " << seed << " block " << b << " element " << i;
        sum += r.qs[i];
      }
      EXPECT_FLOAT_EQ(r.ds, r.d * static_cast<float>(sum));
    }
    // All-zero block: zero scales, zero quants.
    EXPECT_EQ(main[0].d, 0.0f);
    EXPECT_EQ(res[0].d, 0.0f);
    EXPECT_EQ(res[0].ds, 0.0f);
  }
}

// Within half a residual step, except where the residual had to be clamped to 127: a residual
// in (127.5, 128] steps (about 1 element in 256) errs by at most one step.
TEST(QuantizeActivations, Q8x2ErrsByHalfAResidualStepUnlessClamped) {
  const int64_t k = 4096;
  const auto x = activation_rows(k, 11);
  std::vector<ActQ8> main(k / kQK), res(k / kQK);
  quantize_row_act_q8x2(x.data(), k, main.data(), res.data());
  int64_t clamped = 0;
  for (int64_t b = 0; b < k / kQK; ++b) {
    for (int i = 0; i < kQK; ++i) {
      const double value = double{main[b].d} * main[b].qs[i] + double{res[b].d} * res[b].qs[i];
      const double err = std::fabs(x[b * kQK + i] - value) / res[b].d;
      if (err > 0.5 * (1 + 1e-4)) {
        ++clamped;
        EXPECT_EQ(std::abs(res[b].qs[i]), 127) << "block " << b << " element " << i;
        EXPECT_LE(err, 1.0 + 1e-4);
      }
    }
  }
  EXPECT_LE(clamped, k / 64) << clamped << " of " << k;
}

// pair_act_blocks re-lays blocks (2p, 2p + 1) as one ActQ8Pair: scales side by side, and the
// quants in alternating 4-byte groups; an odd last block stays as it was. pair_act_row_to writes
// the same pairs at a stride (the wide layout of the matmuls).
TEST(QuantizeActivations, PairingAlternatesFourByteGroupsAndKeepsScales) {
  constexpr int64_t nb = 5, k = nb * kQK;
  const auto x = activation_rows(k, 11);
  std::vector<ActQ8> blocks(nb);
  quantize_row_act_q8(x.data(), k, blocks.data());
  for (bool correction : {false, true}) {
    std::vector<ActQ8> paired = blocks;
    pair_act_blocks(paired.data(), 1, nb, correction);
    std::vector<ActQ8Pair> strided(3 * (nb / 2));
    pair_act_row_to(blocks.data(), nb, strided.data(), 3, correction);
    for (int64_t p = 0; p < nb / 2; ++p) {
      const ActQ8& a = blocks[2 * p];
      const ActQ8& b = blocks[2 * p + 1];
      const auto& pair = *reinterpret_cast<const ActQ8Pair*>(&paired[2 * p]);
      EXPECT_EQ(pair.d[0], a.d);
      EXPECT_EQ(pair.d[1], b.d);
      if (correction) {
        int32_t sa = 0, sb = 0;
        for (int i = 0; i < kQK; ++i) {
          sa += a.qs[i];
          sb += b.qs[i];
        }
        EXPECT_EQ(pair.q8_0_correction[0], -128 * sa);
        EXPECT_EQ(pair.q8_0_correction[1], -128 * sb);
      } else {
        EXPECT_EQ(pair.ds[0], a.ds);
        EXPECT_EQ(pair.ds[1], b.ds);
      }
      for (int i = 0; i < 2 * kQK; ++i) {
        const ActQ8& from = (i / 4) % 2 == 0 ? a : b;
        ASSERT_EQ(pair.qs[i], from.qs[4 * (i / 8) + i % 4]) << "pair " << p << " byte " << i;
      }
      EXPECT_EQ(0, std::memcmp(&strided[3 * p], &pair, sizeof(ActQ8Pair))) << "pair " << p;
    }
    EXPECT_EQ(0, std::memcmp(&paired[nb - 1], &blocks[nb - 1], sizeof(ActQ8)));
  }
}

}  // namespace
}  // namespace llmserve::kernels::cpu
