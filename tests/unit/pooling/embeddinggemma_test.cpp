// EmbeddingGemma (Gemma 3 with bidirectional attention, mean pooling, two Dense layers,
// Normalize, query / document prompts) on a tiny random model against sentence-transformers
// (tests/reference/make_embeddinggemma_fixture.py): every text's vector within cosine 0.9999 of
// model.encode from the HF folder and from the GGUF llama.cpp's converter writes, with and
// without the prompts; the vectors a causal mask gives are not matched; the same vector bit for
// bit alone and among 64; generation refused.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "engine/llm_engine.h"
#include "engine/pooling/pooler.h"
#include "engine/tokenizer/tokenizer.h"

namespace llmserve {
namespace {

using json = nlohmann::json;

constexpr const char* kDir = "tiny_embeddinggemma";

std::string fixture(const std::string& rel) {
  return std::string(LLMSERVE_FIXTURES_DIR) + "/" + rel;
}

json expected() {
  std::ifstream in(fixture(std::string(kDir) + "/expected.json"));
  return json::parse(in);
}

EngineOptions options(const std::string& path, const char* kv = "f32") {
  EngineOptions o;
  o.model_path = fixture(path);
  o.threads = 2;
  o.kv_cache_bytes = 8ull << 20;
  o.kv_cache_dtype = kv;
  o.max_num_seqs = 128;
  o.max_num_batched_tokens = 512;
  o.max_model_len = 512;
  return o;
}

std::unique_ptr<Engine> engine_for(const EngineOptions& o) {
  auto e = Engine::create(o);
  EXPECT_TRUE(e.is_ok()) << e.status().to_string();
  return e.is_ok() ? std::move(e).value() : nullptr;
}

GenerateRequest pooling_request(std::vector<int32_t> ids) {
  GenerateRequest r;
  r.prompt_token_ids = std::move(ids);
  r.params.max_tokens = 0;
  r.pooling = PoolingParams{0};
  return r;
}

std::vector<float> read_vector(RequestStream& s) {
  std::vector<float> v;
  while (auto out = s.next(std::chrono::seconds(120))) {
    EXPECT_EQ(out->finish, FinishReason::kStop) << out->error.to_string();
    v = out->embedding;
  }
  return v;
}

std::vector<float> embed(Engine& e, std::vector<int32_t> ids) {
  auto s = e.submit(pooling_request(std::move(ids)));
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  return s.is_ok() ? read_vector(**s) : std::vector<float>{};
}

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    ab += double{a[i]} * b[i];
    aa += double{a[i]} * a[i];
    bb += double{b[i]} * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

// The ids sentence-transformers embedded (prompt + text, <bos> / <eos> added) against its vectors.
void expect_matches(Engine& e, const json& ex, const std::string& prefix, const std::string& what) {
  const std::string ids_key = prefix.empty() ? "ids" : prefix + "_ids";
  const std::string emb_key = prefix.empty() ? "embeddings" : prefix + "_embeddings";
  for (size_t i = 0; i < ex["texts"].size(); ++i) {
    const auto want = ex[emb_key][i].get<std::vector<float>>();
    const auto got = embed(e, ex[ids_key][i].get<std::vector<int32_t>>());
    ASSERT_EQ(got.size(), want.size()) << what << " text " << i;
    EXPECT_GE(cosine(got, want), 0.9999) << what << " " << prefix << " text " << i;
    for (size_t j = 0; j < got.size(); ++j) {
      EXPECT_NEAR(got[j], want[j], 2e-3 * std::max(1.0f, std::fabs(want[j])))
          << what << " " << prefix << " text " << i << " value " << j;
    }
  }
}

TEST(EmbeddingGemma, ReadsTheSentenceTransformersLayout) {
  const json ex = expected();
  auto e = engine_for(options(kDir));
  ASSERT_NE(e, nullptr);
  ASSERT_NE(e->pooler(), nullptr);
  const PoolingConfig& pc = e->pooler()->config();
  EXPECT_EQ(pc.type, PoolingType::kMean);
  EXPECT_TRUE(pc.normalize);
  ASSERT_EQ(pc.dense.size(), 2u);
  EXPECT_EQ(pc.dense[0].in_features, 64);
  EXPECT_EQ(pc.dense[0].out_features, 128);
  EXPECT_TRUE(pc.dense[0].bias.empty());
  EXPECT_EQ(pc.dense[1].out_features, 64);
  for (const auto& [name, text] : ex["prompts"].items()) {
    ASSERT_TRUE(pc.prompts.contains(name)) << name;
    EXPECT_EQ(pc.prompts.at(name), text.get<std::string>());
  }
  EXPECT_EQ(pc.default_prompt_name, "");
  // Our tokenizer gives sentence-transformers' ids: <bos> text <eos>, the prompt put before.
  for (size_t i = 0; i < ex["texts"].size(); ++i) {
    const std::string text = ex["texts"][i].get<std::string>();
    EXPECT_EQ(e->tokenizer().encode(text), ex["ids"][i].get<std::vector<int32_t>>()) << i;
    EXPECT_EQ(e->tokenizer().encode(pc.prompts.at("query") + text),
              ex["query_ids"][i].get<std::vector<int32_t>>())
        << i;
    EXPECT_EQ(e->tokenizer().encode(pc.prompts.at("document") + text),
              ex["document_ids"][i].get<std::vector<int32_t>>())
        << i;
  }
}

TEST(EmbeddingGemma, HfFolderMatchesSentenceTransformers) {
  const json ex = expected();
  for (const char* kv : {"f32", "f16"}) {
    auto e = engine_for(options(kDir, kv));
    ASSERT_NE(e, nullptr);
    expect_matches(*e, ex, "", std::string("folder ") + kv);
    expect_matches(*e, ex, "query", std::string("folder ") + kv);
    expect_matches(*e, ex, "document", std::string("folder ") + kv);
  }
}

TEST(EmbeddingGemma, GgufMatchesSentenceTransformers) {
  const json ex = expected();
  auto e = engine_for(options(std::string(kDir) + "/model.gguf"));
  ASSERT_NE(e, nullptr);
  const PoolingConfig& pc = e->pooler()->config();
  EXPECT_EQ(pc.type, PoolingType::kMean);
  ASSERT_EQ(pc.dense.size(), 2u) << "dense_2 / dense_3";
  expect_matches(*e, ex, "", "gguf");
  expect_matches(*e, ex, "query", "gguf");
}

// The fixture tells the masks apart: what a causal mask gives is far from our vectors (for texts
// of more than one token besides <bos> / <eos>).
TEST(EmbeddingGemma, IsNotTheCausalVector) {
  const json ex = expected();
  auto e = engine_for(options(kDir));
  ASSERT_NE(e, nullptr);
  for (size_t i = 0; i < ex["texts"].size(); ++i) {
    const auto ids = ex["ids"][i].get<std::vector<int32_t>>();
    if (ids.size() <= 3) continue;
    const auto causal = ex["causal_embeddings"][i].get<std::vector<float>>();
    EXPECT_LT(cosine(embed(*e, ids), causal), 0.99) << i;
  }
}

TEST(EmbeddingGemma, SameVectorAtBatchOneAndSixtyFour) {
  const json ex = expected();
  for (const char* kv : {"f32", "f16"}) {
    auto e = engine_for(options(kDir, kv));
    ASSERT_NE(e, nullptr);
    std::vector<std::vector<int32_t>> inputs;
    const size_t n = ex["ids"].size();
    for (size_t i = 0; inputs.size() < 64; ++i) {
      const char* key = (i / n) % 3 == 0 ? "ids" : (i / n) % 3 == 1 ? "query_ids" : "document_ids";
      auto ids = ex[key][i % n].get<std::vector<int32_t>>();
      // Later rounds differ by a few inner tokens, so the 64 inputs are distinct.
      for (size_t k = 0; k < i / (3 * n); ++k) {
        ids.insert(ids.begin() + 1, static_cast<int32_t>(40 + k + i));
      }
      inputs.push_back(std::move(ids));
    }
    std::vector<std::vector<float>> alone;
    for (const auto& ids : inputs) alone.push_back(embed(*e, ids));
    const uint64_t steps_before = e->stats().steps;
    std::vector<std::shared_ptr<RequestStream>> pools;
    for (const auto& ids : inputs) {
      auto s = e->submit(pooling_request(ids));
      ASSERT_TRUE(s.is_ok());
      pools.push_back(*s);
    }
    for (size_t i = 0; i < pools.size(); ++i) {
      EXPECT_EQ(read_vector(*pools[i]), alone[i]) << kv << " input " << i;
    }
    EXPECT_LT(e->stats().steps - steps_before, 20u) << "the 64 inputs shared steps";
    auto* le = dynamic_cast<LlmEngine*>(e.get());
    ASSERT_NE(le, nullptr);
    EXPECT_TRUE(le->check_kv_invariants().is_ok());
  }
}

TEST(EmbeddingGemma, RefusesGenerationAndKeepsServing) {
  const json ex = expected();
  auto e = engine_for(options(kDir));
  ASSERT_NE(e, nullptr);
  GenerateRequest gen;
  gen.prompt_token_ids = ex["ids"][1].get<std::vector<int32_t>>();
  gen.params.max_tokens = 4;
  auto g = e->submit(std::move(gen));
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("bidirectional"), std::string::npos)
      << g.status().to_string();
  std::vector<int32_t> long_ids(600, 9);  // over max_num_batched_tokens 512
  auto s = e->submit(pooling_request(long_ids));
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(embed(*e, ex["ids"][0].get<std::vector<int32_t>>()).size(), 64u);
}

}  // namespace
}  // namespace llmserve
