// With speculation on (n-gram and a draft model) every request's tokens, text, finish reason and
// logprobs equal those with it off, greedy and seeded at three temperatures, alone and in
// batches of 16; no KV block leaks.
#include <gtest/gtest.h>

#include "tests/unit/spec/spec_test_util.h"

namespace llmserve::testing {
namespace {

constexpr int32_t kTokens = 20;

EngineOptions spec_options(SpecMethod method) {
  EngineOptions o = small_options();
  o.max_num_seqs = 16;
  o.max_num_batched_tokens = 64;
  o.speculative.method = method;
  o.speculative.num_tokens = 4;
  o.speculative.max_running_requests = 64;
  o.speculative.draft_token_cost =
      0;  // draft every step: the most checks to verify  // draft in full batches too
  if (method == SpecMethod::kDraft) o.speculative.draft_model = o.model_path;
  return o;
}

// Every prompt under every setting; some with logprobs, stop strings or n = 2.
std::vector<GenerateRequest> all_requests(const Tokenizer& tok) {
  std::vector<std::vector<int32_t>> prompts = reference_prompts();
  for (auto& p : grounded_prompts(tok)) prompts.push_back(std::move(p));
  std::vector<GenerateRequest> out;
  for (const Setting& s : identity_settings()) {
    for (size_t i = 0; i < prompts.size(); ++i) {
      GenerateRequest r = spec_request(prompts[i], s, kTokens);
      if (i % 5 == 0) r.params.logprobs = 2;
      if (i % 7 == 3) r.params.stop = {" the", "\n"};
      if (i % 11 == 4 && s.temperature > 0) r.params.n = 2;
      out.push_back(std::move(r));
    }
  }
  return out;
}

void expect_same(const Collected& got, const Collected& want, const std::string& what) {
  ASSERT_EQ(got.samples.size(), want.samples.size()) << what;
  for (size_t k = 0; k < want.samples.size(); ++k) {
    const SampleResultText& g = got.samples[k];
    const SampleResultText& w = want.samples[k];
    EXPECT_EQ(g.token_ids, w.token_ids) << what << " sample " << k;
    EXPECT_EQ(g.text, w.text) << what << " sample " << k;
    EXPECT_EQ(g.finish, w.finish) << what << " sample " << k;
    ASSERT_EQ(g.logprobs.size(), w.logprobs.size()) << what;
    for (size_t t = 0; t < w.logprobs.size(); ++t) {
      EXPECT_EQ(g.logprobs[t].token_id, w.logprobs[t].token_id) << what;
      EXPECT_EQ(g.logprobs[t].logprob, w.logprobs[t].logprob) << what << " token " << t;
      ASSERT_EQ(g.logprobs[t].top.size(), w.logprobs[t].top.size()) << what;
      for (size_t j = 0; j < w.logprobs[t].top.size(); ++j) {
        EXPECT_EQ(g.logprobs[t].top[j].token_id, w.logprobs[t].top[j].token_id) << what;
        EXPECT_EQ(g.logprobs[t].top[j].logprob, w.logprobs[t].top[j].logprob) << what;
      }
    }
  }
}

std::vector<Collected> run_batched(SpecMethod method, EngineStats* stats = nullptr) {
  auto engine = make_engine(spec_options(method));
  if (engine == nullptr) return {};
  std::vector<Collected> out = run_together(*engine, all_requests(engine->tokenizer()));
  expect_no_leak(*engine);
  if (stats != nullptr) *stats = engine->stats();
  return out;
}

// ctest runs each case in its own process, so each case runs the reference (speculation off)
// itself: the n-gram checks share one case.
const std::vector<Collected>& reference() {
  static const std::vector<Collected> ref = run_batched(SpecMethod::kNone);
  return ref;
}

TEST(SpecIdentity, NgramBatchedAloneAndUnderPreemptionEqualOff) {
  LLMSERVE_REQUIRE_MODEL();
  ASSERT_FALSE(reference().empty());
  {
    SCOPED_TRACE("batched");
    EngineStats stats;
    const std::vector<Collected> got = run_batched(SpecMethod::kNgram, &stats);
    ASSERT_EQ(got.size(), reference().size());
    for (size_t i = 0; i < got.size(); ++i)
      expect_same(got[i], reference()[i], "request " + std::to_string(i));
    // Speculation really ran, with some drafts accepted and some rejected.
    EXPECT_GT(stats.spec_num_drafts, 100u);
    EXPECT_GT(stats.spec_num_accepted_tokens, 0u);
    EXPECT_LT(stats.spec_num_accepted_tokens, stats.spec_num_draft_tokens);
    uint64_t by_position = 0;
    for (uint64_t n : stats.spec_accepted_per_position) by_position += n;
    EXPECT_EQ(by_position, stats.spec_num_accepted_tokens);
  }
  {
    SCOPED_TRACE("alone");
    auto engine = make_engine(spec_options(SpecMethod::kNgram));
    ASSERT_NE(engine, nullptr);
    std::vector<GenerateRequest> reqs = all_requests(engine->tokenizer());
    // The grounded prompts (the last 8 of each setting), greedy and one seeded setting.
    const size_t per_setting = reqs.size() / identity_settings().size();
    for (size_t setting : {size_t{0}, size_t{3}}) {
      for (size_t i = per_setting - 8; i < per_setting; ++i) {
        const size_t k = setting * per_setting + i;
        expect_same(run_alone(*engine, reqs[k]), reference()[k], "request " + std::to_string(k));
      }
    }
    expect_no_leak(*engine);
  }
  {
    SCOPED_TRACE("under preemption");
    EngineOptions o = spec_options(SpecMethod::kNgram);
    o.kv_cache_bytes = 14ull << 20;  // 39 blocks of 16 tokens: too few for 16 requests at once
    auto engine = make_engine(o);
    ASSERT_NE(engine, nullptr);
    std::vector<GenerateRequest> reqs = all_requests(engine->tokenizer());
    const size_t per_setting = reqs.size() / identity_settings().size();
    std::vector<GenerateRequest> subset;
    std::vector<size_t> index;
    for (size_t k = 3 * per_setting; k < 4 * per_setting; ++k) {  // T = 0.8, seed 11
      subset.push_back(reqs[k]);
      index.push_back(k);
    }
    const std::vector<Collected> got = run_together(*engine, std::move(subset));
    for (size_t i = 0; i < got.size(); ++i) {
      expect_same(got[i], reference()[index[i]], "request " + std::to_string(index[i]));
    }
    EXPECT_GT(engine->stats().preemptions, 0u);
    expect_no_leak(*engine);
  }
}

TEST(SpecIdentity, DraftModelBatchedEqualsOff) {
  LLMSERVE_REQUIRE_MODEL();
  EngineStats stats;
  const std::vector<Collected> got = run_batched(SpecMethod::kDraft, &stats);
  ASSERT_EQ(got.size(), reference().size());
  for (size_t i = 0; i < got.size(); ++i)
    expect_same(got[i], reference()[i], "request " + std::to_string(i));
  EXPECT_GT(stats.spec_num_drafts, 100u);
  EXPECT_GT(stats.spec_num_accepted_tokens, 0u);
}

}  // namespace
}  // namespace llmserve::testing
