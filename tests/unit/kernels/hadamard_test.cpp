// The Hadamard rotation of head rows (kernels/hadamard.h) against the Sylvester matrix in double,
// applied twice (its own inverse), and the same bits whether the pool splits the rows or not.
#include "llmserve/kernels/hadamard.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernel_test_util.h"

namespace llmserve::kernels {
namespace {

// Entry (i, j) of the Sylvester Hadamard matrix: (-1)^popcount(i & j).
double sylvester(int i, int j) {
  return std::popcount(static_cast<unsigned>(i & j)) % 2 == 0 ? 1.0 : -1.0;
}

TEST(Hadamard, MatchesTheSylvesterMatrixAndIsItsOwnInverse) {
  std::mt19937 rng(7);
  ThreadPool pool(2);
  for (int D : {2, 4, 8, 16, 64, 128, 256}) {
    const int heads = 3;
    const int64_t rows = 20, stride = heads * D + 5;  // a row pitch wider than its heads
    auto x = testing::random_floats(rng, static_cast<size_t>(rows * stride), -3.0f, 3.0f);
    const auto orig = x;
    hadamard_rows(pool, x.data(), rows, stride, heads, D);
    for (int64_t r = 0; r < rows; ++r) {
      for (int h = 0; h < heads; ++h) {
        const float* in = orig.data() + r * stride + h * D;
        for (int i = 0; i < D; ++i) {
          double want = 0;
          for (int j = 0; j < D; ++j) want += sylvester(i, j) * in[j];
          want /= std::sqrt(static_cast<double>(D));
          EXPECT_NEAR(x[r * stride + h * D + i], want, 1e-5 * std::sqrt(D)) << "D=" << D;
        }
      }
      for (int64_t c = heads * D; c < stride; ++c)
        EXPECT_EQ(x[r * stride + c], orig[r * stride + c]);
    }
    hadamard_rows(pool, x.data(), rows, stride, heads, D);
    for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], orig[i], 1e-5) << "D=" << D;
  }
}

TEST(Hadamard, SameBitsAloneAndSplitOverThePool) {
  std::mt19937 rng(11);
  ThreadPool pool(2);
  const int D = 64, heads = 9;
  const auto x = testing::random_floats(rng, static_cast<size_t>(40 * heads * D));
  auto many = x;
  hadamard_rows(pool, many.data(), 40, heads * D, heads, D);  // split over the pool
  for (int64_t r = 0; r < 40; ++r) {
    std::vector<float> one(x.begin() + r * heads * D, x.begin() + (r + 1) * heads * D);
    hadamard_rows(pool, one.data(), 1, heads * D, heads, D);  // one row, inline
    EXPECT_EQ(0, std::memcmp(one.data(), many.data() + r * heads * D, one.size() * sizeof(float)));
  }
}

}  // namespace
}  // namespace llmserve::kernels
