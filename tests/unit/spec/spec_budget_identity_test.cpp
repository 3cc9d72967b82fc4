// The reasoning budget on the default model, in the engine: prompts that open a <think> section
// (the generation prompt ends "<think>\n", as QwQ's and DeepSeek-R1's templates write it), budgets
// 0..15. Oracle: the same requests without a budget (the engine's plain decoding), and the
// tokenizer's encoding of "</think>": a budgeted reply is the plain reply's first N tokens, then
// exactly the close's tokens (unless the model closed the section itself within N), and with
// speculation on (n-gram and a draft model) every token, text and finish equals speculation off.
#include <gtest/gtest.h>

#include "tests/unit/spec/spec_test_util.h"

namespace llmserve::testing {
namespace {

constexpr int32_t kBudgetTokens = 28;
constexpr int32_t kBudgets[] = {0, 3, 8, 15};

EngineOptions options(SpecMethod method) {
  EngineOptions o = small_options();
  o.max_num_seqs = 16;
  o.max_num_batched_tokens = 64;
  o.speculative.method = method;
  o.speculative.num_tokens = 4;
  o.speculative.max_running_requests = 64;
  o.speculative.draft_token_cost = 0;  // draft every step
  if (method == SpecMethod::kDraft) o.speculative.draft_model = o.model_path;
  return o;
}

std::vector<std::vector<int32_t>> thinking_prompts(const Tokenizer& tok) {
  std::vector<std::vector<int32_t>> out = grounded_prompts(tok);
  const std::vector<int32_t> open = tok.encode("<think>\n", false, true);
  for (auto& p : out) p.insert(p.end(), open.begin(), open.end());
  return out;
}

// Every prompt x budget (budget -1: none) x greedy and a seeded temperature.
std::vector<GenerateRequest> requests(const Tokenizer& tok, bool with_budget) {
  std::vector<GenerateRequest> out;
  for (const Setting& s : {Setting{0.0f, 0}, Setting{0.8f, 11}}) {
    for (const auto& prompt : thinking_prompts(tok)) {
      for (int32_t budget : kBudgets) {
        GenerateRequest r = spec_request(prompt, s, kBudgetTokens);
        if (with_budget) {
          r.reasoning_budget.max_tokens = budget;
          r.reasoning_budget.starts_inside = true;
        }
        out.push_back(std::move(r));
      }
    }
  }
  return out;
}

std::vector<Collected> run(SpecMethod method, bool with_budget, EngineStats* stats = nullptr) {
  auto engine = make_engine(options(method));
  if (engine == nullptr) return {};
  std::vector<Collected> out = run_together(*engine, requests(engine->tokenizer(), with_budget));
  expect_no_leak(*engine);
  if (stats != nullptr) *stats = engine->stats();
  return out;
}

TEST(ReasoningBudgetEngine, ReplyIsThePlainReplysFirstNTokensThenTheClose) {
  LLMSERVE_REQUIRE_MODEL();
  auto engine = make_engine(options(SpecMethod::kNone));
  ASSERT_NE(engine, nullptr);
  const Tokenizer& tok = engine->tokenizer();
  const std::vector<int32_t> close = tok.encode("</think>", false, true);
  ASSERT_FALSE(close.empty());
  const std::vector<Collected> plain = run_together(*engine, requests(tok, false));
  const std::vector<Collected> budgeted = run_together(*engine, requests(tok, true));
  ASSERT_EQ(plain.size(), budgeted.size());
  int forced = 0;
  for (size_t i = 0; i < plain.size(); ++i) {
    const int32_t n = kBudgets[i % std::size(kBudgets)];
    const std::vector<int32_t>& want = plain[i].samples[0].token_ids;
    const std::vector<int32_t>& got = budgeted[i].samples[0].token_ids;
    const std::string plain_head =
        tok.decode(std::span(want).first(std::min<size_t>(want.size(), n + close.size())));
    if (plain_head.find("</think>") != std::string::npos) continue;  // closed by the model
    if (want.size() <= static_cast<size_t>(n)) {  // ended (EOS) before the budget ran out
      EXPECT_EQ(got, want) << "request " << i;
      continue;
    }
    ASSERT_GE(got.size(), static_cast<size_t>(n) + close.size()) << "request " << i;
    EXPECT_EQ(std::vector<int32_t>(got.begin(), got.begin() + n),
              std::vector<int32_t>(want.begin(), want.begin() + n))
        << "request " << i;
    EXPECT_EQ(std::vector<int32_t>(got.begin() + n, got.begin() + n + close.size()), close)
        << "request " << i << " budget " << n;
    EXPECT_EQ(tok.decode(std::span(got).first(n)).find("</think>"), std::string::npos);
    ++forced;
  }
  EXPECT_GT(forced, 32);  // the model rarely closes by itself: most replies were cut
}

TEST(ReasoningBudgetEngine, SpeculationOnEqualsOff) {
  LLMSERVE_REQUIRE_MODEL();
  const std::vector<Collected> off = run(SpecMethod::kNone, true);
  ASSERT_FALSE(off.empty());
  for (SpecMethod method : {SpecMethod::kNgram, SpecMethod::kDraft}) {
    EngineStats stats;
    const std::vector<Collected> on = run(method, true, &stats);
    ASSERT_EQ(on.size(), off.size());
    for (size_t i = 0; i < on.size(); ++i) {
      ASSERT_EQ(on[i].samples.size(), off[i].samples.size());
      for (size_t k = 0; k < on[i].samples.size(); ++k) {
        EXPECT_EQ(on[i].samples[k].token_ids, off[i].samples[k].token_ids) << "request " << i;
        EXPECT_EQ(on[i].samples[k].text, off[i].samples[k].text) << "request " << i;
        EXPECT_EQ(on[i].samples[k].finish, off[i].samples[k].finish) << "request " << i;
      }
    }
    EXPECT_GT(stats.spec_num_drafts, 50u);  // speculation really ran
    EXPECT_GT(stats.spec_num_accepted_tokens, 0u);
  }
}

}  // namespace
}  // namespace llmserve::testing
