// Qwen3-Reranker's yes/no scoring on a tiny random reranker against transformers (the fixture of
// tests/reference/make_rerank_fixtures.py, scored the model card's way): the prompt's token ids,
// every pair's score within 1e-3 and the same order, from the HF folder (known as a reranker by
// its README heading) and from the GGUF llama.cpp's converter layout (pooling_type rank,
// cls.output.weight); the same score bit for bit alone and batched.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "engine/engine.h"
#include "engine/pooling/pooler.h"
#include "engine/pooling/rank_head.h"
#include "engine/pooling/rerank_prompt.h"

namespace llmserve {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

const std::string kDir = std::string(LLMSERVE_FIXTURES_DIR) + "/tiny_qwen3_reranker";

json expected() {
  std::ifstream in(kDir + "/expected.json");
  return json::parse(in);
}

std::unique_ptr<Engine> engine_for(const std::string& path) {
  EngineOptions o;
  o.model_path = path;
  o.threads = 1;
  o.kv_cache_bytes = 32ull << 20;
  o.kv_cache_dtype = "f32";
  o.max_num_seqs = 64;
  o.max_num_batched_tokens = 2048;
  o.max_model_len = 512;
  auto e = Engine::create(o);
  EXPECT_TRUE(e.is_ok()) << e.status().to_string();
  return e.is_ok() ? std::move(e).value() : nullptr;
}

std::shared_ptr<RequestStream> submit(Engine& e, std::vector<int32_t> ids) {
  GenerateRequest r;
  r.prompt_token_ids = std::move(ids);
  r.params.max_tokens = 0;
  r.pooling = PoolingParams{};
  auto s = e.submit(std::move(r));
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  return s.is_ok() ? *s : nullptr;
}

float read_score(RequestStream& s) {
  std::vector<float> v;
  while (auto out = s.next(std::chrono::seconds(120))) {
    EXPECT_EQ(out->finish, FinishReason::kStop) << out->error.to_string();
    v = out->embedding;
  }
  EXPECT_EQ(v.size(), 1u);
  return v.empty() ? -1.0f : v[0];
}

std::vector<int32_t> ids_of(const json& pair) {
  return pair["ids"].get<std::vector<int32_t>>();
}

// Every pair alone: within 1e-3 of transformers, and each query's documents in the same order.
void expect_scores_match(const std::string& path) {
  const json ex = expected();
  auto e = engine_for(path);
  ASSERT_NE(e, nullptr);
  ASSERT_NE(e->pooler(), nullptr);
  ASSERT_TRUE(e->pooler()->is_reranker()) << path;
  EXPECT_EQ(e->pooler()->width(), 1);
  std::vector<float> got;
  for (const json& p : ex["pairs"]) {
    auto s = submit(*e, ids_of(p));
    ASSERT_NE(s, nullptr);
    got.push_back(read_score(*s));
    EXPECT_NEAR(got.back(), p["score"].get<double>(), 1e-3) << path << " pair " << got.size() - 1;
  }
  for (const json& group : ex["rerank"]) {
    std::vector<size_t> idx = group["pairs"].get<std::vector<size_t>>();
    auto order = [&](auto score) {
      std::vector<size_t> o = idx;
      std::stable_sort(o.begin(), o.end(), [&](size_t a, size_t b) { return score(a) > score(b); });
      return o;
    };
    EXPECT_EQ(order([&](size_t i) { return got[i]; }),
              order([&](size_t i) { return ex["pairs"][i]["score"].get<double>(); }))
        << group["query"];
  }
}

TEST(Rerank, PromptIdsAreTheModelCardsTokens) {
  const json ex = expected();
  auto e = engine_for(kDir);
  ASSERT_NE(e, nullptr);
  for (const json& p : ex["pairs"]) {
    const std::string ins = p["instruction"].is_null() ? "" : p["instruction"].get<std::string>();
    EXPECT_EQ(rerank_prompt_ids(e->tokenizer(), p["query"].get<std::string>(),
                                p["document"].get<std::string>(), ins),
              ids_of(p))
        << p["document"];
  }
}

TEST(Rerank, ScoresMatchTransformersFromTheHfFolder) {
  expect_scores_match(kDir);
}

TEST(Rerank, ScoresMatchTransformersFromTheGguf) {
  expect_scores_match(kDir + "/model.gguf");
}

TEST(Rerank, SameScoreAloneAndBatched) {
  const json ex = expected();
  auto e = engine_for(kDir);
  ASSERT_NE(e, nullptr);
  std::vector<float> alone;
  for (const json& p : ex["pairs"]) alone.push_back(read_score(*submit(*e, ids_of(p))));
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (const json& p : ex["pairs"]) streams.push_back(submit(*e, ids_of(p)));
  const uint64_t steps_before = e->stats().steps;
  for (size_t i = 0; i < streams.size(); ++i) {
    ASSERT_NE(streams[i], nullptr);
    EXPECT_EQ(read_score(*streams[i]), alone[i]) << "pair " << i;
  }
  EXPECT_LT(e->stats().steps - steps_before, streams.size()) << "the pairs shared steps";
}

TEST(Rerank, KnowsARerankerByItsFolder) {
  const std::string cfg = R"({"architectures": ["Qwen3ForCausalLM"]})";
  EXPECT_NE(qwen3_reranker_hint(kDir, cfg).find("README.md heading"), std::string::npos);
  const fs::path tmp = fs::temp_directory_path() / "llmserve_rerank_hint";
  fs::remove_all(tmp);
  fs::create_directories(tmp / "Qwen3-Reranker-0.6B");
  fs::create_directories(tmp / "snapshot");
  EXPECT_NE(qwen3_reranker_hint((tmp / "Qwen3-Reranker-0.6B").string(), cfg).find("folder name"),
            std::string::npos);
  EXPECT_EQ(qwen3_reranker_hint((tmp / "snapshot").string(), cfg), "");
  EXPECT_NE(qwen3_reranker_hint((tmp / "snapshot").string(),
                                R"({"_name_or_path": "Qwen/Qwen3-Reranker-4B"})")
                .find("_name_or_path"),
            std::string::npos);
  std::ofstream(tmp / "snapshot" / "README.md") << "---\nlicense: x\n---\n# Qwen3-Embedding\n";
  EXPECT_EQ(qwen3_reranker_hint((tmp / "snapshot").string(), cfg), "");
  fs::remove_all(tmp);
  // An embedding model is not a reranker.
  auto e = engine_for(std::string(LLMSERVE_FIXTURES_DIR) + "/tiny_qwen3_embed");
  ASSERT_NE(e, nullptr);
  EXPECT_FALSE(e->pooler()->is_reranker());
}

}  // namespace
}  // namespace llmserve
