// FP8 e4m3 weights on the device (kernels/cuda/fp8_matmul.cu, engine/runner/cuda/cuda_fp8.cpp)
// against their CPU twins: the decode GEMV for every row count 1..8 over per-tensor, per-row,
// 128 x 128 (ragged rows) and 16 x 32 scale grids, with and without a bias, against a double dot
// of kernels::dequantize_fp8_row's weights and the bf16 activations (f32 accumulation in 16-column
// partials: relative 1e-5 of the sum of |w x|, plus the same of the largest output); the
// dequantized bf16 copy bit for bit against the CPU's bf16(e4m3 * scale); and the tiny FP8
// checkpoints (tests/reference/make_tiny_fp8.py) through ModelRunner on CUDA against transformers'
// logits, prefilled at once (the dequantized GEMM path) and token by token (the GEMV path),
// within the CUDA oracle's bound on bf16 GEMM inputs (hf_oracle.h: 0.2 x the logits' std).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "engine/runner/batch_builder.h"
#include "engine/runner/model_runner.h"
#include "llmserve/kernels/cuda/fp8_matmul.h"
#include "llmserve/kernels/fp8.h"
#include "tests/unit/cuda/cuda_test_util.h"

namespace llmserve {
namespace {

namespace kc = kernels::cuda;
using cuda_test::DeviceBuffer;
using cuda_test::near_all;

struct HostFp8 {
  int64_t N, K;
  std::vector<uint8_t> w;
  std::vector<float> scales;
  kernels::Fp8Scales grid;
};

HostFp8 random_fp8(int64_t N, int64_t K, int64_t br, int64_t bc, uint32_t seed) {
  std::mt19937 rng(seed);
  HostFp8 h{N, K, std::vector<uint8_t>(static_cast<size_t>(N * K)), {}, {nullptr, br, bc}};
  for (uint8_t& b : h.w) {
    do {
      b = static_cast<uint8_t>(rng());
    } while ((b & 0x7f) == 0x7f);
  }
  h.scales.resize(h.grid.count(N, K));
  std::uniform_real_distribution<float> s(1e-4f, 4e-3f);
  for (float& v : h.scales) v = s(rng);
  h.grid.data = h.scales.data();
  return h;
}

TEST(CudaFp8, GemvMatchesDequantizedDot) {
  LLMSERVE_REQUIRE_CUDA();
  const int64_t N = 300, K = 512;
  const int64_t grids[][2] = {{N, K}, {1, K}, {128, 128}, {16, 32}};
  uint32_t seed = 1;
  for (const auto& g : grids) {
    const HostFp8 h = random_fp8(N, K, g[0], g[1], seed++);
    DeviceBuffer<uint8_t> dw(h.w);
    DeviceBuffer<float> ds(h.scales);
    const kc::Fp8Matrix m{dw.get(), ds.get(), g[0], g[1], N, K};
    ASSERT_TRUE(kc::fp8_gemv_supports(m));
    const auto bias = cuda_test::random_floats(static_cast<size_t>(N), seed++, -1, 1);
    DeviceBuffer<float> dbias(bias);
    for (int M = 1; M <= kc::kFp8GemvMaxRows; ++M) {
      for (bool with_bias : {false, true}) {
        // x: bf16 rows with the f32 row pitch (2 K elements), as the backend stores GEMM inputs.
        const auto xf = cuda_test::round_bf16(
            cuda_test::random_floats(static_cast<size_t>(M * K), seed++, -2, 2));
        std::vector<uint16_t> xb(static_cast<size_t>(M * 2 * K), 0);
        for (int r = 0; r < M; ++r) {
          for (int64_t k = 0; k < K; ++k) {
            xb[static_cast<size_t>(r * 2 * K + k)] =
                kernels::fp32_to_bf16(xf[static_cast<size_t>(r * K + k)]);
          }
        }
        std::vector<float> want(static_cast<size_t>(M * N)), wr(static_cast<size_t>(K));
        double mag = 0, top = 0;
        for (int64_t n = 0; n < N; ++n) {
          kernels::dequantize_fp8_row(h.w.data(), h.grid, n, K, wr.data());
          for (int r = 0; r < M; ++r) {
            double dot = with_bias ? bias[static_cast<size_t>(n)] : 0.0, a = 0;
            for (int64_t k = 0; k < K; ++k) {
              dot += static_cast<double>(wr[k]) * xf[static_cast<size_t>(r * K + k)];
              a += std::fabs(static_cast<double>(wr[k]) * xf[static_cast<size_t>(r * K + k)]);
            }
            want[static_cast<size_t>(r * N + n)] = static_cast<float>(dot);
            mag = std::max(mag, a);
            top = std::max(top, std::fabs(dot));
          }
        }
        DeviceBuffer<uint16_t> dx(xb);
        DeviceBuffer<float> dy(static_cast<size_t>(M * N));
        ASSERT_EQ(kc::fp8_gemv(dx.get(), 2 * K, M, m, with_bias ? dbias.get() : nullptr, dy.get(),
                               N, nullptr),
                  cudaSuccess);
        const std::string what = "fp8_gemv M=" + std::to_string(M) + " block " +
                                 std::to_string(g[0]) + "x" + std::to_string(g[1]) +
                                 (with_bias ? " bias" : "");
        EXPECT_TRUE(
            near_all(what, dy.download(), want, static_cast<float>(1e-5 * (mag + top)), 1e-5f));
      }
    }
  }
}

TEST(CudaFp8, DequantizedCopyIsBitExact) {
  LLMSERVE_REQUIRE_CUDA();
  const int64_t N = 200, K = 300;  // ragged 128 x 128 blocks on both axes, K not a multiple of 16
  const HostFp8 h = random_fp8(N, K, 128, 128, 9);
  DeviceBuffer<uint8_t> dw(h.w);
  DeviceBuffer<float> ds(h.scales);
  const kc::Fp8Matrix m{dw.get(), ds.get(), 128, 128, N, K};
  EXPECT_FALSE(kc::fp8_gemv_supports(m));
  DeviceBuffer<uint16_t> out(static_cast<size_t>(N * K));
  ASSERT_EQ(kc::fp8_dequantize_bf16(m, out.get(), nullptr), cudaSuccess);
  std::vector<uint16_t> want(static_cast<size_t>(N * K));
  std::vector<float> row(static_cast<size_t>(K));
  for (int64_t n = 0; n < N; ++n) {
    kernels::dequantize_fp8_row(h.w.data(), h.grid, n, K, row.data());
    for (int64_t k = 0; k < K; ++k) {
      want[static_cast<size_t>(n * K + k)] = kernels::fp32_to_bf16(row[static_cast<size_t>(k)]);
    }
  }
  EXPECT_EQ(out.download(), want);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<float> read_f32(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  std::vector<float> v(static_cast<size_t>(in.tellg()) / 4);
  in.seekg(0);
  in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * 4));
  return v;
}

struct Fp8ModelCase {
  const char* dir;
  const char* quantize;
  const char* oracle;
};

class CudaTinyFp8 : public ::testing::TestWithParam<Fp8ModelCase> {};

TEST_P(CudaTinyFp8, MatchesTransformersPrefilledAndTokenByToken) {
  LLMSERVE_REQUIRE_CUDA();
  const Fp8ModelCase c = GetParam();
  const std::string root = std::string(LLMSERVE_FIXTURES_DIR) + "/tiny_fp8/";
  const auto j = nlohmann::json::parse(read_text(root + c.oracle + "/expected.json"));
  const auto want = read_f32(root + c.oracle + "/expected_logits.f32");
  ModelRunnerOptions o;
  o.model_path = root + c.dir;
  o.quantize = c.quantize;
  o.use_cuda = true;
  o.gpu_memory_utilization = 0.1;
  o.max_num_seqs = 8;
  o.max_model_len = 256;
  o.max_tokens_per_step = 128;
  o.max_samples_per_step = 128;
  auto runner = ModelRunner::create(o);
  ASSERT_TRUE(runner.is_ok()) << runner.status().to_string();
  ModelRunner& r = **runner;
  const int64_t V = r.config().vocab_size;
  BatchBuilder builder(r.block_size());
  double mean = 0, var = 0;
  for (float v : want) mean += v;
  mean /= static_cast<double>(want.size());
  for (float v : want) var += (v - mean) * (v - mean);
  const double bound = 0.2 * std::sqrt(var / static_cast<double>(want.size()));
  for (bool token_by_token : {false, true}) {
    size_t offset = 0;
    double worst = 0;
    for (const auto& seq : j["sequences"].get<std::vector<std::vector<int32_t>>>()) {
      const auto T = static_cast<int32_t>(seq.size());
      const auto table = contiguous_block_table(0, T, r.block_size());
      for (int32_t at = 0; at < T;) {
        const int32_t n = token_by_token ? 1 : T;
        const BatchEntry e{seq, at, n, table, true};
        auto batch = builder.build(std::span(&e, 1));
        ASSERT_TRUE(batch.is_ok());
        ForwardBatch fb = *batch;
        std::vector<int32_t> rows(static_cast<size_t>(n));
        for (int32_t i = 0; i < n; ++i) rows[static_cast<size_t>(i)] = i;
        fb.sample_rows = rows;
        auto logits = r.execute(fb);
        ASSERT_TRUE(logits.is_ok()) << logits.status().to_string();
        for (int64_t i = 0; i < n * V; ++i) {
          worst = std::max(worst, std::fabs(double((*logits)[i]) - want[offset + i]));
        }
        offset += static_cast<size_t>(n * V);
        at += n;
      }
    }
    std::printf("[%s%s] CUDA FP8 %s: max |logit diff| vs transformers %.3g (bound %.3g)\n", c.dir,
                *c.quantize ? " quantize fp8" : "", token_by_token ? "token by token" : "prefilled",
                worst, bound);
    EXPECT_LE(worst, bound) << c.dir << (token_by_token ? " token by token" : " prefilled");
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, CudaTinyFp8,
                         ::testing::Values(Fp8ModelCase{"block", "", "block"},
                                           Fp8ModelCase{"channel", "", "channel"},
                                           Fp8ModelCase{"bf16", "fp8", "block"}),
                         [](const ::testing::TestParamInfo<Fp8ModelCase>& i) {
                           return std::string(i.param.dir) + (*i.param.quantize ? "_quantize" : "");
                         });

}  // namespace
}  // namespace llmserve
