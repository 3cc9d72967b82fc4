#include "tests/unit/graph/graph_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>

#include "engine/runner/batch_builder.h"

namespace llmserve::testing {

std::vector<float> prefill_all_logits(ModelRunner& runner, std::span<const int32_t> tokens,
                                      int64_t chunk, int32_t first_block) {
  const int64_t V = runner.config().vocab_size, T = static_cast<int64_t>(tokens.size());
  if (chunk <= 0) chunk = T;
  const auto table = contiguous_block_table(first_block, T, runner.block_size());
  std::vector<float> out(static_cast<size_t>(T * V));
  BatchBuilder builder(runner.block_size());
  for (int64_t start = 0; start < T; start += chunk) {
    const int32_t n = static_cast<int32_t>(std::min(chunk, T - start));
    BatchEntry e{tokens, static_cast<int32_t>(start), n, table, true};
    e.num_prompt = static_cast<int32_t>(T);
    auto batch = builder.build(std::span(&e, 1));
    EXPECT_TRUE(batch.is_ok()) << batch.status().to_string();
    if (!batch.is_ok()) return {};
    std::vector<int32_t> rows(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i) rows[static_cast<size_t>(i)] = i;
    ForwardBatch fb = *batch;
    fb.sample_rows = rows;  // every position of the chunk
    auto logits = runner.execute(fb);
    EXPECT_TRUE(logits.is_ok()) << logits.status().to_string();
    if (!logits.is_ok()) return {};
    std::copy(logits->begin(), logits->end(), out.begin() + start * V);
  }
  return out;
}

std::vector<int32_t> greedy(ModelRunner& runner, std::span<const int32_t> prompt, int steps,
                            std::vector<float>* last_logits, std::vector<float>* margins) {
  const int64_t V = runner.config().vocab_size;
  std::vector<int32_t> tokens(prompt.begin(), prompt.end());
  const auto table =
      contiguous_block_table(0, static_cast<int64_t>(prompt.size()) + steps, runner.block_size());
  BatchBuilder builder(runner.block_size());
  std::vector<int32_t> out;
  int32_t computed = 0;
  for (int s = 0; s < steps; ++s) {
    BatchEntry e{tokens, computed, static_cast<int32_t>(tokens.size()) - computed, table, true};
    e.num_prompt = static_cast<int32_t>(prompt.size());
    auto batch = builder.build(std::span(&e, 1));
    EXPECT_TRUE(batch.is_ok()) << batch.status().to_string();
    if (!batch.is_ok()) return out;
    auto logits = runner.execute(*batch);
    EXPECT_TRUE(logits.is_ok()) << logits.status().to_string();
    if (!logits.is_ok()) return out;
    if (s == 0 && last_logits != nullptr) last_logits->assign(logits->begin(), logits->end());
    const float* l = logits->data();
    int32_t best = 0;
    for (int32_t i = 1; i < V; ++i) best = l[i] > l[best] ? i : best;
    if (margins != nullptr) {
      float second = -std::numeric_limits<float>::infinity();
      for (int32_t i = 0; i < V; ++i) second = i != best ? std::max(second, l[i]) : second;
      margins->push_back(l[best] - second);
    }
    computed = static_cast<int32_t>(tokens.size());
    tokens.push_back(best);
    out.push_back(best);
  }
  return out;
}

std::vector<float> read_f32_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return {};
  const auto size = static_cast<size_t>(in.tellg());
  std::vector<float> v(size / sizeof(float));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(v.data()),
          static_cast<std::streamsize>(v.size() * sizeof(float)));
  return v;
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace llmserve::testing
