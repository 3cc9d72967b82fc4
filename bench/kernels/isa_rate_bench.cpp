// The CPU's rate of the AVX2 4-bit kernel's inner step (packed_gemm_avx2.cpp): one vpmaddubsw
// into a vpaddw, 8 independent chains, so the counter is throughput, not latency. Counter:
// pairs/ns. A Q4 block of 8 rows x 32 columns costs 8 pairs per activation pass (q8x2: 16).
#include <benchmark/benchmark.h>
#include <immintrin.h>

namespace {

__attribute__((target("avx2"))) void BM_MaddubsAddRate(benchmark::State& state) {
  constexpr int kChains = 8;
  constexpr int64_t kSteps = 1 << 16;
  __m256i acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = _mm256_set1_epi16(static_cast<int16_t>(k));
  const __m256i w = _mm256_set1_epi8(3), x = _mm256_set1_epi8(1);
  for (auto _ : state) {
    for (int64_t i = 0; i < kSteps; ++i) {
      for (int k = 0; k < kChains; ++k) {
        __m256i p;
        // asm keeps the loop-invariant product from being hoisted out of the loop.
        asm volatile("vpmaddubsw %2, %1, %0" : "=x"(p) : "x"(w), "x"(x));
        acc[k] = _mm256_add_epi16(acc[k], p);
      }
    }
    benchmark::DoNotOptimize(acc);
  }
  state.counters["pairs/ns"] =
      benchmark::Counter(1e-9 * kChains * kSteps, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_MaddubsAddRate)->UseRealTime();

}  // namespace
