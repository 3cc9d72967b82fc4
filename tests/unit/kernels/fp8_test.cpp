// FP8 e4m3 (kernels/fp8.h): the f32 <-> e4m3 conversions against torch's cast
// (tests/fixtures/tiny_fp8/e4m3_cast.bin, made by tests/reference/make_tiny_fp8.py: every e4m3
// value, every tie between neighbours, values a hair beside the ties, log-uniform values from 2^-12
// to 448); the packed FP8 panels' matmul against the scalar f32 chain over dequantize_fp8_row's
// weights (bit for bit: each weight is one f32 product e4m3 * scale, the activations stay f32)
// and against a double-precision dot within the recursive-summation bound, for per-tensor,
// per-row, 128 x 128 and ragged (16 x 48) scale grids at edge shapes, every row count the
// micro-kernels specialise, both ISAs and mixed with BF16 in one matmul_packed_multi; and the
// block quantizer's round trip.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "llmserve/kernels/dequantize.h"
#include "llmserve/kernels/fp8.h"
#include "llmserve/kernels/packed_weight.h"
#include "packed_isa_guard.h"

namespace llmserve::kernels {
namespace {

using testing::IsaGuard;

std::vector<PackedIsa> isas() {
  std::vector<PackedIsa> v = {PackedIsa::kAvx2};
  if (cpu_has_avx512_vnni()) v.push_back(PackedIsa::kAvx512Vnni);
  return v;
}

struct CastTable {
  std::vector<float> x;
  std::vector<uint8_t> q;
};

CastTable read_cast_table() {
  std::ifstream f(std::string(LLMSERVE_FIXTURES_DIR) + "/tiny_fp8/e4m3_cast.bin", std::ios::binary);
  uint32_t n = 0;
  f.read(reinterpret_cast<char*>(&n), 4);
  CastTable t{std::vector<float>(n), std::vector<uint8_t>(n)};
  f.read(reinterpret_cast<char*>(t.x.data()), static_cast<std::streamsize>(n) * 4);
  f.read(reinterpret_cast<char*>(t.q.data()), n);
  EXPECT_TRUE(f.good());
  return t;
}

TEST(Fp8E4m3, CastEqualsTorch) {
  const CastTable t = read_cast_table();
  ASSERT_GT(t.x.size(), 4000u);
  int failures = 0, exact = 0;
  for (size_t i = 0; i < t.x.size() && failures < 10; ++i) {
    const uint8_t got = float_to_fp8_e4m3(t.x[i]);
    if (got != t.q[i]) {
      ++failures;
      ADD_FAILURE() << "x = " << t.x[i] << ": got 0x" << std::hex << int{got} << ", torch 0x"
                    << int{t.q[i]};
    }
    exact += fp8_e4m3_to_float(t.q[i]) == t.x[i];
  }
  EXPECT_GE(exact, 253);  // every finite e4m3 value (+0 and -0 compare equal) decodes to itself
}

TEST(Fp8E4m3, DecodesEveryCode) {
  EXPECT_EQ(fp8_e4m3_to_float(0x7e), 448.0f);
  EXPECT_EQ(fp8_e4m3_to_float(0xfe), -448.0f);
  EXPECT_EQ(fp8_e4m3_to_float(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(fp8_e4m3_to_float(0x08), std::ldexp(1.0f, -6));
  EXPECT_TRUE(std::isnan(fp8_e4m3_to_float(0x7f)));
  EXPECT_TRUE(std::isnan(fp8_e4m3_to_float(0xff)));
  EXPECT_EQ(float_to_fp8_e4m3(1000.0f), 0x7e);  // saturates, as the clamped quantizers
  EXPECT_EQ(float_to_fp8_e4m3(-1e30f), 0xfe);
  EXPECT_EQ(float_to_fp8_e4m3(NAN), 0x7f);
}

struct Fp8Case {
  std::vector<uint8_t> w;
  std::vector<float> scales;
  Fp8Scales grid;
  std::vector<float> x;
};

Fp8Case make_case(int64_t M, int64_t N, int64_t K, int64_t br, int64_t bc, uint32_t seed) {
  std::mt19937 rng(seed);
  Fp8Case c;
  c.w.resize(static_cast<size_t>(N * K));
  for (uint8_t& b : c.w) {
    do {
      b = static_cast<uint8_t>(rng());
    } while ((b & 0x7f) == 0x7f);  // no NaN codes
  }
  c.grid = {nullptr, br, bc};
  c.scales.resize(c.grid.count(N, K));
  std::uniform_real_distribution<float> s(1e-4f, 3e-3f), xs(-2.0f, 2.0f);
  for (float& v : c.scales) v = s(rng);
  c.grid.data = c.scales.data();
  c.x.resize(static_cast<size_t>(M * K));
  for (float& v : c.x) v = xs(rng);
  return c;
}

std::string label(int64_t M, int64_t N, int64_t K, int64_t br, int64_t bc) {
  return "M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K) +
         " block=" + std::to_string(br) + "x" + std::to_string(bc) +
         " isa=" + std::to_string(static_cast<int>(active_packed_isa()));
}

// The packed product against the f32 chain and a double dot of dequantize_fp8_row's weights.
void check(const Fp8Case& c, const std::vector<float>& y, int64_t M, int64_t N, int64_t K,
           const std::string& what) {
  std::vector<float> wr(static_cast<size_t>(K));
  int failures = 0;
  for (int64_t n = 0; n < N && failures < 5; ++n) {
    dequantize_fp8_row(c.w.data(), c.grid, n, K, wr.data());
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
      EXPECT_TRUE(ok) << what << " m=" << m << " n=" << n << ": got " << got << " f32 chain "
                      << chain << " double " << ref;
      failures += !ok;
    }
  }
}

TEST(PackedFp8, MatchesF32ChainAndDoubleReference) {
  ThreadPool pool(2);
  uint32_t seed = 1;
  for (PackedIsa isa : isas()) {
    IsaGuard guard(isa);
    for (int64_t K : {1, 33, 128, 300}) {
      for (int64_t N : {1, 31, 33, 70}) {
        // Per tensor, per row, 128 x 128 and a ragged grid whose groups split K unevenly.
        const int64_t grids[][2] = {{N, K}, {1, K}, {128, 128}, {16, 48}};
        for (const auto& g : grids) {
          for (int64_t M : {1, 2, 3, 5, 7, 13}) {
            const Fp8Case c = make_case(M, N, K, g[0], g[1], seed++);
            const PackedWeight pw = pack_weight_fp8(c.w.data(), c.grid, N, K, &pool);
            ASSERT_FALSE(pw.empty());
            EXPECT_EQ(pw.type(), DType::F8_E4M3);
            EXPECT_EQ(pw.group(), g[1]);
            std::vector<float> y(static_cast<size_t>(M * N), NAN);
            matmul_packed(pool, c.x.data(), M, pw, y.data());
            check(c, y, M, N, K, label(M, N, K, g[0], g[1]));
          }
        }
      }
    }
  }
}

TEST(PackedFp8, BitIdenticalAcrossBatchThreadsIsasAndBesideBf16) {
  const int64_t M = 40, N = 70, K = 301;
  const Fp8Case c = make_case(M, N, K, 128, 128, 7);
  ThreadPool pool1(1), pool3(3);
  const PackedWeight pw = pack_weight_fp8(c.w.data(), c.grid, N, K);
  std::vector<float> all(static_cast<size_t>(M * N));
  {
    IsaGuard guard(PackedIsa::kAvx2);
    matmul_packed(pool1, c.x.data(), M, pw, all.data());
  }
  check(c, all, M, N, K, "reference run");
  std::mt19937 rng(3);
  const std::vector<uint8_t> bf = testing::random_weights(rng, DType::BF16, 20, K);
  const PackedWeight pb = pack_weight(DType::BF16, bf.data(), 20, K);
  for (PackedIsa isa : isas()) {
    IsaGuard guard(isa);
    for (int64_t step : {1, 2, 5, 13, 40}) {
      std::vector<float> part(all.size());
      for (int64_t m = 0; m < M; m += step) {
        matmul_packed(pool3, c.x.data() + m * K, std::min(step, M - m), pw, part.data() + m * N);
      }
      EXPECT_EQ(std::memcmp(all.data(), part.data(), all.size() * sizeof(float)), 0)
          << "step " << step;
    }
    // One call with a BF16 weight beside it gives the same FP8 outputs.
    std::vector<float> y8(all.size()), y16(static_cast<size_t>(M * 20)), y16_alone(y16.size());
    const PackedWeight* ws[] = {&pb, &pw};
    float* ys[] = {y16.data(), y8.data()};
    matmul_packed_multi(pool3, c.x.data(), M, ws, ys);
    matmul_packed(pool3, c.x.data(), M, pb, y16_alone.data());
    EXPECT_EQ(std::memcmp(all.data(), y8.data(), all.size() * sizeof(float)), 0);
    EXPECT_EQ(std::memcmp(y16.data(), y16_alone.data(), y16.size() * sizeof(float)), 0);
  }
}

TEST(PackedFp8, RefusesMissingScales) {
  const std::vector<uint8_t> w(64, 0x38);
  EXPECT_TRUE(pack_weight_fp8(w.data(), Fp8Scales{}, 8, 8).empty());
  EXPECT_FALSE(can_pack_weight(DType::F8_E4M3, 8, 8));  // only with its scales
  const float huge = 256.0f;  // times the kernels' 2^120 it would overflow
  EXPECT_TRUE(pack_weight_fp8(w.data(), Fp8Scales{&huge, 8, 8}, 8, 8).empty());
  const float fine = 255.0f;
  EXPECT_FALSE(pack_weight_fp8(w.data(), Fp8Scales{&fine, 8, 8}, 8, 8).empty());
}

// model.quantize fp8's rule: s = max|w| / 448 per block, q = e4m3(w / s). Each block's largest
// magnitude maps to +-448 exactly; every element is within half an e4m3 step (2^-4 relative for
// normals, 2^-10 * s absolute below 2^-6 s) of w; an all-zero block gets scale 1 and zeros.
TEST(QuantizeFp8, BlockRuleRoundTrip) {
  ThreadPool pool(2);
  const int64_t N = 200, K = 300, B = 128;
  std::mt19937 rng(5);
  std::normal_distribution<float> d(0.0f, 0.05f);
  std::vector<float> w(static_cast<size_t>(N * K));
  for (float& v : w) v = d(rng);
  for (int64_t n = 128; n < N; ++n) {
    for (int64_t k = 256; k < K; ++k) w[n * K + k] = 0.0f;  // the ragged corner block: zero
  }
  std::vector<uint8_t> q(w.size());
  Fp8Scales grid{nullptr, B, B};
  std::vector<float> s(grid.count(N, K));
  grid.data = s.data();
  quantize_fp8_matrix(pool, DType::F32, w.data(), N, K, B, B, q.data(), s.data());
  EXPECT_EQ(s.size(), 6u);
  EXPECT_EQ(s[5], 1.0f);
  std::vector<float> back(static_cast<size_t>(K));
  for (int64_t n = 0; n < N; ++n) {
    dequantize_fp8_row(q.data(), grid, n, K, back.data());
    for (int64_t k = 0; k < K; ++k) {
      const float x = w[n * K + k], sc = grid.at(n, k, K);
      const float tol = std::max(std::fabs(x) * 0.0625f, sc * std::ldexp(1.0f, -10)) * 1.0001f;
      ASSERT_LE(std::fabs(back[k] - x), tol) << n << "," << k;
    }
  }
  for (size_t b = 0; b < 5; ++b) {
    const int64_t r0 = static_cast<int64_t>(b / 3) * B, c0 = static_cast<int64_t>(b % 3) * B;
    int at_max = 0;
    for (int64_t n = r0; n < std::min(N, r0 + B); ++n) {
      for (int64_t k = c0; k < std::min(K, c0 + B); ++k) at_max += (q[n * K + k] & 0x7f) == 0x7e;
    }
    EXPECT_GE(at_max, 1) << "block " << b;
  }
}

}  // namespace
}  // namespace llmserve::kernels
