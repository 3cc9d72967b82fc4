// The sampler with a grammar: whatever the logits (random, seeded, temperature 1), every output
// is a sentence of the grammar, checked by an independent reader (nlohmann::json, a hand-written
// matcher); greedy picks the best allowed token; the grammar beats min_tokens; speculative chains
// advance the matcher over accepted tokens only.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>
#include <random>

#include "engine/grammar/grammar_compiler.h"
#include "engine/grammar/token_bitmask.h"
#include "engine/runner/draft_chains.h"
#include "engine/runner/sampler.h"
#include "engine/runner/stop_checker.h"
#include "tests/unit/sampling/fake_tokenizer.h"

namespace llmserve::testing {
namespace {

constexpr int32_t kConstrainedVocab = 300;

// Whether `s` matches [a-c]{2,5}-[0-9]{1,3} (by hand: std::regex trips GCC 12's
// maybe-uninitialized warning in sanitizer builds).
bool matches_code(const std::string& s) {
  const size_t dash = s.find('-');
  if (dash == std::string::npos || dash < 2 || dash > 5) return false;
  const size_t digits = s.size() - dash - 1;
  if (digits < 1 || digits > 3) return false;
  for (size_t i = 0; i < dash; ++i) {
    if (s[i] < 'a' || s[i] > 'c') return false;
  }
  for (size_t i = dash + 1; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
  }
  return true;
}

class ConstrainedSampling : public ::testing::Test {
 protected:
  CompiledGrammarPtr compile(GrammarKind kind, std::string text,
                             std::vector<std::string> choices = {}) {
    GrammarSpec s;
    s.kind = kind;
    s.text = std::move(text);
    s.choices = std::move(choices);
    auto r =
        compiler_.compile_and_wait(s, std::chrono::steady_clock::now() + std::chrono::seconds(60));
    EXPECT_TRUE(r.is_ok()) << r.status().to_string();
    return r.is_ok() ? *r : nullptr;
  }

  // Samples with random logits until the sample stops; returns its text (the stop token left
  // out) and whether it stopped within max_tokens.
  std::pair<std::string, bool> generate(const CompiledGrammar& g, SamplingParams p,
                                        uint32_t logits_seed, int32_t max_tokens = 400) {
    std::mt19937 rng(logits_seed);
    std::normal_distribution<float> dist(0.0f, 3.0f);
    SamplingState state(p, {}, logits_seed * 7919u + 1);
    state.set_matcher(g.make_matcher());
    StopChecker stop(tok_, p, tok_.spec().stop_ids, max_tokens, {}, /*constrained=*/true);
    std::vector<float> logits(kConstrainedVocab);
    std::string text;
    while (!stop.finished()) {
      for (float& x : logits) x = dist(rng);
      const int32_t t = sampler_.sample(logits, p, state).token_id;
      text += stop.append(t).text;
    }
    return {text, state.grammar_ended()};
  }

  FakeTokenizer tok_;
  GrammarCompiler compiler_{tok_, kConstrainedVocab, GrammarCompilerOptions{}};
  Sampler sampler_{kConstrainedVocab, {FakeTokenizer::kEos, FakeTokenizer::kImEnd}};
};

TEST_F(ConstrainedSampling, RandomLogitsAlwaysGiveSchemaValidJson) {
  auto g = compile(GrammarKind::kJsonSchema, R"({
    "type": "object",
    "properties": {
      "name": {"type": "string", "minLength": 1, "maxLength": 6},
      "n": {"type": "integer", "minimum": 0, "maximum": 99},
      "tags": {"type": "array", "items": {"enum": ["x", "yy"]}, "minItems": 1, "maxItems": 3},
      "ok": {"type": "boolean"}
    },
    "required": ["name", "n", "tags", "ok"],
    "additionalProperties": false
  })");
  ASSERT_NE(g, nullptr);
  SamplingParams p;
  p.temperature = 1.0f;
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    auto [text, ended] = generate(*g, p, seed);
    ASSERT_TRUE(ended) << "seed " << seed << ": " << text;
    nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    std::string hex;
    for (unsigned char ch : text) hex += std::to_string(ch) + " ";
    ASSERT_TRUE(j.is_object()) << "seed " << seed << ": " << text << " " << hex;
    ASSERT_EQ(j.size(), 4u) << text;
    ASSERT_TRUE(j["name"].is_string()) << text;
    const size_t name_len = j["name"].get<std::string>().size();
    EXPECT_GE(name_len, 1u) << text;
    EXPECT_TRUE(j["n"].is_number_integer() && j["n"].get<int>() >= 0 && j["n"].get<int>() <= 99)
        << text;
    ASSERT_TRUE(j["tags"].is_array()) << text;
    EXPECT_GE(j["tags"].size(), 1u);
    EXPECT_LE(j["tags"].size(), 3u);
    for (const auto& t : j["tags"]) EXPECT_TRUE(t == "x" || t == "yy") << text;
    EXPECT_TRUE(j["ok"].is_boolean()) << text;
  }
}

TEST_F(ConstrainedSampling, RegexAndChoiceOutputsMatch) {
  auto re = compile(GrammarKind::kRegex, "[a-c]{2,5}-[0-9]{1,3}");
  auto choice = compile(GrammarKind::kChoice, "", {"red", "green", "blue \"sky\""});
  ASSERT_NE(re, nullptr);
  ASSERT_NE(choice, nullptr);
  SamplingParams p;
  p.temperature = 1.0f;
  std::set<std::string> seen;
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    auto [text, ended] = generate(*re, p, seed);
    EXPECT_TRUE(ended);
    EXPECT_TRUE(matches_code(text)) << text;
    auto [c, c_ended] = generate(*choice, p, seed);
    EXPECT_TRUE(c_ended);
    EXPECT_TRUE(c == "red" || c == "green" || c == "blue \"sky\"") << c;
    seen.insert(c);
  }
  EXPECT_EQ(seen.size(), 3u);  // random logits reach every choice
}

