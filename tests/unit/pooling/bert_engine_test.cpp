// BERT embeddings (engine/model/bert_graph.h) on tiny random models against sentence-transformers
// (tests/reference/make_bert_fixtures.py): every text's vector within cosine 0.9999 of
// model.encode from the HF folder and from the GGUF llama.cpp's converter writes, mean and CLS
// pooling; texts tokenized by our WordPiece (their ids equal HF tokenizers', wordpiece_test);
// the same vector bit for bit alone and among 64; generation refused; the position table bounds.
#include <gtest/gtest.h>

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

EngineOptions options(const std::string& path) {
  EngineOptions o;
  o.model_path = fixture(path);
  o.threads = 2;
  o.kv_cache_bytes = 8ull << 20;
  o.kv_cache_dtype = "f32";
  o.max_num_seqs = 128;
  o.max_num_batched_tokens = 512;
  o.max_model_len = 0;
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
  for (size_t i = 0; i < a.size(); ++i) {
    ab += double{a[i]} * b[i];
    aa += double{a[i]} * a[i];
    bb += double{b[i]} * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

// Tokenizes each text with the engine's tokenizer (special tokens added, as sentence-transformers
// does) and compares its vector with model.encode's.
void expect_matches(const std::string& dir, const std::string& model = "") {
  const json ex = expected(dir);
  auto e = engine_for(options(model.empty() ? dir : dir + "/" + model));
  ASSERT_NE(e, nullptr);
  ASSERT_NE(e->pooler(), nullptr);
  for (size_t i = 0; i < ex["texts"].size(); ++i) {
    const auto ids = e->tokenizer().encode(ex["texts"][i].get<std::string>());
    const auto want = ex["embeddings"][i].get<std::vector<float>>();
    const auto got = embed(*e, ids);
    ASSERT_EQ(got.size(), want.size()) << dir << " text " << i;
    EXPECT_GE(cosine(got, want), 0.9999) << dir << "/" << model << " text " << i;
    for (size_t j = 0; j < got.size(); ++j) {
      EXPECT_NEAR(got[j], want[j], 2e-3 * std::max(1.0f, std::fabs(want[j]))) << i << "/" << j;
    }
  }
}

TEST(BertEngine, MeanNormalizeFromHfFolderMatchesSentenceTransformers) {
  expect_matches("tiny_bert");
}

TEST(BertEngine, ClsFromHfFolderMatchesSentenceTransformers) {
  expect_matches("tiny_bert_cls");
}

// The GGUF carries bert.pooling_type (1 mean, 2 cls) and is L2-normalised as llama.cpp's server
// does: the CLS folder has no Normalize module, so its oracle is compared by cosine only.
TEST(BertEngine, MeanFromGgufMatchesSentenceTransformers) {
  expect_matches("tiny_bert", "model.gguf");
}

TEST(BertEngine, ClsFromGgufMatchesSentenceTransformersByCosine) {
  const json ex = expected("tiny_bert_cls");
  auto e = engine_for(options("tiny_bert_cls/model.gguf"));
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->pooler()->config().type, PoolingType::kCls);
  for (size_t i = 0; i < ex["texts"].size(); ++i) {
    const auto got = embed(*e, e->tokenizer().encode(ex["texts"][i].get<std::string>()));
    EXPECT_GE(cosine(got, ex["embeddings"][i].get<std::vector<float>>()), 0.9999) << i;
  }
}

TEST(BertEngine, SameVectorAtBatchOneAndSixtyFour) {
  const json ex = expected("tiny_bert");
  auto e = engine_for(options("tiny_bert"));
  ASSERT_NE(e, nullptr);
  std::vector<std::vector<int32_t>> inputs;
  for (size_t i = 0; inputs.size() < 64; ++i) {
    auto ids = e->tokenizer().encode(ex["texts"][i % ex["texts"].size()].get<std::string>());
    // Later rounds differ by a few inner tokens, so the 64 inputs are distinct.
    for (size_t k = 0; k < i / ex["texts"].size(); ++k) {
      ids.insert(ids.begin() + 1, static_cast<int32_t>(200 + k + i));
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
    EXPECT_EQ(read_vector(*pools[i]), alone[i]) << "input " << i;
  }
  EXPECT_LT(e->stats().steps - steps_before, 20u) << "the 64 inputs shared steps";
  auto* le = dynamic_cast<LlmEngine*>(e.get());
  ASSERT_NE(le, nullptr);
  EXPECT_TRUE(le->check_kv_invariants().is_ok());
}

TEST(BertEngine, RefusesGenerationAndInputsPastThePositionTable) {
  auto e = engine_for(options("tiny_bert"));
  ASSERT_NE(e, nullptr);
  GenerateRequest gen;
  gen.prompt_token_ids = {101, 253, 102};
  gen.params.max_tokens = 4;
  auto g = e->submit(std::move(gen));
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("encoder"), std::string::npos) << g.status().to_string();
  std::vector<int32_t> long_ids(200, 253);  // the position table holds 128
  auto s = e->submit(pooling_request(long_ids));
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(embed(*e, {101, 253, 254, 102}).size(), 64u);  // and it still serves
}

}  // namespace
}  // namespace llmserve
