// Pooling requests on tiny random Qwen3 embedding models against sentence-transformers (the
// fixtures of tests/reference/make_pooling_fixtures.py): every text's vector within cosine
// 0.9999 of model.encode, query prompts, Matryoshka dimensions; and the same vector, bit for
// bit, whether a text ran alone or among 64 pooling requests and generation requests.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "engine/llm_engine.h"
#include "engine/pooling/pooler.h"

namespace llmserve {
namespace {

using json = nlohmann::json;

std::string fixture(const std::string& rel) {
  return std::string(LLMSERVE_FIXTURES_DIR) + "/" + rel;
}

json expected(const std::string& dir) {
  std::ifstream in(fixture(dir + "/expected.json"));
  return json::parse(in);
}

EngineOptions options(const std::string& dir, const char* kv = "f32") {
  EngineOptions o;
  o.model_path = fixture(dir);
  o.threads = 1;
  o.kv_cache_bytes = 16ull << 20;
  o.kv_cache_dtype = kv;
  o.max_num_seqs = 128;
  o.max_num_batched_tokens = 256;
  o.max_model_len = 512;
  return o;
}

std::unique_ptr<Engine> engine_for(const EngineOptions& o) {
  auto e = Engine::create(o);
  EXPECT_TRUE(e.is_ok()) << e.status().to_string();
  return e.is_ok() ? std::move(e).value() : nullptr;
}

GenerateRequest pooling_request(std::vector<int32_t> ids, int32_t dimensions = 0) {
  GenerateRequest r;
  r.prompt_token_ids = std::move(ids);
  r.params.max_tokens = 0;
  r.pooling = PoolingParams{dimensions};
  return r;
}

std::vector<float> read_vector(RequestStream& s) {
  std::vector<float> v;
  int messages = 0;
  while (auto out = s.next(std::chrono::seconds(120))) {
    ++messages;
    EXPECT_EQ(out->finish, FinishReason::kStop) << out->error.to_string();
    v = out->embedding;
  }
  EXPECT_EQ(messages, 1);
  return v;
}

std::vector<float> embed(Engine& e, std::vector<int32_t> ids, int32_t dimensions = 0) {
  auto s = e.submit(pooling_request(std::move(ids), dimensions));
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  return s.is_ok() ? read_vector(**s) : std::vector<float>{};
}

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ab += double{a[i]} * b[i];
    aa += double{a[i]} * a[i];
    bb += double{b[i]} * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

void expect_matches(const std::string& dir, const char* ids_key, const char* emb_key,
                    const char* kv, const std::string& model = "") {
  const json ex = expected(dir);
  EngineOptions o = options(dir, kv);
  if (!model.empty()) o.model_path = fixture(dir + "/" + model);
  auto e = engine_for(o);
  ASSERT_NE(e, nullptr);
  ASSERT_NE(e->pooler(), nullptr);
  for (size_t i = 0; i < ex[ids_key].size(); ++i) {
    const auto want = ex[emb_key][i].get<std::vector<float>>();
    const auto got = embed(*e, ex[ids_key][i].get<std::vector<int32_t>>());
    ASSERT_EQ(got.size(), want.size()) << dir << " text " << i;
    EXPECT_GE(cosine(got, want), 0.9999) << dir << " text " << i;
    for (size_t j = 0; j < got.size(); ++j) {
      EXPECT_NEAR(got[j], want[j], 2e-3 * std::max(1.0f, std::fabs(want[j]))) << i << "/" << j;
    }
  }
}

TEST(PoolingEngine, LastTokenDenseNormalizeMatchesSentenceTransformers) {
  expect_matches("tiny_qwen3_embed", "ids", "embeddings", "f32");
}

TEST(PoolingEngine, QueryPromptMatchesSentenceTransformers) {
  expect_matches("tiny_qwen3_embed", "query_ids", "query_embeddings", "f32");
}

TEST(PoolingEngine, MeanPoolingMatchesSentenceTransformers) {
  expect_matches("tiny_qwen3_embed_mean", "ids", "embeddings", "f32");
}

TEST(PoolingEngine, F16KvCacheStillMatches) {
  expect_matches("tiny_qwen3_embed", "ids", "embeddings", "f16");
}

// The GGUF llama.cpp's converter made of the same folder: {arch}.pooling_type (3 last, 1 mean),
// normalised as llama.cpp's server does; no Dense layer (the converter keeps none for Qwen3), so
// the oracle is sentence-transformers' Pooling output, normalised.
TEST(PoolingEngine, GgufLastTokenMatchesSentenceTransformers) {
  expect_matches("tiny_qwen3_embed", "ids", "hidden_embeddings", "f32", "model.gguf");
}

TEST(PoolingEngine, GgufMeanPoolingMatchesSentenceTransformers) {
  expect_matches("tiny_qwen3_embed_mean", "ids", "hidden_embeddings", "f32", "model.gguf");
}

TEST(PoolingEngine, ReadsTheSentenceTransformersLayout) {
  auto e = engine_for(options("tiny_qwen3_embed"));
  ASSERT_NE(e, nullptr);
  const PoolingConfig& c = e->pooler()->config();
  EXPECT_EQ(c.type, PoolingType::kLast);
  EXPECT_TRUE(c.normalize);
  ASSERT_EQ(c.dense.size(), 1u);
  EXPECT_EQ(c.dense[0].activation, DenseActivation::kTanh);
  EXPECT_EQ(e->pooler()->width(), 48);
  EXPECT_EQ(c.prompts.at("query"), expected("tiny_qwen3_embed")["query_prompt"]);
}

TEST(PoolingEngine, MatryoshkaDimensionsCutThenNormalise) {
  const json ex = expected("tiny_qwen3_embed");
  auto e = engine_for(options("tiny_qwen3_embed"));
  ASSERT_NE(e, nullptr);
  for (int32_t d : {1, 8, 32, 48}) {
    auto full = ex["embeddings"][1].get<std::vector<float>>();
    full.resize(static_cast<size_t>(d));
    const auto got = embed(*e, ex["ids"][1].get<std::vector<int32_t>>(), d);
    ASSERT_EQ(got.size(), static_cast<size_t>(d));
    EXPECT_GE(cosine(got, full), 0.9999) << d;
    double n = 0;
    for (float v : got) n += double{v} * v;
    EXPECT_NEAR(n, 1.0, 1e-5) << d;
  }
  auto bad = e->submit(pooling_request({5, 6, 7}, 49));
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("dimensions"), std::string::npos);
}

// A text's vector is the same bit for bit alone and in a batch of 64 pooling requests mixed with
// generation requests (continuous batching puts them in the same steps).
TEST(PoolingEngine, SameVectorAtBatchOneAndSixtyFour) {
  const json ex = expected("tiny_qwen3_embed");
  for (const char* kv : {"f16", "f32"}) {
    auto e = engine_for(options("tiny_qwen3_embed", kv));
    ASSERT_NE(e, nullptr);
    std::vector<std::vector<int32_t>> inputs;
    for (size_t i = 0; inputs.size() < 64; ++i) {
      const char* key = (i / ex["ids"].size()) % 2 == 0 ? "ids" : "query_ids";
      auto ids = ex[key][i % ex["ids"].size()].get<std::vector<int32_t>>();
      // Later rounds differ by a few leading tokens, so the 64 inputs are distinct.
      for (size_t k = 0; k < i / 16; ++k) ids.insert(ids.begin(), static_cast<int32_t>(3 + k + i));
      inputs.push_back(std::move(ids));
    }
    std::vector<std::vector<float>> alone;
    for (const auto& ids : inputs) alone.push_back(embed(*e, ids));

    auto generation = [&](int g) {
      GenerateRequest r;
      r.prompt_token_ids = ex["ids"][g].get<std::vector<int32_t>>();
      r.params.max_tokens = 24;
      r.params.temperature = 0.0f;
      r.params.logprobs = 0;  // the chosen token's logprob: the logits' bits show
      r.params.ignore_eos = true;
      return r;
    };
    // Each token with its logprob, as bits.
    auto read_tokens = [](RequestStream& s) {
      std::vector<std::pair<int32_t, uint32_t>> tokens;
      while (auto out = s.next(std::chrono::seconds(120))) {
        for (size_t i = 0; i < out->token_ids.size(); ++i) {
          const float lp = i < out->logprobs.size() ? out->logprobs[i].logprob : 0.0f;
          tokens.emplace_back(out->token_ids[i], std::bit_cast<uint32_t>(lp));
        }
      }
      return tokens;
    };
    std::vector<std::vector<std::pair<int32_t, uint32_t>>> gen_alone;
    for (int g = 0; g < 4; ++g) {
      auto s = e->submit(generation(g));
      ASSERT_TRUE(s.is_ok());
      gen_alone.push_back(read_tokens(**s));
    }
    const uint64_t steps_before = e->stats().steps;

    std::vector<std::shared_ptr<RequestStream>> gens, pools;
    for (int g = 0; g < 4; ++g) {
      auto s = e->submit(generation(g));
      ASSERT_TRUE(s.is_ok());
      gens.push_back(*s);
    }
    for (const auto& ids : inputs) {
      auto s = e->submit(pooling_request(ids));
      ASSERT_TRUE(s.is_ok());
      pools.push_back(*s);
    }
    for (size_t i = 0; i < pools.size(); ++i) {
      EXPECT_EQ(read_vector(*pools[i]), alone[i]) << kv << " input " << i;
    }
    // Generation in steps with pool rows: the same greedy tokens and logprobs as alone.
    for (size_t g = 0; g < gens.size(); ++g) {
      const auto tokens = read_tokens(*gens[g]);
      EXPECT_EQ(tokens.size(), 24u);
      EXPECT_EQ(tokens, gen_alone[g]) << kv << " generation " << g;
    }
    const uint64_t steps_together = e->stats().steps - steps_before;
    EXPECT_LT(steps_together, 40u) << "the 64 inputs and the 4 generations shared steps";
    EXPECT_EQ(e->stats().pooling_requests, 128u);
    auto* le = dynamic_cast<LlmEngine*>(e.get());
    ASSERT_NE(le, nullptr);
    EXPECT_TRUE(le->check_kv_invariants().is_ok());
  }
}

TEST(PoolingEngine, RefusesWhatAPoolingRequestCannotBe) {
  auto e = engine_for(options("tiny_qwen3_embed"));
  ASSERT_NE(e, nullptr);
  GenerateRequest r = pooling_request({5, 6, 7});
  r.params.max_tokens = 3;
  EXPECT_FALSE(e->submit(std::move(r)).is_ok());
  std::vector<int32_t> long_ids(300, 9);  // over max_num_batched_tokens 256
  auto s = e->submit(pooling_request(long_ids));
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.status().code(), StatusCode::kOutOfRange);
}

}  // namespace
}  // namespace llmserve