TEST_F(ConstrainedSampling, GreedyTakesTheBestAllowedToken) {
  auto g = compile(GrammarKind::kRegex, "[xy]");
  ASSERT_NE(g, nullptr);
  SamplingParams p;
  p.temperature = 0.0f;
  SamplingState state(p, {}, 1);
  state.set_matcher(g->make_matcher());
  std::vector<float> logits(kConstrainedVocab, 0.0f);
  logits[tok_.bytes_of("z")[0]] = 9.0f;  // the best, but not allowed
  logits[tok_.bytes_of("y")[0]] = 2.0f;
  logits[tok_.bytes_of("x")[0]] = 1.0f;
  EXPECT_EQ(sampler_.sample(logits, p, state).token_id, tok_.bytes_of("y")[0]);
}

TEST_F(ConstrainedSampling, TheGrammarsEndBeatsMinTokens) {
  auto g = compile(GrammarKind::kRegex, "ok");
  ASSERT_NE(g, nullptr);
  SamplingParams p;
  p.temperature = 0.0f;
  p.min_tokens = 10;  // masks the stop tokens the grammar needs after "ok"
  auto [text, ended] = generate(*g, p, 3);
  EXPECT_TRUE(ended);
  EXPECT_EQ(text, "ok");
  p.ignore_eos = true;  // the grammar still ends it
  auto [text2, ended2] = generate(*g, p, 3);
  EXPECT_TRUE(ended2);
  EXPECT_EQ(text2, "ok");
}

TEST_F(ConstrainedSampling, ChainsAdvanceTheMatcherOverAcceptedTokensOnly) {
  auto g = compile(GrammarKind::kRegex, "abc");
  ASSERT_NE(g, nullptr);
  SamplingParams p;
  p.temperature = 0.0f;
  const int32_t a = tok_.bytes_of("a")[0], b = tok_.bytes_of("b")[0], c = tok_.bytes_of("c")[0];
  std::vector<float> logits(3 * kConstrainedVocab, 0.0f);
  for (int r = 0; r < 3; ++r)
    logits[r * kConstrainedVocab + tok_.bytes_of("q")[0]] = 5.0f;  // never allowed
  SamplingState state(p, {}, 1);
  state.set_matcher(g->make_matcher());
  // Drafts: "a" (the grammar's only choice: accepted), then "q" (refused: the row samples "b").
  std::vector<SampleRow> rows(3);
  for (int r = 0; r < 3; ++r) rows[r] = {&logits[r * kConstrainedVocab], &p, &state, -1, -1};
  rows[0].draft = a;
  rows[1].draft = tok_.bytes_of("q")[0];
  auto out = sample_chains(sampler_, logits, rows);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].token_id, a);
  EXPECT_EQ(out[1].token_id, b);
  EXPECT_EQ(out[2].token_id, -1);  // after the rejected draft
  EXPECT_EQ(state.matcher()->num_accepted(), 2);
  std::vector<uint32_t> mask(token_bitmask_words(kConstrainedVocab));
  state.matcher()->fill_next_token_mask(mask);
  EXPECT_TRUE(token_allowed(mask, c));
  EXPECT_FALSE(token_allowed(mask, a));

  // A device sampler's parallel chains: copies advanced over the drafts, the sample's state
  // handed back from the last kept row.
  SamplingState s2(p, {}, 1);
  s2.set_matcher(g->make_matcher());
  for (auto& r : rows) r.state = &s2;
  ParallelChains chains;
  auto prepared = chains.prepare(rows);
  std::vector<SampleResult> results;
  for (const SampleRow& r : prepared) {
    results.push_back(
        sampler_.sample({r.logits, static_cast<size_t>(kConstrainedVocab)}, *r.params, *r.state));
  }
  chains.finish(results);
  EXPECT_EQ(results[0].token_id, a);
  EXPECT_EQ(results[1].token_id, b);
  EXPECT_EQ(results[2].token_id, -1);
  EXPECT_EQ(s2.matcher()->num_accepted(), 2);
}

// A JSON string whose bytes only split-character tokens spell (denied in JSON): after the
// opening quote nothing can follow. The sampler must not slip a refused token past the grammar:
// the state records the dead end, which ends the request in error (issue 41).
TEST_F(ConstrainedSampling, ADeadEndIsRecordedNotSampledPast) {
  auto g = compile(GrammarKind::kJsonSchema, R"({"const": "\ud83d\ude00"})");
  ASSERT_NE(g, nullptr);
  SamplingParams p;
  p.temperature = 0.0f;
  SamplingState state(p, {}, 1);
  state.set_matcher(g->make_matcher());
  std::vector<float> logits(kConstrainedVocab, 0.0f);
  const int32_t quote = tok_.id_of("\"");
  logits[static_cast<size_t>(quote)] = 5.0f;
  EXPECT_EQ(sampler_.sample(logits, p, state).token_id, quote);
  EXPECT_FALSE(state.grammar_refused());
  std::vector<uint32_t> mask(static_cast<size_t>(token_bitmask_words(kConstrainedVocab)));
  state.matcher()->fill_next_token_mask(mask);
  EXPECT_TRUE(std::all_of(mask.begin(), mask.end(), [](uint32_t w) { return w == 0; }));
  (void)sampler_.sample(logits, p, state);
  EXPECT_TRUE(state.grammar_refused());
  EXPECT_EQ(state.matcher()->num_accepted(), 1);  // the quote only
}

}  // namespace
}  // namespace llmserve::testing
