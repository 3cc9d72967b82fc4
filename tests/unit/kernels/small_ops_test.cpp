// RMSNorm, RoPE, SiLU-mul, add, embedding lookup and row reductions against scalar references
// in double precision; tolerances are a few f32 ulps of the magnitudes involved.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>

#include "kernel_test_util.h"
#include "llmserve/kernels/activation.h"
#include "llmserve/kernels/embedding.h"
#include "llmserve/kernels/norm.h"
#include "llmserve/kernels/rope.h"
#include "llmserve/kernels/softmax.h"

namespace llmserve::kernels {
namespace {

using testing::random_floats;

TEST(RmsNorm, MatchesReferenceAndFusedResidual) {
  std::mt19937 rng(1);
  ThreadPool pool(2);
  for (int64_t dim : {64, 576, 1001}) {
    for (int64_t rows : {1, 3, 200}) {
      const auto x = random_floats(rng, rows * dim, -3, 3);
      const auto w = random_floats(rng, dim, 0.5, 1.5);
      std::vector<float> y(rows * dim);
      rms_norm(pool, x.data(), w.data(), rows, dim, 1e-5f, y.data());
      auto res = random_floats(rng, rows * dim);
      auto res_copy = res;
      std::vector<float> y2(rows * dim);
      add_rms_norm(pool, res.data(), x.data(), w.data(), rows, dim, 1e-5f, y2.data());
      for (int64_t r = 0; r < rows; ++r) {
        double ss = 0, ss2 = 0;
        for (int64_t i = 0; i < dim; ++i) {
          ss += double(x[r * dim + i]) * x[r * dim + i];
          const double s = double(res_copy[r * dim + i]) + x[r * dim + i];
          ss2 += s * s;
        }
        const double inv = 1.0 / std::sqrt(ss / dim + 1e-5),
                     inv2 = 1.0 / std::sqrt(ss2 / dim + 1e-5);
        for (int64_t i = 0; i < dim; ++i) {
          const size_t k = r * dim + i;
          ASSERT_NEAR(y[k], x[k] * inv * w[i], 1e-5);
          ASSERT_FLOAT_EQ(res[k], res_copy[k] + x[k]);
          ASSERT_NEAR(y2[k], (double(res_copy[k]) + x[k]) * inv2 * w[i], 1e-5);
        }
      }
    }
  }
}

TEST(Rope, InvFreqPlainAndScaled) {
  const auto f = rope_inv_freq(64, 10000.0f);
  ASSERT_EQ(f.size(), 32u);
  for (int i = 0; i < 32; ++i) EXPECT_NEAR(f[i], std::pow(10000.0, -2.0 * i / 64), 1e-7);
  RopeScaling lin;
  lin.kind = RopeScaling::Kind::kLinear;
  lin.factor = 4.0f;
  const auto fl = rope_inv_freq(64, 10000.0f, lin);
  for (int i = 0; i < 32; ++i) EXPECT_FLOAT_EQ(fl[i], f[i] / 4.0f);
  // Llama 3.1 rule: short wavelengths kept, long ones divided by factor, blended in between.
  RopeScaling l3;
  l3.kind = RopeScaling::Kind::kLlama3;
  l3.factor = 8.0f;
  l3.low_freq_factor = 1.0f;
  l3.high_freq_factor = 4.0f;
  l3.original_max_positions = 8192.0f;
  const auto base = rope_inv_freq(128, 500000.0f);
  const auto f3 = rope_inv_freq(128, 500000.0f, l3);
  int kept = 0, divided = 0, blended = 0;
  for (size_t i = 0; i < base.size(); ++i) {
    const double wl = 2 * std::numbers::pi / base[i];
    if (wl < 8192.0 / 4) {
      EXPECT_FLOAT_EQ(f3[i], base[i]);
      ++kept;
    } else if (wl > 8192.0) {
      EXPECT_FLOAT_EQ(f3[i], base[i] / 8.0f);
      ++divided;
    } else {
      const double s = (8192.0 / wl - 1.0) / 3.0;
      EXPECT_NEAR(f3[i], (1 - s) * base[i] / 8 + s * base[i], 1e-6 * base[i]);
      ++blended;
    }
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(divided, 0);
  EXPECT_GT(blended, 0);
}

TEST(Rope, BothPairingsMatchReference) {
  std::mt19937 rng(2);
  for (int D : {64, 128}) {
    const int64_t T = 5;
    const int H = 3;
    const std::vector<int32_t> pos = {0, 1, 17, 500, 4095};
    const auto inv = rope_inv_freq(D, 10000.0f);
    const auto x = random_floats(rng, T * H * D);
    for (auto pairing : {RopePairing::kAdjacent, RopePairing::kHalves}) {
      auto y = x;
      apply_rope(y.data(), T, H, D, pos.data(), inv, pairing);
      for (int64_t t = 0; t < T; ++t) {
        for (int h = 0; h < H; ++h) {
          const float* a = x.data() + (t * H + h) * D;
          const float* b = y.data() + (t * H + h) * D;
          for (int i = 0; i < D / 2; ++i) {
            const int i0 = pairing == RopePairing::kAdjacent ? 2 * i : i;
            const int i1 = pairing == RopePairing::kAdjacent ? 2 * i + 1 : i + D / 2;
            const double ang = double(float(pos[t]) * inv[i]);
            const double c = std::cos(ang), s = std::sin(ang);
            ASSERT_NEAR(b[i0], a[i0] * c - a[i1] * s, 2e-5)
                << "D=" << D << " t=" << t << " i=" << i;
            ASSERT_NEAR(b[i1], a[i0] * s + a[i1] * c, 2e-5);
          }
        }
      }
    }
  }
}

TEST(Activation, SiluMulAndAdd) {
  std::mt19937 rng(3);
  const auto g = random_floats(rng, 1003, -10, 10), u = random_floats(rng, 1003);
  std::vector<float> o(1003), s(1003);
  silu_mul(g.data(), u.data(), o.data(), 1003);
  add(g.data(), u.data(), s.data(), 1003);
  for (int i = 0; i < 1003; ++i) {
    const double ref = g[i] / (1.0 + std::exp(-double(g[i]))) * u[i];
    ASSERT_NEAR(o[i], ref, 1e-5 * (1 + std::fabs(ref)));
    ASSERT_EQ(s[i], g[i] + u[i]);
  }
}

TEST(Embedding, DequantizesSelectedRows) {
  std::mt19937 rng(4);
  for (DType t :
       {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_1, DType::Q4_K, DType::Q6_K}) {
    const int64_t dim = 256, vocab = 10;
    const auto table = testing::random_weights(rng, t, vocab, dim);
    const std::vector<int32_t> ids = {3, 0, 9, 3};
    std::vector<float> out(ids.size() * dim), ref(dim);
    embedding_lookup(t, table.data(), dim, ids.data(), ids.size(), out.data());
    for (size_t r = 0; r < ids.size(); ++r) {
      dequantize_row(t, table.data() + ids[r] * row_bytes(t, dim), ref.data(), dim);
      for (int64_t i = 0; i < dim; ++i) ASSERT_EQ(out[r * dim + i], ref[i]) << dtype_name(t);
    }
  }
}

// A plain loop: the first strictly largest value above the floor.
int64_t argmax_above_reference(const std::vector<float>& x, float floor) {
  int64_t best = -1;
  float bv = floor;
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i] > bv) {
      bv = x[i];
      best = static_cast<int64_t>(i);
    }
  }
  return best;
}

