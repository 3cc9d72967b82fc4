// One request's life through the engine on the real model: validation errors, max_tokens, stop
// strings, n = 2, logprobs, timeouts, and refusing work once stopped.
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/unit/engine/engine_test_util.h"

namespace llmserve::testing {
namespace {

class EngineRequests : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (test_model() != nullptr) engine_ = make_engine(small_options()).release();
  }
  static void TearDownTestSuite() {
    delete engine_;
    engine_ = nullptr;
  }
  void SetUp() override {
    LLMSERVE_REQUIRE_MODEL();
    ASSERT_NE(engine_, nullptr);
    prompt_ = engine_->tokenizer().encode("Once upon a time, in a small village by the sea,", true,
                                          false);
  }
  void TearDown() override {
    if (engine_ != nullptr && !IsSkipped()) expect_no_leak(*engine_);
  }

  static Engine* engine_;
  std::vector<int32_t> prompt_;
};
Engine* EngineRequests::engine_ = nullptr;

TEST_F(EngineRequests, RejectsBadRequests) {
  auto empty = engine_->submit(make_request({}, 4));
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
  const auto vocab = static_cast<int32_t>(engine_->model_config().vocab_size);
  auto bad_id = engine_->submit(make_request({1, vocab}, 4));
  EXPECT_EQ(bad_id.status().code(), StatusCode::kInvalidArgument);
  auto too_long = engine_->submit(make_request(prompt_, engine_->max_model_len()));
  EXPECT_EQ(too_long.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(too_long.status().message().find(std::to_string(engine_->max_model_len())),
            std::string::npos);
  EXPECT_NE(too_long.status().message().find(
                std::to_string(prompt_.size() + static_cast<size_t>(engine_->max_model_len()))),
            std::string::npos);
  GenerateRequest bad_params = make_request(prompt_, 4);
  bad_params.params.top_p = 0.0f;
  EXPECT_EQ(engine_->submit(bad_params).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(EngineRequests, MaxTokensAndUsage) {
  GenerateRequest r = make_request(prompt_, 5);
  r.params.ignore_eos = true;
  const Collected c = run_alone(*engine_, r);
  ASSERT_EQ(c.samples.size(), 1u);
  EXPECT_EQ(c.samples[0].token_ids.size(), 5u);
  EXPECT_EQ(c.samples[0].finish, FinishReason::kLength);
  EXPECT_EQ(c.usage.prompt_tokens, static_cast<int32_t>(prompt_.size()));
  EXPECT_EQ(c.usage.completion_tokens, 5);
  EXPECT_EQ(c.samples[0].text, engine_->tokenizer().decode(c.samples[0].token_ids, true));

  const Collected none = run_alone(*engine_, make_request(prompt_, 0));
  EXPECT_TRUE(none.samples[0].token_ids.empty());
  EXPECT_EQ(none.samples[0].finish, FinishReason::kLength);
}

TEST_F(EngineRequests, StopStringCutsTheText) {
  GenerateRequest r = make_request(prompt_, 24);
  r.params.ignore_eos = true;
  const Collected full = run_alone(*engine_, r);
  const std::string& text = full.samples[0].text;
  ASSERT_GT(text.size(), 20u);
  // A stop string taken from the middle of the unconstrained output.
  const std::string stop = text.substr(text.size() / 2, 4);
  r.params.stop = {stop};
  const Collected cut = run_alone(*engine_, r);
  EXPECT_EQ(cut.samples[0].finish, FinishReason::kStop);
  EXPECT_EQ(cut.samples[0].stop_reason, stop);
  EXPECT_EQ(cut.samples[0].text, text.substr(0, text.find(stop)));
  EXPECT_LT(cut.samples[0].token_ids.size(), full.samples[0].token_ids.size());
  EXPECT_TRUE(std::equal(cut.samples[0].token_ids.begin(), cut.samples[0].token_ids.end(),
                         full.samples[0].token_ids.begin()));
}

TEST_F(EngineRequests, StopTokenIdEndsWithStop) {
  GenerateRequest r = make_request(prompt_, 12);
  r.params.ignore_eos = true;
  const Collected full = run_alone(*engine_, r);
  ASSERT_GE(full.samples[0].token_ids.size(), 4u);
  const int32_t stop_id = full.samples[0].token_ids[3];
  r.params.stop_token_ids = {stop_id};
  const Collected cut = run_alone(*engine_, r);
  EXPECT_EQ(cut.samples[0].finish, FinishReason::kStop);
  EXPECT_EQ(cut.samples[0].stop_reason, std::to_string(stop_id));
  EXPECT_EQ(cut.samples[0].token_ids.back(), stop_id);
  EXPECT_LE(cut.samples[0].token_ids.size(), 4u);
}

TEST_F(EngineRequests, TwoSamplesShareOneStream) {
  GenerateRequest r = make_request(prompt_, 6, 0.8f);
  r.params.n = 2;
  r.params.seed = 7;
  r.params.ignore_eos = true;
  const Collected c = run_alone(*engine_, r);
  ASSERT_TRUE(c.index_ok);
  ASSERT_EQ(c.samples.size(), 2u);
  for (const auto& s : c.samples) {
    EXPECT_EQ(s.token_ids.size(), 6u);
    EXPECT_EQ(s.finish, FinishReason::kLength);
  }
  EXPECT_EQ(c.usage.completion_tokens, 12);
  EXPECT_EQ(c.usage.prompt_tokens, static_cast<int32_t>(prompt_.size()));
  // The same seed gives the same two samples again.
  const Collected again = run_alone(*engine_, r);
  EXPECT_EQ(again.samples[0].token_ids, c.samples[0].token_ids);
  EXPECT_EQ(again.samples[1].token_ids, c.samples[1].token_ids);
}

TEST_F(EngineRequests, LogprobsHaveTheRequestedShape) {
  GenerateRequest r = make_request(prompt_, 4);
  r.params.logprobs = 3;
  r.params.ignore_eos = true;
  const Collected c = run_alone(*engine_, r);
  const auto& s = c.samples[0];
  ASSERT_EQ(s.logprobs.size(), s.token_ids.size());
  for (size_t i = 0; i < s.logprobs.size(); ++i) {
    const TokenLogprob& lp = s.logprobs[i];
    EXPECT_EQ(lp.token_id, s.token_ids[i]);
    EXPECT_LE(lp.logprob, 0.0f);
    ASSERT_EQ(lp.top.size(), 3u);
    EXPECT_EQ(lp.top[0].token_id, lp.token_id);  // greedy picks the most likely
    EXPECT_FLOAT_EQ(lp.top[0].logprob, lp.logprob);
    EXPECT_GE(lp.top[0].logprob, lp.top[1].logprob);
    EXPECT_GE(lp.top[1].logprob, lp.top[2].logprob);
  }
  r.params.logprobs = -1;
  EXPECT_TRUE(run_alone(*engine_, r).samples[0].logprobs.empty());
}

TEST_F(EngineRequests, DeadlineFinishesWithTimeout) {
  GenerateRequest past = make_request(prompt_, 8);
  past.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  const Collected p = run_alone(*engine_, past);
  EXPECT_EQ(p.samples[0].finish, FinishReason::kTimeout);
  EXPECT_TRUE(p.samples[0].token_ids.empty());

  GenerateRequest soon = make_request(prompt_, 900);
  soon.params.ignore_eos = true;
  soon.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
  const Collected s = run_alone(*engine_, soon);
  EXPECT_EQ(s.samples[0].finish, FinishReason::kTimeout);
  EXPECT_LT(s.usage.completion_tokens, 900);
  EXPECT_EQ(static_cast<int32_t>(s.samples[0].token_ids.size()), s.usage.completion_tokens);
}

TEST(EngineLifecycle, StopAcceptingThenShutdown) {
  LLMSERVE_REQUIRE_MODEL();
  auto engine = make_engine(small_options());
  ASSERT_NE(engine, nullptr);
  const auto prompt = engine->tokenizer().encode("Hello there", true, false);
  GenerateRequest r = make_request(prompt, 400);
  r.params.ignore_eos = true;
  auto running = engine->submit(r);
  ASSERT_TRUE(running.is_ok());
  ASSERT_TRUE((*running)->next(std::chrono::seconds(60)).has_value());
  engine->stop_accepting();
  EXPECT_EQ(engine->submit(r).status().code(), StatusCode::kUnavailable);
  engine->shutdown();
  const Collected c = collect(**running);
  EXPECT_EQ(c.samples[0].finish, FinishReason::kAbort);
  EXPECT_TRUE((*running)->finished());
  EXPECT_GE(engine->stats().steps, 1u);
}

}  // namespace
}  // namespace llmserve::testing
