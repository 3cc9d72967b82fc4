// On the default model (LLMSERVE_TEST_MODEL): the logits of a position do not depend on how the
// sequence was split into steps (one shot, token by token, chunks across block edges), nor on
// which other requests share the step (prefill and decode mixed), nor on the KV block ids.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "engine/runner/batch_builder.h"
#include "engine/runner/model_runner.h"
#include "tests/unit/graph/graph_test_util.h"

namespace llmserve {
namespace {

std::unique_ptr<ModelRunner> open_runner() {
  const char* path = std::getenv("LLMSERVE_TEST_MODEL");
  if (path == nullptr || *path == 0) return nullptr;
  ModelRunnerOptions o;
  o.model_path = path;
  o.num_threads = 2;
  o.block_size = 16;
  o.kv_cache_bytes = 64ull * 16 * 2 * 30 * 3 * 64 * 4;  // 64 blocks of SmolLM2-135M
  o.max_tokens_per_step = 256;
  o.max_samples_per_step = 256;
  auto r = ModelRunner::create(o);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? std::move(r).value() : nullptr;
}

std::vector<int32_t> tokens(int n, int32_t seed) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  uint32_t x = static_cast<uint32_t>(seed) * 2654435761u + 1;
  for (auto& v : t) {
    x = x * 1664525u + 1013904223u;
    v = static_cast<int32_t>(100 + (x >> 8) % 20000);
  }
  return t;
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

TEST(GraphConsistency, OneShotTokenByTokenAndChunkedPrefillAgree) {
  auto runner = open_runner();
  if (!runner) GTEST_SKIP() << "LLMSERVE_TEST_MODEL not set";
  const auto seq = tokens(40, 1);
  const auto one_shot = testing::prefill_all_logits(*runner, seq, 0, 0);
  const auto by_token = testing::prefill_all_logits(*runner, seq, 1, 10);
  const auto chunk7 = testing::prefill_all_logits(*runner, seq, 7, 20);
  const auto chunk17 = testing::prefill_all_logits(*runner, seq, 17, 30);
  // The kernels are row-independent and attention merges fixed partitions in order, so the
  // results are bit-identical; 1e-6 leaves room only for nothing in practice.
  EXPECT_LE(max_abs_diff(one_shot, by_token), 1e-6f);
  EXPECT_LE(max_abs_diff(one_shot, chunk7), 1e-6f);
  EXPECT_LE(max_abs_diff(one_shot, chunk17), 1e-6f);
  EXPECT_EQ(one_shot, by_token) << "not bit-identical";
}

// One sequence's plan: tokens and the new-token count of each step (0 = not in that step).
struct Plan {
  std::vector<int32_t> tokens;
  std::vector<int32_t> chunks;
  int32_t first_block;
};

// Runs the plans together, step by step; returns each plan's sampled logits per chunk.
std::vector<std::vector<std::vector<float>>> run(ModelRunner& runner,
                                                 const std::vector<Plan>& plans) {
  const int64_t V = runner.config().vocab_size;
  std::vector<std::vector<std::vector<float>>> out(plans.size());
  std::vector<int32_t> computed(plans.size(), 0);
  std::vector<std::vector<int32_t>> tables;
  for (const Plan& p : plans) {
    tables.push_back(contiguous_block_table(p.first_block, static_cast<int64_t>(p.tokens.size()),
                                            runner.block_size()));
  }
  size_t steps = 0;
  for (const Plan& p : plans) steps = std::max(steps, p.chunks.size());
  BatchBuilder builder(runner.block_size());
  for (size_t s = 0; s < steps; ++s) {
    std::vector<BatchEntry> entries;
    std::vector<size_t> who;
    for (size_t i = 0; i < plans.size(); ++i) {
      if (s >= plans[i].chunks.size() || plans[i].chunks[s] == 0) continue;
      entries.push_back({plans[i].tokens, computed[i], plans[i].chunks[s], tables[i], true});
      who.push_back(i);
    }
    if (entries.empty()) continue;
    auto batch = builder.build(entries);
    EXPECT_TRUE(batch.is_ok()) << batch.status().to_string();
    auto logits = runner.execute(*batch);
    EXPECT_TRUE(logits.is_ok()) << logits.status().to_string();
    if (!logits.is_ok()) return out;
    for (size_t e = 0; e < entries.size(); ++e) {
      const float* row = logits->data() + builder.sample_index(e) * V;
      out[who[e]].emplace_back(row, row + V);
      computed[who[e]] += entries[e].num_new;
    }
  }
  return out;
}

TEST(GraphConsistency, BatchedMixedPrefillAndDecodeEqualsAlone) {
  auto runner = open_runner();
  if (!runner) GTEST_SKIP() << "LLMSERVE_TEST_MODEL not set";
  std::vector<Plan> plans = {
      {tokens(46, 2), {40, 1, 1, 1, 1, 1, 1}, 0},
      {tokens(27, 3), {12, 9, 1, 1, 1, 1, 1, 1}, 8},
      {tokens(66, 4), {0, 30, 31, 1, 1, 1, 1, 1}, 16},
      {tokens(18, 5), {0, 0, 17, 1}, 24},
  };
  const auto together = run(*runner, plans);
  for (size_t i = 0; i < plans.size(); ++i) {
    Plan alone = plans[i];
    std::erase(alone.chunks, 0);
    alone.first_block = 40;  // other block ids too
    const auto ref = run(*runner, {alone});
    ASSERT_EQ(together[i].size(), ref[0].size());
    for (size_t c = 0; c < ref[0].size(); ++c) {
      EXPECT_EQ(together[i][c], ref[0][c]) << "sequence " << i << " chunk " << c << " max diff "
                                           << max_abs_diff(together[i][c], ref[0][c]);
    }
  }
}

// Speculative verification: the last token and d drafts in one entry give, row by row, the
// logits of decoding those tokens one step at a time (bit for bit: the acceptance rule then
// picks the very tokens decoding would).
TEST(GraphConsistency, DraftRowsEqualDecodingOneByOne) {
  auto runner = open_runner();
  if (!runner) GTEST_SKIP() << "LLMSERVE_TEST_MODEL not set";
  const int64_t V = runner->config().vocab_size;
  const std::vector<int32_t> seq = tokens(41, 6);  // 36 known tokens + 5 more
  const std::vector<int32_t> table = contiguous_block_table(0, 41, runner->block_size());
  BatchBuilder builder(runner->block_size());
  auto run_entry = [&](const BatchEntry& e) {
    auto batch = builder.build(std::vector<BatchEntry>{e});
    EXPECT_TRUE(batch.is_ok()) << batch.status().to_string();
    auto logits = runner->execute(*batch);
    EXPECT_TRUE(logits.is_ok()) << logits.status().to_string();
    return std::vector<float>(logits->begin(), logits->end());
  };
  const std::span<const int32_t> all(seq);
  (void)run_entry({all.first(35), 0, 35, table, true});
  std::vector<std::vector<float>> one_by_one;
  for (int32_t pos = 35; pos < 40; ++pos) {
    one_by_one.push_back(run_entry({all.first(static_cast<size_t>(pos) + 1), pos, 1, table, true}));
  }
  // The same cache positions again, now as one check: token 35 then drafts 36..39.
  BatchEntry check{all.first(36), 35, 5, table, true};
  check.drafts = all.subspan(36, 4);
  const std::vector<float> rows = run_entry(check);
  ASSERT_EQ(rows.size(), static_cast<size_t>(5 * V));
  for (size_t j = 0; j < 5; ++j) {
    const std::vector<float> row(rows.begin() + static_cast<std::ptrdiff_t>(j * V),
                                 rows.begin() + static_cast<std::ptrdiff_t>((j + 1) * V));
    EXPECT_EQ(row, one_by_one[j]) << "row " << j << " max diff "
                                  << max_abs_diff(row, one_by_one[j]);
  }
}

}  // namespace
}  // namespace llmserve