TEST(RowOps, ArgmaxAboveMatchesLoopOnTiesNansInfinitiesAndTails) {
  const float ninf = -INFINITY;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  for (int64_t n : {1, 7, 8, 9, 31, 64, 1000, 49152}) {
    for (int variant = 0; variant < 6; ++variant) {
      std::vector<float> x(static_cast<size_t>(n));
      for (float& v : x) v = variant == 5 ? ninf : std::round(u(rng) * 4.0f) / 4.0f;  // many ties
      if (variant == 1) x[static_cast<size_t>(n - 1)] = 100.0f;  // in the scalar tail
      if (variant == 2) x[0] = NAN, x[static_cast<size_t>(n / 2)] = NAN;
      if (variant == 3) x[static_cast<size_t>(n / 3)] = INFINITY;
      if (variant == 4) std::fill(x.begin(), x.end(), NAN);
      EXPECT_EQ(argmax_above(x.data(), n, ninf), argmax_above_reference(x, ninf))
          << "n " << n << " variant " << variant;
      EXPECT_EQ(argmax_above(x.data(), n, 3.0f), argmax_above_reference(x, 3.0f))
          << "n " << n << " variant " << variant;
    }
  }
}

TEST(RowOps, ArgmaxSoftmaxLogSoftmax) {
  const std::vector<float> x = {1.0f, 3.0f, -2.0f, 3.0f, 0.5f};
  EXPECT_EQ(argmax(x.data(), 5), 1);
  const std::vector<float> withnan = {NAN, -1.0f, 2.0f};
  EXPECT_EQ(argmax(withnan.data(), 3), 2);
  std::vector<float> p(5), lp(5);
  softmax(x.data(), p.data(), 5);
  log_softmax(x.data(), lp.data(), 5);
  double z = 0;
  for (float v : x) z += std::exp(double(v));
  double total = 0;
  for (int i = 0; i < 5; ++i) {
    EXPECT_NEAR(p[i], std::exp(double(x[i])) / z, 1e-7);
    EXPECT_NEAR(lp[i], x[i] - std::log(z), 1e-6);
    total += p[i];
  }
  EXPECT_NEAR(total, 1.0, 1e-6);
  const std::vector<float> big = {1000.0f, 1000.0f};  // no overflow
  softmax(big.data(), p.data(), 2);
  EXPECT_FLOAT_EQ(p[0], 0.5f);
}

}  // namespace
}  // namespace llmserve::kernels
