// Shared helpers of the engine tests on the real default model (LLMSERVE_TEST_MODEL).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/llm_engine.h"
#include "engine/tokenizer/tokenizer.h"

namespace llmserve::testing {

inline const char* test_model() {
  return std::getenv("LLMSERVE_TEST_MODEL");
}

#define LLMSERVE_REQUIRE_MODEL()                        \
  do {                                                  \
    if (::llmserve::testing::test_model() == nullptr) { \
      GTEST_SKIP() << "LLMSERVE_TEST_MODEL not set";    \
    }                                                   \
  } while (0)

// Small defaults: 1 thread, a 64 MiB KV cache, chunked prefill with a small token budget.
inline EngineOptions small_options() {
  EngineOptions o;
  if (const char* m = test_model(); m != nullptr) o.model_path = m;
  o.threads = 1;  // on a loaded 2-core machine the 2-thread pool is ~10x slower (see report)
  o.kv_cache_bytes = 64ull << 20;
  o.max_num_seqs = 32;
  o.max_num_batched_tokens = 48;
  o.max_model_len = 1024;
  o.seed = 1234;
  return o;
}

inline std::unique_ptr<Engine> make_engine(const EngineOptions& o) {
  auto e = Engine::create(o);
  EXPECT_TRUE(e.is_ok()) << e.status().to_string();
  return e.is_ok() ? std::move(e).value() : nullptr;
}

// Everything one sample produced.
struct SampleResultText {
  std::vector<int32_t> token_ids;
  std::string text;
  std::vector<TokenLogprob> logprobs;
  FinishReason finish = FinishReason::kNone;
  std::string stop_reason;
  Status error;
};

struct Collected {
  std::vector<SampleResultText> samples;
  Usage usage;
  size_t messages = 0;
  bool index_ok = true;
};

// Reads a stream to its end (sample i's messages go to samples[i]).
inline Collected collect(RequestStream& stream) {
  Collected c;
  c.samples.resize(static_cast<size_t>(stream.num_samples()));
  while (auto out = stream.next(std::chrono::seconds(120))) {
    ++c.messages;
    if (out->index < 0 || out->index >= stream.num_samples()) {
      c.index_ok = false;
      continue;
    }
    SampleResultText& s = c.samples[static_cast<size_t>(out->index)];
    s.token_ids.insert(s.token_ids.end(), out->token_ids.begin(), out->token_ids.end());
    s.text += out->text;
    for (auto& lp : out->logprobs) s.logprobs.push_back(lp);
    if (out->finish != FinishReason::kNone) {
      s.finish = out->finish;
      s.stop_reason = out->stop_reason;
      s.error = out->error;
    }
    c.usage = out->usage;
  }
  EXPECT_FALSE(stream.timed_out()) << "stream " << stream.request_id() << " timed out";
  return c;
}

inline GenerateRequest make_request(std::vector<int32_t> prompt, int32_t max_tokens,
                                    float temperature = 0.0f) {
  GenerateRequest r;
  r.prompt_token_ids = std::move(prompt);
  r.params.max_tokens = max_tokens;
  r.params.temperature = temperature;
  return r;
}

// Submits every request at once, then reads them all.
inline std::vector<Collected> run_together(Engine& engine, std::vector<GenerateRequest> reqs) {
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (auto& r : reqs) {
    auto s = engine.submit(std::move(r));
    EXPECT_TRUE(s.is_ok()) << s.status().to_string();
    if (s.is_ok()) streams.push_back(*s);
  }
  std::vector<Collected> out;
  for (auto& s : streams) out.push_back(collect(*s));
  return out;
}

inline Collected run_alone(Engine& engine, GenerateRequest req) {
  auto s = engine.submit(std::move(req));
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  return s.is_ok() ? collect(**s) : Collected{};
}

// After the engine went idle: scheduler + KV invariants hold and no block is held.
inline void expect_no_leak(Engine& engine) {
  auto* e = dynamic_cast<LlmEngine*>(&engine);
  ASSERT_NE(e, nullptr);
  const Status st = e->check_kv_invariants();
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  const EngineStats s = engine.stats();
  EXPECT_EQ(s.kv_cache_usage_ratio, 0.0);
  EXPECT_EQ(s.kv_blocks_free, s.kv_blocks_total);
  EXPECT_EQ(s.requests_running, 0);
  EXPECT_EQ(s.requests_waiting, 0);
}

// 16 different English prompts of 20..60 tokens.
inline std::vector<std::vector<int32_t>> distinct_prompts(const Tokenizer& tok, size_t count) {
  static const char* kTopics[] = {
      "the history of the printing press",
      "how bees make honey",
      "the rules of chess",
      "why the sky is blue",
      "a recipe for bread",
      "the life of a lighthouse keeper",
      "the first moon landing",
      "how volcanoes form",
      "the migration of birds",
      "a day in ancient Rome",
      "the invention of the telephone",
      "how to plant a tree",
      "the water cycle",
      "a storm at sea",
      "the origins of jazz music",
      "how a steam engine works",
      "the deep ocean floor",
      "why cats purr",
  };
  std::vector<std::vector<int32_t>> out;
  for (size_t i = 0; i < count; ++i) {
    std::string text = "Write a short paragraph about " +
                       std::string(kTopics[i % (sizeof(kTopics) / sizeof(kTopics[0]))]) + ".";
    for (size_t k = 0; k < i % 4; ++k) text += " Keep it simple and clear for a young reader.";
    text += " Paragraph:";
    out.push_back(tok.encode(text, true, false));
  }
  return out;
}

}  // namespace llmserve::testing
