#include "engine/spec/verify_cost.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "engine/runner/batch_builder.h"

namespace llmserve {

Result<double> measure_draft_token_cost(ModelRunner& runner, int32_t num_tokens) {
  constexpr int32_t kContext = 512;  // checks re-read the context once per row
  constexpr int kRuns = 5;
  if (num_tokens < 1) return invalid_argument("measure_draft_token_cost: num_tokens < 1");
  std::vector<int32_t> tokens(static_cast<size_t>(kContext + num_tokens + 1));
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>(1 + i % 97);
  const int64_t blocks_needed =
      (static_cast<int64_t>(tokens.size()) + runner.block_size() - 1) / runner.block_size();
  if (blocks_needed + 1 > runner.num_blocks()) {
    return resource_exhausted("measure_draft_token_cost: the KV cache is too small");
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
  BatchEntry decode{all.first(kContext + 1), kContext, 1, table, true};
  BatchEntry check = decode;
  check.num_new = 1 + num_tokens;
  check.drafts = all.subspan(kContext + 1, static_cast<size_t>(num_tokens));
  double best_decode = 1e30, best_check = 1e30;
  // Back to back, as serving runs steps (the first run after a pause also pays for waking the
  // thread pool, which would make the decode look slower and the check relatively cheap).
  for (int i = 0; i < 2 * kRuns; ++i) {
    LLMSERVE_ASSIGN_OR_RETURN(const double d, run(decode));
    if (i >= kRuns) best_decode = std::min(best_decode, d);
  }
  for (int i = 0; i < 2 * kRuns; ++i) {
    LLMSERVE_ASSIGN_OR_RETURN(const double c, run(check));
    if (i >= kRuns) best_check = std::min(best_check, c);
  }
  const double cost = (best_check / std::max(best_decode, 1e-9) - 1.0) / num_tokens;
  return std::clamp(cost, 0.01, 2.0);
}

}  // namespace llmserve
