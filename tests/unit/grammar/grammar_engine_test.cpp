// Structured outputs through the engine on the default model: every sample's text parses and
// follows its schema (greedy, seeded at temperature 1, n = 2, batched with unconstrained
// requests); the grammar's end stops the sample; n-gram speculation changes no token.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/unit/engine/engine_test_util.h"

namespace llmserve::testing {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kSchema = R"({
  "type": "object",
  "properties": {
    "city": {"type": "string", "maxLength": 24},
    "population": {"type": "integer", "minimum": 0},
    "rivers": {"type": "array", "items": {"type": "string", "maxLength": 16}, "maxItems": 3}
  },
  "required": ["city", "population", "rivers"],
  "additionalProperties": false
})";

std::vector<int32_t> chat_prompt(const Tokenizer& tok, const std::string& user) {
  return tok.encode("<|im_start|>user\n" + user + "<|im_end|>\n<|im_start|>assistant\n", false,
                    true);
}

CompiledGrammarPtr compile(Engine& e, GrammarKind kind, const std::string& text) {
  GrammarSpec s;
  s.kind = kind;
  s.text = text;
  auto r = e.grammar_compiler().compile_and_wait(s, Clock::now() + std::chrono::seconds(120));
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? *r : nullptr;
}

void expect_follows_schema(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  ASSERT_TRUE(j.is_object()) << text;
  ASSERT_EQ(j.size(), 3u) << text;
  EXPECT_TRUE(j["city"].is_string()) << text;
  EXPECT_TRUE(j["population"].is_number_integer() && j["population"].get<int64_t>() >= 0) << text;
  ASSERT_TRUE(j["rivers"].is_array()) << text;
  EXPECT_LE(j["rivers"].size(), 3u) << text;
  for (const auto& r : j["rivers"]) EXPECT_TRUE(r.is_string()) << text;
}

TEST(GrammarEngine, OutputsFollowTheSchemaAndStopAtItsEnd) {
  LLMSERVE_REQUIRE_MODEL();
  auto engine = make_engine(small_options());
  ASSERT_NE(engine, nullptr);
  auto g = compile(*engine, GrammarKind::kJsonSchema, kSchema);
  ASSERT_NE(g, nullptr);
  const auto prompt = chat_prompt(engine->tokenizer(), "Describe Paris as JSON.");
  std::vector<GenerateRequest> reqs;
  for (float temperature : {0.0f, 1.0f, 1.0f, 1.0f}) {
    GenerateRequest r = make_request(prompt, 160, temperature);
    r.params.seed = reqs.size();
    r.grammar = g;
    reqs.push_back(std::move(r));
  }
  GenerateRequest two = make_request(prompt, 160, 1.0f);
  two.params.n = 2;
  two.params.seed = 99;
  two.grammar = g;
  reqs.push_back(std::move(two));
  reqs.push_back(make_request(prompt, 24, 0.0f));  // unconstrained, in the same batches
  auto out = run_together(*engine, std::move(reqs));
  ASSERT_EQ(out.size(), 6u);
  for (size_t i = 0; i < 5; ++i) {
    for (const auto& s : out[i].samples) {
      EXPECT_EQ(s.finish, FinishReason::kStop) << i << ": " << s.text;
      expect_follows_schema(s.text);
    }
  }
  EXPECT_EQ(out[4].samples.size(), 2u);
  EXPECT_NE(out[5].samples[0].text.substr(0, 1), "{");  // the free one is prose, not JSON
  expect_no_leak(*engine);
}

TEST(GrammarEngine, ChoiceAndRegexThroughTheEngine) {
  LLMSERVE_REQUIRE_MODEL();
  auto engine = make_engine(small_options());
  ASSERT_NE(engine, nullptr);
  GrammarSpec choice;
  choice.kind = GrammarKind::kChoice;
  choice.choices = {"positive", "negative", "neutral"};
  auto c =
      engine->grammar_compiler().compile_and_wait(choice, Clock::now() + std::chrono::seconds(60));
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  auto re = compile(*engine, GrammarKind::kRegex, R"(\d{3}-\d{4})");
  ASSERT_NE(re, nullptr);
  GenerateRequest a = make_request(
      chat_prompt(engine->tokenizer(), "Is 'I love this film' positive or negative?"), 16);
  a.grammar = *c;
  GenerateRequest b = make_request(chat_prompt(engine->tokenizer(), "Give a phone number."), 16);
  b.grammar = re;
  b.params.ignore_eos = true;  // the grammar still ends it
  auto out = run_together(*engine, {a, b});
  const std::string& s0 = out[0].samples[0].text;
  EXPECT_TRUE(s0 == "positive" || s0 == "negative" || s0 == "neutral") << s0;
  EXPECT_EQ(out[0].samples[0].finish, FinishReason::kStop);
  const std::string& s1 = out[1].samples[0].text;
  ASSERT_EQ(s1.size(), 8u) << s1;
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(i == 3, s1[i] == '-') << s1;
  EXPECT_EQ(out[1].samples[0].finish, FinishReason::kStop);
  expect_no_leak(*engine);
}

TEST(GrammarEngine, NgramSpeculationChangesNoConstrainedToken) {
  LLMSERVE_REQUIRE_MODEL();
  EngineOptions plain = small_options();
  EngineOptions spec = plain;
  spec.speculative.method = SpecMethod::kNgram;
  spec.speculative.num_tokens = 4;
  spec.speculative.max_running_requests = 64;
  spec.speculative.draft_token_cost = 0;  // draft every step
  std::vector<std::vector<Collected>> runs;
  for (const EngineOptions& o : {plain, spec}) {
    auto engine = make_engine(o);
    ASSERT_NE(engine, nullptr);
    auto g = compile(*engine, GrammarKind::kJsonSchema, kSchema);
    ASSERT_NE(g, nullptr);
    // The answer copies its input: n-gram drafts come from the prompt and are often right.
    const auto prompt = chat_prompt(
        engine->tokenizer(),
        R"(Copy this JSON exactly: {"city": "Lyon", "population": 522250, "rivers": ["Rhone", "Saone"]})");
    std::vector<GenerateRequest> reqs;
    for (float t : {0.0f, 1.0f}) {
      GenerateRequest r = make_request(prompt, 80, t);
      r.params.seed = 5;
      r.grammar = g;
      reqs.push_back(std::move(r));
    }
    runs.push_back(run_together(*engine, std::move(reqs)));
    if (o.speculative.method == SpecMethod::kNgram) {
      EXPECT_GT(runs.back()[0].usage.accepted_draft_tokens, 0);
    }
    expect_no_leak(*engine);
  }
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(runs[0][i].samples[0].token_ids, runs[1][i].samples[0].token_ids)
        << i << " finish " << finish_reason_name(runs[1][i].samples[0].finish) << " "
        << runs[1][i].samples[0].error.to_string();
    expect_follows_schema(runs[1][i].samples[0].text);
  }
}

}  // namespace
}  // namespace llmserve::testing
