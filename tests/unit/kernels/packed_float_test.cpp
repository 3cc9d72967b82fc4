// matmul_packed over F16 / BF16 weights (kernels/cpu/packed_float.h) against two independent
// references built from dequantize_row: a scalar f32 chain y = fmaf(w[k], x[k], y) over k = 0..K-1,
// which the kernels must match bit for bit (the weights convert exactly and the activations stay
// f32), and a double-precision dot, which that chain must meet within the recursive-summation
// bound K * 2^-24 * sum |w x| (so the exact match is not a match against a wrong order). Also:
// bit-identical rows whatever M, the thread count or the ISA (AVX2 forced, AVX-512), at edge
// shapes (K odd and not a multiple of 32, N not a multiple of the 32-row panel).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "kernel_test_util.h"
#include "llmserve/kernels/dequantize.h"
#include "llmserve/kernels/packed_weight.h"
#include "packed_isa_guard.h"

namespace llmserve::kernels {
namespace {

using testing::random_floats;
using testing::random_weights;

using testing::IsaGuard;

// Forced AVX2, and AVX-512 where the CPU has it (the float kernels follow the VNNI switch).
std::vector<PackedIsa> isas() {
  std::vector<PackedIsa> v = {PackedIsa::kAvx2};
  if (cpu_has_avx512_vnni()) v.push_back(PackedIsa::kAvx512Vnni);
  return v;
}

std::string label(DType t, int64_t M, int64_t K, int64_t N) {
  return std::string(dtype_name(t)) + " M=" + std::to_string(M) + " K=" + std::to_string(K) +
         " N=" + std::to_string(N) +
         " isa=" + std::to_string(static_cast<int>(active_packed_isa()));
}

struct Case {
  std::vector<uint8_t> w;
  std::vector<float> x;
};

Case make_case(DType type, int64_t M, int64_t K, int64_t N, uint32_t seed) {
  std::mt19937 rng(seed);
  Case c{random_weights(rng, type, N, K), random_floats(rng, M * K, -2.0f, 2.0f)};
  for (int64_t i = 0; i < M * K; i += 97) c.x[i] *= 8.0f;
  return c;
}

void check(DType type, int64_t M, int64_t K, int64_t N, ThreadPool& pool, uint32_t seed) {
  const Case c = make_case(type, M, K, N, seed);
  ASSERT_TRUE(can_pack_weight(type, N, K));
  const PackedWeight pw = pack_weight(type, c.w.data(), N, K);
  ASSERT_FALSE(pw.empty());
  std::vector<float> y(M * N, NAN);
  matmul_packed(pool, c.x.data(), M, pw, y.data());
  const size_t rb = row_bytes(type, K);
  std::vector<float> wr(K);
  int failures = 0;
  for (int64_t n = 0; n < N && failures < 5; ++n) {
    dequantize_row(type, c.w.data() + n * rb, wr.data(), K);
    for (int64_t m = 0; m < M && failures < 5; ++m) {
      const float* xr = c.x.data() + m * K;
      float chain = 0.0f;
      double ref = 0, mag = 0;
      for (int64_t k = 0; k < K; ++k) {
        chain = std::fmaf(wr[k], xr[k], chain);
        ref += static_cast<double>(wr[k]) * xr[k];
        mag += std::fabs(static_cast<double>(wr[k]) * xr[k]);
      }
      const float got = y[m * N + n];
      const double bound = static_cast<double>(K) * std::ldexp(1.0, -24) * mag * 1.01 + 1e-30;
      const bool ok = std::memcmp(&got, &chain, sizeof(float)) == 0 &&
                      std::fabs(static_cast<double>(chain) - ref) <= bound;
      EXPECT_TRUE(ok) << label(type, M, K, N) << " m=" << m << " n=" << n << ": got " << got
                      << " f32 chain " << chain << " double " << ref << " bound " << bound;
      failures += !ok;
    }
  }
}

class PackedFloat : public ::testing::TestWithParam<DType> {};

TEST_P(PackedFloat, MatchesF32ChainAndDoubleReference) {
  ThreadPool pool(2);
  for (PackedIsa isa : isas()) {
    IsaGuard guard(isa);
    uint32_t seed = 1;
    for (int64_t K : {1, 2, 7, 33, 64, 100, 577}) {
      for (int64_t N : {1, 31, 33, 70}) {
        for (int64_t M : {1, 2, 7}) check(GetParam(), M, K, N, pool, seed++);
      }
    }
    for (int64_t M : {64, 130, 300}) check(GetParam(), M, 129, 45, pool, seed++);
  }
}

TEST_P(PackedFloat, BitIdenticalAcrossBatchThreadsAndIsas) {
  const DType type = GetParam();
  ThreadPool pool1(1), pool2(2), pool3(3);
  const int64_t M = 150, K = 301, N = 70;
  const Case c = make_case(type, M, K, N, 42);
  const PackedWeight pw = pack_weight(type, c.w.data(), N, K);
  ASSERT_FALSE(pw.empty());
  {  // packing on a pool's threads writes the same bytes
    const PackedWeight pooled = pack_weight(type, c.w.data(), N, K, &pool3);
    ASSERT_EQ(pooled.bytes(), pw.bytes());
    EXPECT_EQ(std::memcmp(pooled.data(), pw.data(), pw.bytes()), 0);
  }
  std::vector<float> all(M * N);
  {
    IsaGuard guard(PackedIsa::kAvx2);
    matmul_packed(pool2, c.x.data(), M, pw, all.data());
  }
  for (PackedIsa isa : isas()) {
    IsaGuard guard(isa);
    for (ThreadPool* pool : {&pool1, &pool3}) {
      std::vector<float> again(M * N);
      matmul_packed(*pool, c.x.data(), M, pw, again.data());
      EXPECT_EQ(std::memcmp(all.data(), again.data(), all.size() * sizeof(float)), 0)
          << label(type, M, K, N);
    }
    // Rows alone and in uneven batches (the decode kernels, other tilings).
    for (int64_t step : {1, 2, 5, 13, 80}) {
      std::vector<float> part(M * N);
      for (int64_t m = 0; m < M; m += step) {
        const int64_t rows = std::min(step, M - m);
        matmul_packed(pool2, c.x.data() + m * K, rows, pw, part.data() + m * N);
      }
      EXPECT_EQ(std::memcmp(all.data(), part.data(), all.size() * sizeof(float)), 0)
          << label(type, M, K, N) << " step=" << step;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, PackedFloat, ::testing::Values(DType::F16, DType::BF16),
                         [](const ::testing::TestParamInfo<DType>& i) {
                           return std::string(dtype_name(i.param));
                         });

// One fused call over F16, BF16 and a quantized weight gives what each gives alone.
TEST(PackedFloatMulti, MixedTypesMatchSingleCalls) {
  ThreadPool pool(2);
  const int64_t K = 96, M = 9;
  const DType types[] = {DType::F16, DType::Q8_0, DType::BF16, DType::F16};
  const int64_t Ns[] = {40, 24, 33, 8};
  std::mt19937 rng(7);
  const auto x = random_floats(rng, M * K);
  std::vector<PackedWeight> pws;
  for (int i = 0; i < 4; ++i) {
    const auto w = random_weights(rng, types[i], Ns[i], K);
    pws.push_back(pack_weight(types[i], w.data(), Ns[i], K));
    ASSERT_FALSE(pws.back().empty());
  }
  for (PackedIsa isa : isas()) {
    IsaGuard guard(isa);
    for (int64_t rows : {int64_t{1}, M}) {
      std::vector<std::vector<float>> fused(4), single(4);
      const PackedWeight* ws[4];
      float* ys[4];
      for (int i = 0; i < 4; ++i) {
        fused[i].assign(rows * Ns[i], NAN);
        single[i].assign(rows * Ns[i], NAN);
        ws[i] = &pws[i];
        ys[i] = fused[i].data();
        matmul_packed(pool, x.data(), rows, pws[i], single[i].data());
      }
      matmul_packed_multi(pool, x.data(), rows, ws, ys);
      for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(std::memcmp(fused[i].data(), single[i].data(), fused[i].size() * sizeof(float)),
                  0)
            << "weight " << i << " rows " << rows;
      }
    }
  }
}

}  // namespace
}  // namespace llmserve::kernels
