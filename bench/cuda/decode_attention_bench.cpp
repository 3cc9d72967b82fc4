// Decode attention at Llama-3.1-8B shapes (32 heads, 8 kv heads, head_dim 128, pages of 16
// tokens, scattered): ms and GB/s of K/V bytes read against the copy bandwidth, as Markdown rows,
// then one BENCH line per shape for the report script.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "bench/cuda/bench_util.h"
#include "llmserve/kernels/cuda/decode_attention.h"
#include "llmserve/kernels/cuda/decode_plan.h"

namespace llmserve::bench {
namespace {

namespace kc = kernels::cuda;

constexpr int kHeads = 32, kKvHeads = 8, kHeadDim = 128, kBlock = 16;

struct Result {
  int batch, ctx;
  float ms;
  double gbs;
};

template <typename T>
T* device_alloc(size_t count, std::string& err) {
  void* p = nullptr;
  if (cudaError_t e = cudaMalloc(&p, std::max<size_t>(count, 1) * sizeof(T)); e != cudaSuccess) {
    err = cudaGetErrorString(e);
    return nullptr;
  }
  cudaMemset(p, 0, std::max<size_t>(count, 1) * sizeof(T));
  return static_cast<T*>(p);
}

// One shape; false (with the reason) when it could not run.
bool run_shape(int B, int ctx, int l2_bytes, double bw, Result& res, std::string& err,
               std::string& figure) {
  const int64_t blocks_per_req = (ctx + kBlock - 1) / kBlock;
  const int64_t num_blocks = B * blocks_per_req;
  const size_t cache = static_cast<size_t>(num_blocks) * kKvHeads * kBlock * kHeadDim;
  kc::DecodePlanConfig cfg;
  cfg.block_size = kBlock;
  cfg.num_kv_heads = kKvHeads;
  int device = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&cfg.num_sms, cudaDevAttrMultiProcessorCount, device);
  if (cudaError_t e =
          kc::decode_attention_ctas_per_sm(kHeadDim, kHeads, kKvHeads, &cfg.ctas_per_sm);
      e != cudaSuccess) {
    err = cudaGetErrorString(e);
    return false;
  }
  const int capacity = kc::decode_plan_capacity(B, cfg);
  const std::vector<int32_t> lens(static_cast<size_t>(B), ctx);
  kc::DecodePlan plan;
  std::vector<int32_t> packed(static_cast<size_t>(kc::decode_plan_ints(capacity, B)));
  if (!kc::plan_decode(lens.data(), B, cfg, capacity, plan) ||
      !kc::pack_decode_plan(plan, capacity, B, packed.data())) {
    err = "plan_decode failed";
    return false;
  }
  // Pages in a shuffled order, as a long-running server hands them out.
  std::vector<int32_t> bt(static_cast<size_t>(num_blocks));
  std::iota(bt.begin(), bt.end(), 0);
  std::shuffle(bt.begin(), bt.end(), std::mt19937(5));

  const int64_t q_pitch = int64_t{kHeads + 2 * kKvHeads} * kHeadDim;  // fused QKV rows
  const int64_t out_pitch = 2 * int64_t{kHeads} * kHeadDim;
  auto* k = device_alloc<uint16_t>(cache, err);
  auto* v = device_alloc<uint16_t>(cache, err);
  auto* dbt = device_alloc<int32_t>(bt.size(), err);
  auto* dplan = device_alloc<int32_t>(packed.size(), err);
  auto* q = device_alloc<float>(static_cast<size_t>(B * q_pitch), err);
  auto* out = device_alloc<uint16_t>(static_cast<size_t>(B * out_pitch), err);
  auto* ws = device_alloc<float>(
      static_cast<size_t>(kc::decode_workspace_floats(capacity, kHeads, kHeadDim)), err);
  bool ok = k && v && dbt && dplan && q && out && ws;
  if (ok) {
    cudaMemset(k, 0x3c, cache * 2);  // bf16 0x3c3c ~ 0.0115
    cudaMemset(v, 0x3c, cache * 2);
    cudaMemcpy(dbt, bt.data(), bt.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(dplan, packed.data(), packed.size() * 4, cudaMemcpyHostToDevice);
    kc::DecodeAttentionParams p;
    p.kv = {k, v, dbt, blocks_per_req, kKvHeads, kBlock, kHeadDim};
    p.q = q;
    p.q_row_stride = q_pitch;
    p.out = out;
    p.out_row_stride = out_pitch;
    p.plan = dplan;
    p.plan_capacity = capacity;
    p.workspace = ws;
    p.num_requests = B;
    p.num_heads = kHeads;
    p.scale = 0.08838835f;
    cudaError_t e = cudaSuccess;
    const float ms = time_ms(nullptr, 5, 50, [&] { e = kc::decode_attention(p, nullptr); });
    if (e != cudaSuccess) {
      err = cudaGetErrorString(e);
      ok = false;
    } else {
      const double bytes = 2.0 * static_cast<double>(B) * ctx * kKvHeads * kHeadDim * 2;
      res = {B, ctx, ms, bytes / (ms * 1e6)};
      char buf[160];
      std::snprintf(buf, sizeof buf, "%.0f GB/s = %.0f%% of copy bandwidth; %zu items%s", res.gbs,
                    bw > 0 ? 100.0 * res.gbs / bw : 0.0, plan.items.size(),
                    bytes < 2.0 * l2_bytes ? " (K/V fit in L2)" : "");
      figure = buf;
    }
  }
  cudaFree(k), cudaFree(v), cudaFree(dbt), cudaFree(dplan), cudaFree(q), cudaFree(out),
      cudaFree(ws);
  return ok;
}

}  // namespace

void run_decode_attention_benchmarks(double bw) {
  int device = 0, l2 = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device);
  std::printf(
      "\n| decode attention (32 heads, 8 kv, head_dim 128) | launch | ms | figure |\n"
      "|---|---|---|---|\n");
  std::vector<Result> results;
  for (auto [B, ctx] :
       {std::pair{1, 4096}, std::pair{1, 32768}, std::pair{64, 4096}, std::pair{256, 1024}}) {
    Result r{};
    std::string err, figure;
    const bool ok = run_shape(B, ctx, l2, bw, r, err, figure);
    std::printf("| decode_attention B=%d ctx=%d | %s | %.4f | %s |\n", B, ctx,
                ok ? "ok" : err.c_str(), ok ? r.ms : 0.0f, ok ? figure.c_str() : "-");
    if (ok) results.push_back(r);
  }
  std::printf("\n");
  for (const Result& r : results) {
    std::printf(
        "BENCH {\"kernel\": \"decode_attention\", \"batch\": %d, \"ctx\": %d, \"heads\": %d, "
        "\"kv_heads\": %d, \"head_dim\": %d, \"ms\": %.5f, \"gbs\": %.1f}\n",
        r.batch, r.ctx, kHeads, kKvHeads, kHeadDim, r.ms, r.gbs);
  }
}

}  // namespace llmserve::bench
