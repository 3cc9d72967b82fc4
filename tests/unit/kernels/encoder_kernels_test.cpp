// The encoder kernels (llmserve/kernels/encoder.h) against plain double-precision references
// written from their definitions: LayerNorm (torch's biased variance), erf GELU, and
// bidirectional attention (every query of a request sees every one of its rows, none of
// another request's; grouped KV heads).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "llmserve/kernels/encoder.h"

namespace llmserve::kernels {
namespace {

std::vector<float> random(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

TEST(EncoderKernels, LayerNormAndResidualMatchTheDefinition) {
  ThreadPool pool(2);
  const int64_t rows = 37, dim = 384;
  auto x = random(rows * dim, 1, 3.0f), w = random(dim, 2), b = random(dim, 3);
  for (float& v : x) v += 5.0f;  // a large mean: the variance must not cancel
  auto res = random(rows * dim, 4);
  std::vector<float> y(rows * dim), want(rows * dim), res_want(rows * dim);
  auto ref = [&](const float* in, float* out) {
    double m = 0, var = 0;
    for (int64_t i = 0; i < dim; ++i) m += in[i];
    m /= dim;
    for (int64_t i = 0; i < dim; ++i) var += (in[i] - m) * (in[i] - m);
    var /= dim;
    for (int64_t i = 0; i < dim; ++i) out[i] = (in[i] - m) / std::sqrt(var + 1e-12) * w[i] + b[i];
  };
  std::vector<float> sum(dim);
  for (int64_t r = 0; r < rows; ++r) {
    ref(x.data() + r * dim, want.data() + r * dim);
    for (int64_t i = 0; i < dim; ++i) sum[i] = res[r * dim + i] + x[r * dim + i];
    ref(sum.data(), res_want.data() + r * dim);
  }
  layer_norm(pool, x.data(), w.data(), b.data(), rows, dim, 1e-12f, y.data());
  add_layer_norm(pool, res.data(), x.data(), w.data(), b.data(), rows, dim, 1e-12f);
  for (int64_t i = 0; i < rows * dim; ++i) {
    ASSERT_NEAR(y[i], want[i], 1e-4) << i;
    ASSERT_NEAR(res[i], res_want[i], 1e-4) << i;
  }
}

TEST(EncoderKernels, GeluIsTheErfForm) {
  ThreadPool pool(2);
  auto x = random(20003, 5, 3.0f);  // not a multiple of 8: the tail too
  auto y = x;
  gelu_erf(pool, y.data(), static_cast<int64_t>(y.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    ASSERT_NEAR(y[i], 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))), 1e-5) << v;
  }
}

TEST(EncoderKernels, BidirectionalAttentionSeesExactlyItsOwnRows) {
  ThreadPool pool(2);
  for (const int hd : {16, 12, 32, 44}) {  // 12, 44: past the 8-lane and 32-lane blocks
    const int nh = 4, nkv = 2;
    const std::vector<int32_t> qs = {0, 1, 9, 9, 30, 67};  // lengths 1, 8, 0, 21, 37
    const int64_t T = qs.back(), B = static_cast<int64_t>(qs.size()) - 1;
    auto q = random(T * nh * hd, 6), k = random(T * nkv * hd, 7), v = random(T * nkv * hd, 8);
    std::vector<float> out(T * nh * hd, -1.0f);
    const float scale = 0.25f;
    bidirectional_attention(pool, q.data(), k.data(), v.data(), qs.data(), B, nh, nkv, hd, scale,
                            out.data());
    for (int64_t r = 0; r < B; ++r) {
      for (int32_t i = qs[r]; i < qs[r + 1]; ++i) {
        for (int h = 0; h < nh; ++h) {
          const int g = h / (nh / nkv);
          std::vector<double> p;
          double mx = -1e300, sum = 0;
          for (int32_t j = qs[r]; j < qs[r + 1]; ++j) {
            double s = 0;
            for (int d = 0; d < hd; ++d)
              s += double{q[(i * nh + h) * hd + d]} * k[(j * nkv + g) * hd + d];
            p.push_back(s * scale);
            mx = std::max(mx, p.back());
          }
          for (double& e : p) sum += (e = std::exp(e - mx));
          for (int d = 0; d < hd; ++d) {
            double o = 0;
            for (size_t j = 0; j < p.size(); ++j)
              o += p[j] / sum * v[((qs[r] + j) * nkv + g) * hd + d];
            ASSERT_NEAR(out[(i * nh + h) * hd + d], o, 1e-5)
                << hd << " " << r << " " << i << " " << h;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace llmserve::kernels
