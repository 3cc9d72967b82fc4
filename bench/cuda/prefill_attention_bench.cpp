// Prefill attention times: causal prefill of Llama-3.1-8B shapes (32 heads, 8 kv heads,
// head_dim 128) and SmolLM2 shapes (9 heads, 3 kv heads, head_dim 64), block size 16, q inside a
// fused QKV buffer and out in the f32 row pitch as CudaOps lays them out. Causal FLOPs per
// request: 4 heads head_dim L^2 / 2.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "bench/cuda/bench_util.h"
#include "llmserve/kernels/cuda/prefill_attention.h"

namespace llmserve::bench {
namespace {

namespace kc = kernels::cuda;

struct Shape {
  const char* model;
  int batch, q_len, heads, kv_heads, head_dim;
};

struct Result {
  Shape shape;
  cudaError_t err;
  float ms;
  double tflops;
};

template <typename T>
T* upload(const std::vector<T>& h) {
  void* p = nullptr;
  if (cudaMalloc(&p, h.size() * sizeof(T)) != cudaSuccess) return nullptr;
  cudaMemcpy(p, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice);
  return static_cast<T*>(p);
}

Result run_shape(const Shape& sh, cudaStream_t s) {
  const int bs = 16, B = sh.batch, L = sh.q_len, H = sh.heads, KV = sh.kv_heads, D = sh.head_dim;
  const int pages = (L + bs - 1) / bs;
  const int64_t tokens = static_cast<int64_t>(B) * L;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  // Random bf16 K/V (sign, exponent around 1, random mantissa) and f32 q.
  std::vector<uint16_t> kv(static_cast<size_t>(B) * pages * KV * bs * D);
  for (uint16_t& x : kv) x = static_cast<uint16_t>(0x3f00u | (rng() & 0x807fu));
  const int64_t q_stride = static_cast<int64_t>(H + 2 * KV) * D;
  std::vector<float> q(static_cast<size_t>(tokens * q_stride));
  for (float& x : q) x = unit(rng);
  std::vector<int32_t> bt(static_cast<size_t>(B) * pages), qs(B + 1), seq(B, L);
  for (size_t i = 0; i < bt.size(); ++i) bt[i] = static_cast<int32_t>(i);
  for (int b = 0; b <= B; ++b) qs[b] = b * L;

  uint16_t* dk = upload(kv);
  uint16_t* dv = upload(kv);
  float* dq = upload(q);
  int32_t* dbt = upload(bt);
  int32_t* dqs = upload(qs);
  int32_t* dseq = upload(seq);
  const int64_t out_stride = 2 * static_cast<int64_t>(H) * D;
  uint16_t* dout = upload(std::vector<uint16_t>(static_cast<size_t>(tokens * out_stride), 0));

  Result r{sh, cudaErrorMemoryAllocation, 0.0f, 0.0};
  if (dk && dv && dq && dbt && dqs && dseq && dout) {
    kc::PrefillAttentionParams p;
    p.kv = {dk, dv, dbt, pages, KV, bs, D};
    p.q = dq;
    p.q_row_stride = q_stride;
    p.query_start = dqs;
    p.seq_lens = dseq;
    p.num_seqs = B;
    p.max_q_len = L;
    p.num_heads = H;
    p.scale = 1.0f / std::sqrt(static_cast<float>(D));
    p.out = dout;
    p.out_row_stride = out_stride;
    r.err = cudaSuccess;
    r.ms = time_ms(s, 3, 20, [&] {
      if (const cudaError_t e = kc::prefill_attention(p, s); e != cudaSuccess) r.err = e;
    });
    const double flops = 4.0 * H * D * static_cast<double>(L) * L / 2 * B;
    r.tflops = flops / (r.ms * 1e9);
  }
  cudaFree(dk), cudaFree(dv), cudaFree(dq), cudaFree(dbt), cudaFree(dqs), cudaFree(dseq),
      cudaFree(dout);
  return r;
}

}  // namespace

void run_prefill_attention_benchmarks() {
  const Shape shapes[] = {
      {"llama-3.1-8b", 1, 4096, 32, 8, 128}, {"llama-3.1-8b", 1, 1024, 32, 8, 128},
      {"llama-3.1-8b", 8, 512, 32, 8, 128},  {"smollm2", 1, 4096, 9, 3, 64},
      {"smollm2", 1, 1024, 9, 3, 64},        {"smollm2", 8, 512, 9, 3, 64},
  };
  cudaStream_t s = nullptr;
  std::vector<Result> results;
  for (const Shape& sh : shapes) results.push_back(run_shape(sh, s));
  std::printf("| kernel | launch | ms | figure |\n|---|---|---|---|\n");
  for (const Result& r : results) {
    std::printf(
        "| prefill_attention %s B=%d L=%d H=%d/%d D=%d | %s | %.4f | %.1f TFLOP/s (causal) |\n",
        r.shape.model, r.shape.batch, r.shape.q_len, r.shape.heads, r.shape.kv_heads,
        r.shape.head_dim, r.err == cudaSuccess ? "ok" : cudaGetErrorString(r.err), r.ms, r.tflops);
  }
  std::printf("\n");
  for (const Result& r : results) {
    std::printf(
        "BENCH {\"kernel\": \"prefill_attention\", \"batch\": %d, \"q_len\": %d, \"heads\": %d, "
        "\"kv_heads\": %d, \"head_dim\": %d, \"ms\": %.4f, \"tflops\": %.1f%s}\n",
        r.shape.batch, r.shape.q_len, r.shape.heads, r.shape.kv_heads, r.shape.head_dim, r.ms,
        r.tflops, r.err == cudaSuccess ? "" : ", \"error\": true");
  }
  std::printf("\n");
}

}  // namespace llmserve::bench
