// matmul_packed against dequantize_row + a double-precision dot (tolerance as in matmul_test:
// 8-bit activations err by amax_block/254 per element, two-pass ones by amax_block/64516),
// bit-identical rows whatever the batch and thread count, and bit-identical results from the AVX2
// and AVX-512 VNNI micro-kernels.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernel_test_util.h"
#include "llmserve/kernels/matmul.h"
#include "llmserve/kernels/packed_weight.h"
#include "packed_isa_guard.h"

namespace llmserve::kernels {
namespace {

using testing::random_floats;
using testing::random_weights;

using testing::IsaGuard;

std::vector<PackedIsa> isas() {
  std::vector<PackedIsa> v = {PackedIsa::kAvx2};
  if (cpu_has_avx512_vnni()) {
    v.push_back(PackedIsa::kAvx512Vnni);
    v.push_back(PackedIsa::kAvx512Vnni256);
  }
  return v;
}

// Activation rounding bound per element, relative to the block's max |x|.
double act_error(ActPrecision p) {
  return p == ActPrecision::kQ8 ? 1.0 / 254.0 : 1.0 / (254.0 * 254.0);
}

// Returns the largest |y - ref| seen.
double check_packed_against_reference(DType type, int64_t M, int64_t K, int64_t N, ThreadPool& pool,
                                      uint32_t seed, ActPrecision precision = ActPrecision::kQ8) {
  std::mt19937 rng(seed);
  const auto w = random_weights(rng, type, N, K);
  auto x = random_floats(rng, M * K, -2.0f, 2.0f);
  for (int64_t i = 0; i < M * K; i += 97) x[i] *= 8.0f;
  const PackedWeight pw = pack_weight(type, w.data(), N, K);
  EXPECT_FALSE(pw.empty());
  if (pw.empty()) return INFINITY;
  EXPECT_EQ(pw.rows(), N);
  EXPECT_EQ(pw.cols(), K);
  std::vector<float> y(M * N, NAN);
  matmul_packed(pool, x.data(), M, pw, y.data(), precision);
  double worst = 0;

  const size_t rb = row_bytes(type, K);
  std::vector<float> wr(K);
  for (int64_t n = 0; n < N; ++n) {
    dequantize_row(type, w.data() + n * rb, wr.data(), K);
    for (int64_t m = 0; m < M; ++m) {
      const float* xr = x.data() + m * K;
      double ref = 0, mag = 0, qbound = 0;
      for (int64_t b = 0; b < K; b += 32) {
        double amax = 0, wsum = 0;
        for (int64_t i = b; i < b + 32; ++i) {
          ref += static_cast<double>(wr[i]) * xr[i];
          mag += std::fabs(static_cast<double>(wr[i]) * xr[i]);
          amax = std::max(amax, std::fabs(static_cast<double>(xr[i])));
          wsum += std::fabs(wr[i]);
        }
        qbound += amax * act_error(precision) * wsum;
      }
      const double err = std::fabs(y[m * N + n] - ref);
      worst = std::max(worst, err);
      EXPECT_LE(err, qbound + 1e-5 * mag + 1e-6)
          << dtype_name(type) << " " << act_precision_name(precision) << " M=" << M << " K=" << K
          << " N=" << N << " m=" << m << " n=" << n;
      if (err > qbound + 1e-5 * mag + 1e-6) return worst;
    }
  }
  return worst;
}

bool is_k_quant_type(DType t) {
  return dtype_info(t).block_elems == kQKK;
}

// Row lengths to try: the K-quants take multiples of 256 only (always an even block count).
std::vector<int64_t> k_sizes(DType t, std::vector<int64_t> legacy) {
  return is_k_quant_type(t) ? std::vector<int64_t>{256, 512, 1280} : legacy;
}

class PackedTypes : public ::testing::TestWithParam<DType> {};

TEST_P(PackedTypes, MatchesDequantizedReference) {
  ThreadPool pool(2);
  for (PackedIsa isa : isas()) {
    IsaGuard guard(isa);
    uint32_t seed = 1;
    for (ActPrecision p : {ActPrecision::kQ8, ActPrecision::kQ8x2}) {
      for (int64_t K : k_sizes(GetParam(), {32, 64, 576})) {
        for (int64_t N : {8, 37, 64}) {
          for (int64_t M : {1, 3, 4, 5, 9})
            check_packed_against_reference(GetParam(), M, K, N, pool, seed++, p);
        }
      }
      check_packed_against_reference(GetParam(), 150, 256, 20, pool, seed++, p);  // 2-D tiling
      check_packed_against_reference(GetParam(), 65, 256, 20, pool, seed++, p);   // M' = 130 > 128
    }
  }
}

// The residual pass buys about 8 bits: the worst error drops by well over 30x on the same data.
TEST_P(PackedTypes, TwoPassActivationsAreFarMorePrecise) {
  ThreadPool pool(2);
  const int64_t K = is_k_quant_type(GetParam()) ? 512 : 576;
  const double q8 =
      check_packed_against_reference(GetParam(), 9, K, 64, pool, 7, ActPrecision::kQ8);
  const double q8x2 =
      check_packed_against_reference(GetParam(), 9, K, 64, pool, 7, ActPrecision::kQ8x2);
  EXPECT_GT(q8, 0.0);
  EXPECT_LT(q8x2 * 30.0, q8) << "q8 " << q8 << " q8x2 " << q8x2;
}

// Every quant at its largest value ([first, last) of each GGML block: the quants, not the scales;
// Q8_0 at +127) against activations of one sign at full scale: the integer sums at their bounds,
// where a kernel that sums too many products in 16 bits wraps.
std::pair<size_t, size_t> quant_bytes(DType t) {
  switch (t) {
    case DType::Q4_0:
      return {2, 18};
    case DType::Q4_1:
      return {4, 20};
    case DType::Q8_0:
      return {2, 34};
    case DType::Q2_K:
      return {16, 80};
    case DType::Q3_K:
      return {0, 96};
    case DType::Q4_K:
      return {16, 144};
    case DType::Q5_K:
      return {16, 176};
    case DType::Q6_K:
      return {0, 192};
    default:
      return {0, 0};
  }
}

TEST_P(PackedTypes, LargestQuantsAgainstOneSignedActivationsStayExact) {
  const DType type = GetParam();
  const auto [first, last] = quant_bytes(type);
  ASSERT_LT(first, last) << dtype_name(type);
  const size_t bb = dtype_info(type).block_bytes;
  ThreadPool pool(2);
  std::mt19937 rng(7);
  const int64_t K = is_k_quant_type(type) ? 512 : 64, N = 16, M = 5;
  auto w = random_weights(rng, type, N, K);
  for (size_t b = 0; b < w.size(); b += bb) {
    std::memset(w.data() + b + first, type == DType::Q8_0 ? 0x7F : 0xFF, last - first);
  }
  const PackedWeight pw = pack_weight(type, w.data(), N, K);
  std::vector<float> wr(K);
  for (float sign : {1.0f, -1.0f}) {
    std::vector<float> x(M * K, sign);
    for (PackedIsa isa : isas()) {
      IsaGuard guard(isa);
      for (ActPrecision p : {ActPrecision::kQ8, ActPrecision::kQ8x2}) {
        std::vector<float> y(M * N);
        matmul_packed(pool, x.data(), M, pw, y.data(), p);
        for (int64_t n = 0; n < N; ++n) {
          dequantize_row(type, w.data() + n * row_bytes(type, K), wr.data(), K);
          double ref = 0, mag = 0;
          for (int64_t i = 0; i < K; ++i) {
            ref += static_cast<double>(wr[i]) * sign;
            mag += std::fabs(wr[i]);
          }
          for (int64_t m = 0; m < M; ++m) {
            ASSERT_NEAR(y[m * N + n], ref, 1e-5 * mag + 1e-6)
                << dtype_name(type) << " isa " << static_cast<int>(isa) << " "
                << act_precision_name(p) << " sign " << sign << " m " << m << " n " << n;
          }
        }
      }
    }
  }
}

class PackedTypesPrecisions : public ::testing::TestWithParam<std::tuple<DType, ActPrecision>> {};

TEST_P(PackedTypesPrecisions, BatchInvariantAcrossShapesThreadsAndIsas) {
  const DType type = std::get<0>(GetParam());
  const ActPrecision p = std::get<1>(GetParam());
  ThreadPool pool2(2), pool1(1), pool3(3);
  std::mt19937 rng(42);
  const int64_t K = 512, N = 45, M = 150;
  const auto w = random_weights(rng, type, N, K);
  const auto x = random_floats(rng, M * K);
  const PackedWeight pw = pack_weight(type, w.data(), N, K);
  std::vector<float> all(M * N);
  {
    IsaGuard guard(PackedIsa::kAvx2);
    matmul_packed(pool2, x.data(), M, pw, all.data(), p);
  }
  for (PackedIsa isa : isas()) {
    IsaGuard guard(isa);
    std::vector<float> again(M * N);
    matmul_packed(pool2, x.data(), M, pw, again.data(), p);
    EXPECT_EQ(0, std::memcmp(again.data(), all.data(), all.size() * sizeof(float)));
    std::vector<float> one(N);
    for (int64_t m : {0L, 1L, 5L, 63L, 64L, 130L, 149L}) {
      matmul_packed(pool1, x.data() + m * K, 1, pw, one.data(), p);
      EXPECT_EQ(0, std::memcmp(one.data(), all.data() + m * N, N * sizeof(float))) << "row " << m;
    }
    for (int64_t rows : {2, 3, 6, 8, 11, 16}) {  // 8 to 16 q8x2 tokens: the wide kernels
      std::vector<float> part(rows * N);
      matmul_packed(pool3, x.data() + 7 * K, rows, pw, part.data(), p);
      EXPECT_EQ(0, std::memcmp(part.data(), all.data() + 7 * N, part.size() * sizeof(float)))
          << rows << " rows";
    }
  }
}

// Odd and even block counts per row (the 512-bit kernels pair blocks and finish an odd one
// alone): every instruction set gives the AVX2 kernels' bits.
TEST_P(PackedTypesPrecisions, OddAndEvenBlockCountsMatchAcrossIsas) {
  const DType type = std::get<0>(GetParam());
  const ActPrecision p = std::get<1>(GetParam());
  ThreadPool pool(2);
  std::mt19937 rng(17);
  for (int64_t K : k_sizes(type, {32, 64, 96, 544, 576})) {
    const int64_t N = 21;
    const auto w = random_weights(rng, type, N, K);
    const PackedWeight pw = pack_weight(type, w.data(), N, K);
    for (int64_t M : {1, 7, 12, 16}) {
      const auto x = random_floats(rng, M * K);
      std::vector<float> want(M * N);
      {
        IsaGuard guard(PackedIsa::kAvx2);
        matmul_packed(pool, x.data(), M, pw, want.data(), p);
      }
      for (PackedIsa isa : isas()) {
        IsaGuard guard(isa);
        std::vector<float> got(M * N);
        matmul_packed(pool, x.data(), M, pw, got.data(), p);
        EXPECT_EQ(0, std::memcmp(got.data(), want.data(), want.size() * sizeof(float)))
            << "K " << K << " M " << M << " isa " << static_cast<int>(isa);
      }
    }
  }
}

#define LLMSERVE_PACKABLE_TYPES                                                              \
  DType::Q4_0, DType::Q4_1, DType::Q8_0, DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, \
      DType::Q6_K
INSTANTIATE_TEST_SUITE_P(PackableTypes, PackedTypes, ::testing::Values(LLMSERVE_PACKABLE_TYPES),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });
INSTANTIATE_TEST_SUITE_P(PackableTypes, PackedTypesPrecisions,
                         ::testing::Combine(::testing::Values(LLMSERVE_PACKABLE_TYPES),
                                            ::testing::Values(ActPrecision::kQ8,
                                                              ActPrecision::kQ8x2)),
                         [](const auto& info) {
                           return std::string(dtype_name(std::get<0>(info.param))) + "_" +
                                  std::string(act_precision_name(std::get<1>(info.param)));
                         });

// One quantization and one parallel_for for several weights gives each weight's own result, bit
// for bit.
// Weights whose kernels want different activation layouts (Q4 / Q8_0 / Q6_K-like) in one call, as a
// Q4_K_M file's q / k / v (Q4_K, Q4_K, Q6_K) come.
class PackedMulti : public ::testing::TestWithParam<std::vector<std::pair<DType, int64_t>>> {};

TEST_P(PackedMulti, MultiEqualsSeparateCalls) {
  ThreadPool pool(2);
  std::mt19937 rng(9);
  const auto& shapes = GetParam();
  const int64_t K = 512;
  std::vector<std::vector<uint8_t>> raw;
  std::vector<PackedWeight> packed;
  for (auto [t, n] : shapes) {
    raw.push_back(random_weights(rng, t, n, K));
    packed.push_back(pack_weight(t, raw.back().data(), n, K));
  }
  for (ActPrecision p : {ActPrecision::kQ8, ActPrecision::kQ8x2}) {
    for (int64_t M : {1, 5, 70}) {
      const auto x = random_floats(rng, M * K);
      std::vector<std::vector<float>> multi, single;
      std::vector<const PackedWeight*> ws;
      std::vector<float*> ys;
      for (size_t i = 0; i < shapes.size(); ++i) {
        multi.emplace_back(M * shapes[i].second, NAN);
        single.emplace_back(M * shapes[i].second, NAN);
        ws.push_back(&packed[i]);
      }
      for (auto& y : multi) ys.push_back(y.data());
      matmul_packed_multi(pool, x.data(), M, ws, ys, p);
      for (size_t i = 0; i < shapes.size(); ++i) {
        matmul_packed(pool, x.data(), M, packed[i], single[i].data(), p);
        EXPECT_EQ(0, std::memcmp(multi[i].data(), single[i].data(), single[i].size() * 4))
            << "weight " << i << " M=" << M << " " << act_precision_name(p);
      }
    }
  }
}

// Packing on a pool's threads writes the same bytes as packing on the caller's.
TEST(PackedWeight, PackingOnThreadsIsIdentical) {
  ThreadPool pool(3);
  std::mt19937 rng(5);
  for (DType t : {DType::Q4_0, DType::Q8_0, DType::Q2_K, DType::Q4_K, DType::Q6_K}) {
    const int64_t N = 77, K = 512;
    const auto w = random_weights(rng, t, N, K);
    const PackedWeight one = pack_weight(t, w.data(), N, K);
    const PackedWeight many = pack_weight(t, w.data(), N, K, &pool);
    ASSERT_EQ(one.bytes(), many.bytes());
    EXPECT_EQ(0, std::memcmp(one.data(), many.data(), one.bytes())) << dtype_name(t);
  }
}

INSTANTIATE_TEST_SUITE_P(Mixes, PackedMulti,
                         ::testing::Values(
                             std::vector<std::pair<DType, int64_t>>{
                                 {DType::Q4_1, 576}, {DType::Q8_0, 37}, {DType::Q4_0, 192}},
                             std::vector<std::pair<DType, int64_t>>{
                                 {DType::Q4_K, 512}, {DType::Q4_K, 128}, {DType::Q6_K, 128}},
                             std::vector<std::pair<DType, int64_t>>{{DType::Q5_K, 40},
                                                                    {DType::Q2_K, 19},
                                                                    {DType::Q3_K, 24},
                                                                    {DType::Q8_0, 64},
                                                                    {DType::Q6_K, 13},
                                                                    {DType::Q4_0, 16}}));

TEST(PackedWeight, OnlyPackableTypesAndShapes) {
  EXPECT_TRUE(can_pack_weight(DType::Q4_1, 8, 64));
  EXPECT_TRUE(can_pack_weight(DType::Q4_K, 8, 256));
  EXPECT_TRUE(can_pack_weight(DType::Q3_K, 3, 512));
  EXPECT_FALSE(can_pack_weight(DType::Q6_K, 8, 128));
  EXPECT_TRUE(can_pack_weight(DType::Q2_K, 8, 256));
  EXPECT_FALSE(can_pack_weight(DType::Q5_0, 8, 256));
  EXPECT_FALSE(can_pack_weight(DType::F32, 8, 64));
  EXPECT_FALSE(can_pack_weight(DType::Q8_0, 0, 64));
  const std::vector<uint8_t> w(row_bytes(DType::Q5_0, 256) * 8);
  EXPECT_TRUE(pack_weight(DType::Q5_0, w.data(), 8, 256).empty());
}

}  // namespace
}  // namespace llmserve::kernels
