// Paged attention with the default model's heads (9 query heads, 3 kv heads, head_dim 64,
// block size 16): decode at several context lengths and batch sizes, and a prefill chunk.
// The cache holds f32, f16 or int8 elements (dtype 0 / 1 / 2). Counters: KV bytes read per
// second (int8 scales included), and GFLOP/s for prefill.
#include <benchmark/benchmark.h>

#include <cmath>
#include <numeric>

#include "bench_common.h"
#include "llmserve/kernels/attention.h"

namespace llmserve::kernels::bench {
namespace {

constexpr int kHeads = 9, kKvHeads = 3, kDim = 64, kBlock = 16;

// The pages of B sequences of ctx tokens, written by write_kv in any dtype (int8 with its scales).
struct Cache {
  KvCacheShape shape;
  std::vector<uint8_t> k, v;
  std::vector<uint16_t> k_scales, v_scales;
  std::vector<int32_t> tables;
  int64_t max_blocks;
  Cache(int64_t B, int64_t ctx, KvDtype dtype) {
    max_blocks = (ctx + kBlock - 1) / kBlock;
    shape = KvCacheShape{B * max_blocks, kKvHeads, kBlock, kDim, dtype};
    const int64_t slots = shape.num_blocks * kBlock;
    const auto kf = random_vec(slots * kKvHeads * kDim, 2), vf = random_vec(kf.size(), 3);
    k.resize(kf.size() * kv_dtype_bytes(dtype));
    v.resize(k.size());
    if (kv_dtype_scaled(dtype)) {
      k_scales.resize(slots * kKvHeads);
      v_scales.resize(k_scales.size());
    }
    std::vector<int32_t> ids(static_cast<size_t>(slots));
    std::iota(ids.begin(), ids.end(), 0);
    write_kv(shape, kf.data(), vf.data(), ids.data(), slots, k.data(), v.data(), k_scales.data(),
             v_scales.data());
    tables.resize(B * max_blocks);
    std::iota(tables.begin(), tables.end(), 0);
  }
  PagedKv view() const {
    return {shape, k.data(), v.data(), tables.data(), max_blocks, k_scales.data(), v_scales.data()};
  }
};

void BM_DecodeAttention(benchmark::State& state) {
  const int64_t ctx = state.range(0), B = state.range(1);
  const auto dtype = static_cast<KvDtype>(state.range(2));
  Cache c(B, ctx, dtype);
  const auto q = random_vec(B * kHeads * kDim);
  std::vector<float> out(q.size());
  std::vector<int32_t> lens(B, static_cast<int32_t>(ctx));
  for (auto _ : state) {
    decode_attention(bench_pool(), c.view(), q.data(), lens.data(), B, kHeads, 0.125f, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["GB/s"] =
      benchmark::Counter(2e-9 * B * ctx * kKvHeads * kv_head_row_bytes(dtype, kDim),
                         benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_DecodeAttention)
    ->ArgsProduct({{256, 1024, 4096}, {1, 16}, {0, 1, 2}})
    ->ArgNames({"ctx", "B", "dtype"})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

void BM_PrefillAttention(benchmark::State& state) {
  const int64_t T = state.range(0);
  Cache c(1, T, static_cast<KvDtype>(state.range(1)));
  const auto q = random_vec(T * kHeads * kDim);
  std::vector<float> out(q.size());
  const std::vector<int32_t> qs = {0, static_cast<int32_t>(T)}, lens = {static_cast<int32_t>(T)};
  for (auto _ : state) {
    prefill_attention(bench_pool(), c.view(), q.data(), qs.data(), lens.data(), 1, kHeads, 0.125f,
                      out.data());
    benchmark::DoNotOptimize(out.data());
  }
  // QK^T and PV over the causal triangle.
  state.counters["GFLOP/s"] = benchmark::Counter(4.0 * kHeads * kDim * T * (T + 1) / 2 * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}
// f16 against int8 at long contexts (the int8 pages' case: twice the tokens in the memory).
BENCHMARK(BM_DecodeAttention)
    ->Name("BM_DecodeAttentionKvDtype")
    ->ArgsProduct({{2048, 8192}, {1, 16}, {1, 2}})
    ->ArgNames({"ctx", "B", "dtype"})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

BENCHMARK(BM_PrefillAttention)
    ->ArgsProduct({{128, 512, 2048, 8192}, {0, 1, 2}})
    ->ArgNames({"T", "dtype"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace llmserve::kernels::bench
