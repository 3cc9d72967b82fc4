// Decode attention over an f16 cache against an int8 one (dtype 1 / 2), long contexts, the default
// model's heads (9 query heads, 3 kv heads, head_dim 64, block size 16). Both caches are written
// with write_kv. Counter: KV bytes read per second, the int8 scales included.
#include <benchmark/benchmark.h>

#include <numeric>

#include "bench_common.h"
#include "llmserve/kernels/attention.h"

namespace llmserve::kernels::bench {
namespace {

constexpr int kHeads = 9, kKvHeads = 3, kDim = 64, kBlock = 16;

struct KvPages {
  KvCacheShape shape;
  std::vector<uint8_t> k, v;
  std::vector<uint16_t> k_scales, v_scales;
  std::vector<int32_t> tables;
  int64_t max_blocks;
  KvPages(int64_t B, int64_t ctx, KvDtype dtype) {
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

void BM_DecodeAttentionKvDtype(benchmark::State& state) {
  const int64_t ctx = state.range(0), B = state.range(1);
  const auto dtype = static_cast<KvDtype>(state.range(2));
  KvPages c(B, ctx, dtype);
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
BENCHMARK(BM_DecodeAttentionKvDtype)
    ->ArgsProduct({{2048, 8192}, {1, 16}, {1, 2}})
    ->ArgNames({"ctx", "B", "dtype"})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
}  // namespace llmserve::kernels::bench
