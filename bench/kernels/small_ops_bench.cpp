// RMSNorm and RoPE at the default model's shapes (hidden 576; 9 heads x 64), T = 1 and 512.
#include <benchmark/benchmark.h>

#include "bench_common.h"
#include "llmserve/kernels/norm.h"
#include "llmserve/kernels/rope.h"

namespace llmserve::kernels::bench {
namespace {

void BM_RmsNorm(benchmark::State& state) {
  const int64_t T = state.range(0), dim = 576;
  const auto x = random_vec(T * dim), w = random_vec(dim, 5);
  std::vector<float> y(T * dim);
  for (auto _ : state) {
    rms_norm(bench_pool(), x.data(), w.data(), T, dim, 1e-5f, y.data());
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GB/s"] = benchmark::Counter(2e-9 * T * dim * sizeof(float),
                                              benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_RmsNorm)->Arg(1)->Arg(512)->UseRealTime();

void BM_Rope(benchmark::State& state) {
  const int64_t T = state.range(0);
  const int heads = 9, dim = 64;
  auto x = random_vec(T * heads * dim);
  std::vector<int32_t> pos(T);
  for (int64_t t = 0; t < T; ++t) pos[t] = static_cast<int32_t>(t);
  const auto inv = rope_inv_freq(dim, 100000.0f);
  for (auto _ : state) {
    apply_rope(x.data(), T, heads, dim, pos.data(), inv, RopePairing::kHalves);
    benchmark::DoNotOptimize(x.data());
  }
  state.counters["GB/s"] = benchmark::Counter(2e-9 * T * heads * dim * sizeof(float),
                                              benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Rope)->Arg(1)->Arg(512)->UseRealTime();

}  // namespace
}  // namespace llmserve::kernels::bench
