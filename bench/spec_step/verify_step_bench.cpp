// LLMSERVE_BENCH_MODEL=models/SmolLM2-135M-Instruct.Q4_1.gguf [LLMSERVE_BENCH_PRECISION=q8]
// build/bench/spec_step/bench_verify_step Args: {context tokens, new tokens (1 = plain decode), 1 =
// decode rows / 0 = one prefill query}. The prefill variant returns only its last row's logits (a
// lower bound on its cost: a check needs all rows' logits).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <vector>

#include "engine/runner/batch_builder.h"
#include "engine/runner/model_runner.h"
#include "llmserve/kernels/act_precision.h"

namespace llmserve {
namespace {

ModelRunner* runner() {
  static std::unique_ptr<ModelRunner> r = [] {
    ModelRunnerOptions o;
    const char* path = std::getenv("LLMSERVE_BENCH_MODEL");
    o.model_path = path != nullptr ? path : "models/SmolLM2-135M-Instruct.Q4_1.gguf";
    o.num_threads = 2;
    o.kv_cache_bytes = 256ull << 20;
    const char* precision = std::getenv("LLMSERVE_BENCH_PRECISION");  // q8x2 (default) | q8
    if (precision != nullptr) {
      o.matmul_precision =
          kernels::parse_act_precision(precision).value_or(kernels::ActPrecision::kQ8x2);
    }
    auto made = ModelRunner::create(o);
    return made.is_ok() ? std::move(made).value() : nullptr;
  }();
  return r.get();
}

void BM_VerifyStep(benchmark::State& state) {
  ModelRunner* r = runner();
  if (r == nullptr) {
    state.SkipWithError("cannot load the model (LLMSERVE_BENCH_MODEL)");
    return;
  }
  const auto context = static_cast<int32_t>(state.range(0));
  const auto rows = static_cast<int32_t>(state.range(1));
  const bool as_decodes = state.range(2) != 0;
  std::vector<int32_t> tokens(static_cast<size_t>(context + rows));
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>(100 + i % 5000);
  const std::vector<int32_t> table =
      contiguous_block_table(1, static_cast<int64_t>(tokens.size()), r->block_size());
  BatchBuilder builder(r->block_size());
  // Fill the cache with the context once.
  for (int32_t done = 0; done < context;) {
    const int32_t n = std::min<int32_t>(512, context - done);
    BatchEntry e{std::span(tokens).first(static_cast<size_t>(done + n)), done, n, table, true};
    auto b = builder.build(std::vector<BatchEntry>{e});
    if (!b.is_ok() || !r->execute(*b).is_ok()) {
      state.SkipWithError("prefill failed");
      return;
    }
    done += n;
  }
  const std::span<const int32_t> all(tokens);
  BatchEntry e{all.first(static_cast<size_t>(context) + 1), context, rows, table, true};
  if (rows > 1) {
    if (as_decodes) {
      e.drafts = all.subspan(static_cast<size_t>(context) + 1, static_cast<size_t>(rows - 1));
    } else {
      e.tokens = all.first(static_cast<size_t>(context + rows));  // one query of `rows` tokens
    }
  }
  auto batch = builder.build(std::vector<BatchEntry>{e});
  if (!batch.is_ok()) {
    state.SkipWithError(batch.status().to_string().c_str());
    return;
  }
  for (auto _ : state) {
    auto logits = r->execute(*batch);
    benchmark::DoNotOptimize(logits);
  }
  state.counters["rows"] = rows;
}

BENCHMARK(BM_VerifyStep)
    ->ArgsProduct({{128, 1024}, {1, 2, 3, 4, 5}, {1, 0}})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.5);

}  // namespace
}  // namespace llmserve

BENCHMARK_MAIN();
