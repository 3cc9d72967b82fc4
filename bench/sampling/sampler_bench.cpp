// Sampler::sample on one 128256-token row (Llama-3's vocabulary): greedy, top_k 50, top_p 0.9
// on a peaked row, top_p 0.95 on a flat row. Arg: 0 peaked (logits N(0, 3)), 1 flat (N(0, 0.3)).
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "engine/runner/sampler.h"

namespace llmserve {
namespace {

constexpr int32_t kVocab = 128256;

std::vector<float> row(bool flat) {
  std::mt19937 rng(7);
  std::normal_distribution<float> d(0.0f, flat ? 0.3f : 3.0f);
  std::vector<float> v(kVocab);
  for (float& x : v) x = d(rng);
  return v;
}

void run(benchmark::State& st, SamplingParams params) {
  const std::vector<float> logits = row(st.range(0) == 1);
  Sampler sampler(kVocab, {0});
  params.seed = 1;
  for (auto _ : st) {
    SamplingState state(params, {}, 1);
    benchmark::DoNotOptimize(sampler.sample(logits, params, state).token_id);
  }
}

void BM_Greedy(benchmark::State& st) {
  SamplingParams p;
  p.temperature = 0.0f;
  run(st, p);
}
void BM_TopK50(benchmark::State& st) {
  SamplingParams p;
  p.top_k = 50;
  run(st, p);
}
void BM_TopP090(benchmark::State& st) {
  SamplingParams p;
  p.top_p = 0.9f;
  run(st, p);
}
void BM_TopP095(benchmark::State& st) {
  SamplingParams p;
  p.top_p = 0.95f;
  run(st, p);
}

BENCHMARK(BM_Greedy)->Arg(0);
BENCHMARK(BM_TopK50)->Arg(0)->Arg(1);
BENCHMARK(BM_TopP090)->Arg(0)->Arg(1);
BENCHMARK(BM_TopP095)->Arg(0)->Arg(1);

}  // namespace
}  // namespace llmserve
