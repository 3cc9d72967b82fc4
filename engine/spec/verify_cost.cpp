#include "engine/spec/verify_cost.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "engine/runner/batch_builder.h"

namespace llmserve {

Result<std::vector<double>> measure_check_costs(ModelRunner& runner, int32_t num_tokens) {
  constexpr int32_t kContext = 512;     // checks re-read the context once per row
  constexpr int32_t kMeasuredUpTo = 8;  // every d up to this; beyond it only num_tokens
  constexpr int kMinRounds = 9, kMaxRounds = 21;
  constexpr double kBudgetSeconds = 1.0;  // rounds after kMinRounds stop once this is spent
  if (num_tokens < 1) return invalid_argument("measure_check_costs: num_tokens < 1");
  std::vector<int32_t> tokens(static_cast<size_t>(kContext + num_tokens + 1));
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>(1 + i % 97);
  const int64_t blocks_needed =
      (static_cast<int64_t>(tokens.size()) + runner.block_size() - 1) / runner.block_size();
  if (blocks_needed + 1 > runner.num_blocks()) {
    return resource_exhausted("measure_check_costs: the KV cache is too small");
  }
  const std::vector<int32_t> table =
      contiguous_block_table(1, static_cast<int64_t>(tokens.size()), runner.block_size());
  BatchBuilder builder(runner.block_size());
  const std::span<const int32_t> all(tokens);
  auto run = [&](const BatchEntry& e) -> Result<double> {
    LLMSERVE_ASSIGN_OR_RETURN(ForwardBatch batch, builder.build(std::vector<BatchEntry>{e}));
    const auto t0 = std::chrono::steady_clock::now();
    LLMSERVE_RETURN_IF_ERROR(runner.execute(batch).status());
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  LLMSERVE_RETURN_IF_ERROR(run({all.first(kContext), 0, kContext, table, true}).status());

  std::vector<int32_t> measured;  // draft counts timed, 0 = the decode step
  for (int32_t d = 0; d <= std::min(num_tokens, kMeasuredUpTo); ++d) measured.push_back(d);
  if (num_tokens > kMeasuredUpTo) measured.push_back(num_tokens);
  std::vector<BatchEntry> entries;
  for (const int32_t d : measured) {
    BatchEntry e{all.first(kContext + 1), kContext, 1 + d, table, true};
    e.drafts = all.subspan(kContext + 1, static_cast<size_t>(d));
    entries.push_back(e);
  }
  // A warm-up round, then rounds in which every step runs back to back, as serving runs steps
  // (the first run after a pause also pays for waking the thread pool). Each round gives every
  // check's time over the decode's, each the faster of two runs; an entry is the median of its
  // rounds' ratios, so a busy neighbour that slows a few steps moves no entry far.
  std::vector<std::vector<double>> ratios(measured.size());
  std::vector<double> round_best(measured.size());
  const auto start = std::chrono::steady_clock::now();
  for (int round = -1; round < kMaxRounds; ++round) {
    if (round >= kMinRounds &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >
            kBudgetSeconds) {
      break;
    }
    for (size_t i = 0; i < entries.size(); ++i) {
      round_best[i] = 1e30;
      for (int rep = 0; rep < 2; ++rep) {
        LLMSERVE_ASSIGN_OR_RETURN(const double t, run(entries[i]));
        round_best[i] = std::min(round_best[i], t);
      }
    }
    if (round < 0) continue;
    for (size_t i = 1; i < entries.size(); ++i) {
      ratios[i].push_back(round_best[i] / std::max(round_best[0], 1e-9));
    }
  }
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  };
  std::vector<double> costs(static_cast<size_t>(num_tokens) + 1, 1.0);
  for (size_t i = 1; i < measured.size(); ++i) {
    costs[static_cast<size_t>(measured[i])] = std::clamp(median(ratios[i]), 1.0, 100.0);
  }
  // Between the last two measured counts (num_tokens > kMeasuredUpTo): linear.
  if (num_tokens > kMeasuredUpTo) {
    const double lo = costs[kMeasuredUpTo], hi = costs[static_cast<size_t>(num_tokens)];
    for (int32_t d = kMeasuredUpTo + 1; d < num_tokens; ++d) {
      costs[static_cast<size_t>(d)] =
          lo + (hi - lo) * (d - kMeasuredUpTo) / static_cast<double>(num_tokens - kMeasuredUpTo);
    }
  }
  for (size_t d = 1; d < costs.size(); ++d) costs[d] = std::max(costs[d], costs[d - 1]);
  return costs;
}

double per_draft_cost(const std::vector<double>& costs) {
  if (costs.size() < 2) return 0.0;
  return (costs.back() - 1.0) / static_cast<double>(costs.size() - 1);
}

}  // namespace llmserve
