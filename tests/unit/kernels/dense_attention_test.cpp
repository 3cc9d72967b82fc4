// The long-sequence encoder attention (kernels::dense_attention: a vision tower's image) and the
// vector gelu_tanh, against plain double-precision references written from their definitions.
#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <random>
#include <vector>

#include "llmserve/kernels/activation.h"
#include "llmserve/kernels/encoder.h"

namespace llmserve::kernels {
namespace {

std::vector<float> normal_values(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// out[i, h] = sum_j softmax_j(q_i . k_j * scale) v_j over every row j, per head.
std::vector<double> reference_attention(const std::vector<float>& q, const std::vector<float>& k,
                                        const std::vector<float>& v, int64_t n, int heads, int hd,
                                        double scale) {
  const int64_t width = int64_t{heads} * hd;
  std::vector<double> out(static_cast<size_t>(n * width)), s(static_cast<size_t>(n));
  for (int h = 0; h < heads; ++h) {
    for (int64_t i = 0; i < n; ++i) {
      double mx = -INFINITY;
      for (int64_t j = 0; j < n; ++j) {
        double dot = 0;
        for (int d = 0; d < hd; ++d) {
          dot += double{q[i * width + h * hd + d]} * k[j * width + h * hd + d];
        }
        s[j] = dot * scale;
        mx = std::max(mx, s[j]);
      }
      double sum = 0;
      for (int64_t j = 0; j < n; ++j) sum += (s[j] = std::exp(s[j] - mx));
      for (int d = 0; d < hd; ++d) {
        double acc = 0;
        for (int64_t j = 0; j < n; ++j) acc += s[j] * v[j * width + h * hd + d];
        out[i * width + h * hd + d] = acc / sum;
      }
    }
  }
  return out;
}

struct Shape {
  int64_t n;
  int heads, head_dim;
  float q_scale;  // large: scores in the hundreds, so softmax must subtract its row's max
};

void PrintTo(const Shape& s, std::ostream* os) {
  *os << "n " << s.n << ", heads " << s.heads << ", head_dim " << s.head_dim << ", q x"
      << s.q_scale;
}

class DenseAttention : public testing::TestWithParam<Shape> {};

TEST_P(DenseAttention, MatchesTheDefinition) {
  const Shape sh = GetParam();
  const int64_t width = int64_t{sh.heads} * sh.head_dim;
  const auto q = normal_values(sh.n * width, 11, sh.q_scale),
             k = normal_values(sh.n * width, 12, 1.0f), v = normal_values(sh.n * width, 13, 1.0f);
  const double scale = 1.0 / std::sqrt(static_cast<double>(sh.head_dim));
  const auto want = reference_attention(q, k, v, sh.n, sh.heads, sh.head_dim, scale);
  ThreadPool pool(2);
  std::vector<float> out(static_cast<size_t>(sh.n * width), NAN);
  dense_attention(pool, q.data(), k.data(), v.data(), sh.n, sh.heads, sh.head_dim,
                  static_cast<float>(scale), out.data());
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_NEAR(out[i], want[i], 2e-5 + 2e-5 * std::abs(want[i])) << "element " << i;
  }
}

// n across the query groups (calls of 6 or 12 rows) and key panels (32 keys), and past one p.v
// key chunk (512 keys: later chunks add to the first); head dims below, between and at the
// 32-lane value panels; SigLIP's 72.
INSTANTIATE_TEST_SUITE_P(Shapes, DenseAttention,
                         testing::Values(Shape{1, 1, 8, 1.0f}, Shape{37, 2, 16, 1.0f},
                                         Shape{197, 3, 72, 1.0f}, Shape{64, 2, 32, 1.0f},
                                         Shape{100, 1, 44, 30.0f}, Shape{256, 2, 64, 1.0f},
                                         Shape{1100, 1, 72, 1.0f}));

TEST(DenseAttention, EachQueryBlockSeesEveryKey) {
  // One key matches query 0 far better than the rest: its value must dominate query 0's output
  // wherever the key sits (first panel, a middle one, the padded last one).
  const int64_t n = 77;
  const int hd = 16;
  ThreadPool pool(2);
  for (int64_t hot : {int64_t{0}, int64_t{40}, n - 1}) {
    std::vector<float> q(n * hd, 0.0f), k(n * hd, 0.0f), v(n * hd, 0.0f), out(n * hd);
    q[0] = 10.0f;
    k[hot * hd] = 10.0f;
    for (int d = 0; d < hd; ++d) v[hot * hd + d] = 1.0f + d;
    dense_attention(pool, q.data(), k.data(), v.data(), n, 1, hd, 1.0f, out.data());
    for (int d = 0; d < hd; ++d) EXPECT_NEAR(out[d], 1.0f + d, 1e-3) << "key " << hot;
    // Query 1 scores every key 0: the plain mean of v.
    for (int d = 0; d < hd; ++d) EXPECT_NEAR(out[hd + d], (1.0f + d) / n, 1e-6) << "key " << hot;
  }
}

TEST(GeluTanh, MatchesTheTanhForm) {
  auto x = normal_values(20003, 5, 4.0f);  // not a multiple of 8: the tail too
  x.insert(x.end(), {0.0f, -0.0f, 30.0f, -30.0f, 200.0f, -200.0f, 1e-30f});
  auto y = x;
  gelu_tanh(y.data(), static_cast<int64_t>(y.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const double z = x[i];
    const double want =
        0.5 * z * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (z + 0.044715 * z * z * z)));
    ASSERT_NEAR(y[i], want, 1e-6 + 2e-6 * std::abs(want)) << z;
  }
}

TEST(GeluTanh, AnElementDoesNotDependOnItsPlace) {
  auto x = normal_values(29, 7, 2.0f);
  auto all = x;
  gelu_tanh(all.data(), static_cast<int64_t>(all.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    float one = x[i];
    gelu_tanh(&one, 1);
    ASSERT_EQ(one, all[i]) << i;
  }
}

}  // namespace
}  // namespace llmserve::kernels
