// Prefill and paged decode attention on the GPU against the CPU kernels over a shape grid:
// head_dim 64/128, GQA group 1/4/8, block size 16, lengths crossing block and split edges,
// scattered pages, and one batch mixing decodes and prefills as the graph issues them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "llmserve/kernels/attention.h"
#include "llmserve/kernels/cuda/attention.h"
#include "tests/unit/cuda/cuda_test_util.h"

namespace llmserve {
namespace {

namespace kc = kernels::cuda;
using cuda_test::DeviceBuffer;
using cuda_test::near_all;

struct Req {
  int q_len;    // new tokens this step
  int seq_len;  // tokens in cache after the step
};

// A batch over a scattered paged cache, with CPU (f32) and GPU (bf16) copies of the same values.
struct Case {
  int head_dim, group, num_kv_heads = 2, block_size = 16;
  std::vector<Req> reqs;
  int num_heads() const { return num_kv_heads * group; }
};

struct Result2 {
  std::vector<float> gpu, cpu;
};

Result2 run_case(const Case& c, int num_decodes) {
  const int B = static_cast<int>(c.reqs.size()), H = c.num_heads(), D = c.head_dim;
  int max_blocks = 0, T = 0, total_blocks = 0, max_len = 0, max_q = 0;
  std::vector<int32_t> qs = {0}, seq;
  for (const Req& r : c.reqs) {
    const int nb = (r.seq_len + c.block_size - 1) / c.block_size;
    max_blocks = std::max(max_blocks, nb);
    total_blocks += nb;
    T += r.q_len;
    qs.push_back(T);
    seq.push_back(r.seq_len);
    max_len = std::max(max_len, r.seq_len);
    max_q = std::max(max_q, r.q_len);
  }
  const int num_blocks = total_blocks + 3;
  std::vector<int32_t> perm(num_blocks);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937(42));
  std::vector<int32_t> bt(static_cast<size_t>(B) * max_blocks, 0);
  int next = 0;
  for (int b = 0; b < B; ++b) {
    const int nb = (c.reqs[b].seq_len + c.block_size - 1) / c.block_size;
    for (int j = 0; j < nb; ++j) bt[static_cast<size_t>(b) * max_blocks + j] = perm[next++];
  }
  const size_t cache = static_cast<size_t>(num_blocks) * c.num_kv_heads * c.block_size * D;
  const auto k = cuda_test::round_bf16(cuda_test::random_floats(cache, 11));
  const auto v = cuda_test::round_bf16(cuda_test::random_floats(cache, 12));
  const auto q = cuda_test::random_floats(static_cast<size_t>(T) * H * D, 13, -2.0f, 2.0f);
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));

  Result2 r;
  r.cpu.assign(q.size(), 0.0f);
  kernels::ThreadPool pool(1);
  const int64_t stride = static_cast<int64_t>(H) * D;
  kernels::PagedKv cpu_kv{
      {num_blocks, c.num_kv_heads, c.block_size, D}, k.data(), v.data(), bt.data(), max_blocks};
  if (num_decodes > 0) {
    kernels::decode_attention(pool, cpu_kv, q.data(), seq.data(), num_decodes, H, scale,
                              r.cpu.data());
  }
  if (num_decodes < B) {
    kernels::PagedKv p = cpu_kv;
    p.block_tables += static_cast<int64_t>(num_decodes) * max_blocks;
    kernels::prefill_attention(pool, p, q.data(), qs.data() + num_decodes, seq.data() + num_decodes,
                               B - num_decodes, H, scale, r.cpu.data());
  }

  DeviceBuffer<uint16_t> dk(cuda_test::to_bf16(k)), dv(cuda_test::to_bf16(v));
  DeviceBuffer<int32_t> dbt(bt), dqs(qs), dseq(seq);
  DeviceBuffer<float> dq(q), dout(std::vector<float>(q.size(), 0.0f));
  kc::PagedKvDevice kv{dk.get(), dv.get(), dbt.get(), max_blocks, c.num_kv_heads, c.block_size, D};
  if (num_decodes > 0) {
    DeviceBuffer<float> ws(
        static_cast<size_t>(kc::decode_attention_workspace_floats(num_decodes, H, D, max_len)));
    EXPECT_EQ(kc::decode_attention(kv, dq.get(), dseq.get(), num_decodes, max_len, H, scale,
                                   ws.get(), dout.get(), nullptr),
              cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  if (num_decodes < B) {
    kc::PagedKvDevice p = kv;
    p.block_tables += static_cast<int64_t>(num_decodes) * max_blocks;
    EXPECT_EQ(kc::prefill_attention(p, dq.get(), dqs.get() + num_decodes, dseq.get() + num_decodes,
                                    B - num_decodes, max_q, H, scale, dout.get(), nullptr),
              cudaSuccess);
  }
  r.gpu = dout.download();
  (void)stride;
  return r;
}

std::string name(const Case& c, const char* kind) {
  std::string s = std::string(kind) + " head_dim " + std::to_string(c.head_dim) + " group " +
                  std::to_string(c.group) + " reqs";
  for (const Req& r : c.reqs)
    s += " (" + std::to_string(r.q_len) + "/" + std::to_string(r.seq_len) + ")";
  return s;
}

TEST(CudaAttention, DecodeMatchesCpuOverShapeGrid) {
  LLMSERVE_REQUIRE_CUDA();
  for (int D : {64, 128}) {
    for (int G : {1, 4, 8}) {
      Case c{D, G, 2, 16, {}};
      for (int len : {1, 2, 15, 16, 17, 33, 255, 256, 257, 600, 4100}) c.reqs.push_back({1, len});
      const auto r = run_case(c, static_cast<int>(c.reqs.size()));
      EXPECT_TRUE(near_all(name(c, "decode_attention"), r.gpu, r.cpu, 2e-4f, 2e-3f));
    }
  }
}

TEST(CudaAttention, PrefillMatchesCpuOverShapeGrid) {
  LLMSERVE_REQUIRE_CUDA();
  for (int D : {64, 128}) {
    for (int G : {1, 4, 8}) {
      // (q_len, seq_len): fresh prompts of 1..130 tokens and chunks after cached pages.
      Case c{D,
             G,
             2,
             16,
             {{1, 1},
              {5, 5},
              {16, 16},
              {17, 17},
              {64, 64},
              {65, 65},
              {130, 130},
              {7, 27},
              {70, 103},
              {1, 40},
              {33, 300}}};
      const auto r = run_case(c, 0);
      // Q and P are rounded to bf16 for the tensor cores: about 3 significant digits.
      EXPECT_TRUE(near_all(name(c, "prefill_attention"), r.gpu, r.cpu, 2e-2f, 2e-2f));
    }
  }
}

TEST(CudaAttention, MixedDecodeAndPrefillBatchMatchesCpu) {
  LLMSERVE_REQUIRE_CUDA();
  Case c{128, 4, 2, 16, {{1, 18}, {1, 300}, {1, 1}, {40, 40}, {20, 52}}};
  const auto r = run_case(c, 3);
  EXPECT_TRUE(near_all(name(c, "mixed decode+prefill"), r.gpu, r.cpu, 2e-2f, 2e-2f));
}

}  // namespace
}  // namespace llmserve
