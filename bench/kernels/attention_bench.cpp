// Paged attention with the default model's heads (9 query heads, 3 kv heads, head_dim 64,
// block size 16): decode at several context lengths and batch sizes, and a prefill chunk.
// The cache holds f32 or f16 elements (dtype 0 / 1). Counters: KV bytes read per second, and
// GFLOP/s for prefill.
#include <benchmark/benchmark.h>

#include <cmath>
#include <numeric>

#include "bench_common.h"
#include "llmserve/kernels/attention.h"

namespace llmserve::kernels::bench {
namespace {

constexpr int kHeads = 9, kKvHeads = 3, kDim = 64, kBlock = 16;

struct Cache {
  KvCacheShape shape;
  std::vector<float> k, v;
  std::vector<uint16_t> k16, v16;
  std::vector<int32_t> tables;
  int64_t max_blocks;
  Cache(int64_t B, int64_t ctx, KvDtype dtype) {
    max_blocks = (ctx + kBlock - 1) / kBlock;
    shape = KvCacheShape{B * max_blocks, kKvHeads, kBlock, kDim, dtype};
    k = random_vec(shape.num_blocks * kKvHeads * kBlock * kDim, 2);
    v = random_vec(k.size(), 3);
    if (dtype == KvDtype::kF16) {  // write_kv's conversion, one slot per row
      k16.resize(k.size());
      v16.resize(v.size());
      const int64_t slots = shape.num_blocks * kBlock;
      std::vector<int32_t> ids(static_cast<size_t>(slots));
      std::iota(ids.begin(), ids.end(), 0);
      write_kv(shape, k.data(), v.data(), ids.data(), slots, k16.data(), v16.data());
      k = {};
      v = {};
    }
    tables.resize(B * max_blocks);
    std::iota(tables.begin(), tables.end(), 0);
  }
  PagedKv view() const {
    if (shape.dtype == KvDtype::kF16) {
      return {shape, k16.data(), v16.data(), tables.data(), max_blocks};
    }
    return {shape, k.data(), v.data(), tables.data(), max_blocks};
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
      benchmark::Counter(2e-9 * B * ctx * kKvHeads * kDim * kv_dtype_bytes(dtype),
                         benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_DecodeAttention)
    ->ArgsProduct({{256, 1024, 4096}, {1, 16}, {0, 1}})
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
BENCHMARK(BM_PrefillAttention)
    ->ArgsProduct({{128, 512, 2048}, {0, 1}})
    ->ArgNames({"T", "dtype"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace llmserve::kernels::bench
