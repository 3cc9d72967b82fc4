// The encoder kernels at a vision tower's sizes: dense_attention over one image's patches (SigLIP:
// 16 heads of 72; 4096 patches at 896 x 896, 1024 at 448) and the vector gelu_tanh of its MLP.
// Counters: GFLOP/s of attention (4 n^2 head_dim per head: q.k and p.v), elements per second.
#include <benchmark/benchmark.h>

#include <cmath>

#include "bench_common.h"
#include "llmserve/kernels/activation.h"
#include "llmserve/kernels/encoder.h"

namespace llmserve::kernels::bench {
namespace {

void BM_DenseAttention(benchmark::State& state) {
  const int64_t n = state.range(0);
  const int heads = static_cast<int>(state.range(1)), hd = static_cast<int>(state.range(2));
  const int64_t width = int64_t{heads} * hd;
  const auto q = random_vec(static_cast<size_t>(n * width), 1);
  const auto k = random_vec(static_cast<size_t>(n * width), 2);
  const auto v = random_vec(static_cast<size_t>(n * width), 3);
  std::vector<float> out(static_cast<size_t>(n * width));
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  for (auto _ : state) {
    dense_attention(bench_pool(), q.data(), k.data(), v.data(), n, heads, hd, scale, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(4.0 * static_cast<double>(n) * n * width * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_DenseAttention)
    ->Args({1024, 16, 72})
    ->Args({4096, 16, 72})
    ->ArgNames({"n", "heads", "head_dim"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_GeluTanh(benchmark::State& state) {
  auto x = random_vec(static_cast<size_t>(state.range(0)), 4);
  for (auto _ : state) {
    auto y = x;
    gelu_tanh(y.data(), static_cast<int64_t>(y.size()));
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_GeluTanh)->Arg(1 << 20)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace llmserve::kernels::bench
