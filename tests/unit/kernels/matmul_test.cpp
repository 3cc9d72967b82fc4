// matmul against dequantize_row + a double-precision dot. Tolerance for 8-bit activations: each
// activation block (32, or 256 for K-quants) is rounded to steps of amax/127, so each element errs
// by at most amax_block/254 and |y - y_ref| <= sum_blocks amax_block/254 * sum_block |w|; f32
// accumulation adds at most ~1e-4 * sum |w x| here (K <= 1536).
#include "llmserve/kernels/matmul.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernel_test_util.h"

namespace llmserve::kernels {
namespace {

using testing::random_floats;
using testing::random_weights;

bool uses_q8_activations(DType t) {
  switch (t) {
    case DType::Q4_0:
    case DType::Q4_1:
    case DType::Q8_0:
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
      return true;
    default:
      return false;
  }
}

bool is_k_quant(DType t) {
  return dtype_info(t).block_elems == 256;
}

void check_against_reference(DType type, int64_t M, int64_t K, int64_t N, ThreadPool& pool,
                             uint32_t seed, ActPrecision precision) {
  std::mt19937 rng(seed);
  const auto w = random_weights(rng, type, N, K);
  auto x = random_floats(rng, M * K, -2.0f, 2.0f);
  // A few outliers make the per-block scales differ a lot.
  for (int64_t i = 0; i < M * K; i += 97) x[i] *= 8.0f;
  std::vector<float> y(M * N, NAN);
  matmul(pool, x.data(), M, K, type, w.data(), N, y.data(), precision);
  // Per element: one 8-bit pass rounds by amax/254, two passes by amax/254^2.
  const double act_err = precision == ActPrecision::kQ8 ? 1.0 / 254.0 : 1.0 / (254.0 * 254.0);

  const int64_t qb = is_k_quant(type) ? 256 : 32;
  const size_t rb = row_bytes(type, K);
  std::vector<float> wr(K);
  for (int64_t n = 0; n < N; ++n) {
    dequantize_row(type, w.data() + n * rb, wr.data(), K);
    for (int64_t m = 0; m < M; ++m) {
      const float* xr = x.data() + m * K;
      double ref = 0, mag = 0, qbound = 0;
      for (int64_t b = 0; b < K; b += qb) {
        double amax = 0, wsum = 0;
        for (int64_t i = b; i < b + qb; ++i) {
          ref += static_cast<double>(wr[i]) * xr[i];
          mag += std::fabs(static_cast<double>(wr[i]) * xr[i]);
          amax = std::max(amax, std::fabs(static_cast<double>(xr[i])));
          wsum += std::fabs(wr[i]);
        }
        qbound += amax * act_err * wsum;
      }
      const double tol = (uses_q8_activations(type) ? qbound : 0.0) + 1e-5 * mag + 1e-6;
      ASSERT_NEAR(y[m * N + n], ref, tol)
          << dtype_name(type) << " " << act_precision_name(precision) << " M=" << M << " K=" << K
          << " N=" << N << " m=" << m << " n=" << n;
    }
  }
}

class MatmulTypes : public ::testing::TestWithParam<DType> {};

TEST_P(MatmulTypes, MatchesDequantizedReference) {
  const DType type = GetParam();
  ASSERT_TRUE(matmul_supports(type));
  ThreadPool pool(2);
  uint32_t seed = 1;
  for (ActPrecision p : {ActPrecision::kQ8, ActPrecision::kQ8x2}) {
    for (int64_t K : {256, 512, 1536}) {
      for (int64_t M : {1, 3, 4, 9}) check_against_reference(type, M, K, 37, pool, seed++, p);
    }
    check_against_reference(type, 150, 512, 20, pool, seed++, p);  // 2-D tiling (M > 128)
    check_against_reference(type, 65, 256, 20, pool, seed++, p);   // 130 quantized rows
  }
}

// Rows of y are bit-identical whatever the batch they are computed in and the thread count.
TEST_P(MatmulTypes, BatchInvariant) {
  const DType type = GetParam();
  ThreadPool pool2(2), pool1(1), pool3(3);
  std::mt19937 rng(42);
  const int64_t K = 512, N = 45, M = 150;
  const auto w = random_weights(rng, type, N, K);
  const auto x = random_floats(rng, M * K);
  for (ActPrecision p : {ActPrecision::kQ8, ActPrecision::kQ8x2}) {
    std::vector<float> all(M * N);
    matmul(pool2, x.data(), M, K, type, w.data(), N, all.data(), p);
    std::vector<float> one(N);
    for (int64_t m : {0L, 1L, 5L, 63L, 64L, 130L, 149L}) {
      matmul(pool1, x.data() + m * K, 1, K, type, w.data(), N, one.data(), p);
      EXPECT_EQ(0, std::memcmp(one.data(), all.data() + m * N, N * sizeof(float))) << "row " << m;
    }
    // A different batch: rows 7..12 in a batch of 6 on three threads.
    std::vector<float> part(6 * N);
    matmul(pool3, x.data() + 7 * K, 6, K, type, w.data(), N, part.data(), p);
    EXPECT_EQ(0, std::memcmp(part.data(), all.data() + 7 * N, part.size() * sizeof(float)));
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, MatmulTypes,
                         ::testing::Values(DType::F32, DType::F16, DType::BF16, DType::Q4_0,
                                           DType::Q4_1, DType::Q8_0, DType::Q4_K, DType::Q6_K,
                                           DType::Q5_0, DType::Q5_1, DType::Q2_K, DType::Q3_K,
                                           DType::Q5_K),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(Matmul, UnsupportedTypes) {
  EXPECT_FALSE(matmul_supports(DType::I32));
  EXPECT_FALSE(matmul_supports(DType::Q8_K));
}

}  // namespace
}  // namespace llmserve::kernels
