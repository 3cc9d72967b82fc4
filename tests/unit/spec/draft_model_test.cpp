// The draft-model proposer's plumbing: the default model as its own draft (every greedy draft is
// accepted), a tiny random draft with the same vocabulary (almost every draft rejected: rollback),
// no leaked blocks in either cache, and a draft with another vocabulary refused at start-up.
#include <gtest/gtest.h>

#include <filesystem>

#include "engine/tokenizer/load_tokenizer.h"
#include "tests/unit/spec/spec_test_util.h"
#include "tests/unit/spec/tiny_draft.h"

namespace llmserve::testing {
namespace {

constexpr int32_t kDraftTokens = 24;

EngineOptions draft_options(const std::string& draft) {
  EngineOptions o = small_options();
  o.max_num_seqs = 16;
  o.max_num_batched_tokens = 64;
  o.speculative.method = SpecMethod::kDraft;
  o.speculative.num_tokens = 4;
  o.speculative.draft_model = draft;
  o.speculative.max_running_requests = 64;
  o.speculative.draft_token_cost = 0;  // draft every step: the most checks to verify
  return o;
}

std::vector<GenerateRequest> requests(const Tokenizer& tok, const Setting& s) {
  std::vector<GenerateRequest> out;
  for (const auto& p : grounded_prompts(tok)) out.push_back(spec_request(p, s, kDraftTokens));
  const auto refs = reference_prompts();
  for (size_t i = 0; i < refs.size(); i += 3) out.push_back(spec_request(refs[i], s, kDraftTokens));
  return out;
}

std::vector<Collected> run(const EngineOptions& o, const Setting& s, EngineStats* stats) {
  auto engine = make_engine(o);
  if (engine == nullptr) return {};
  std::vector<Collected> got = run_together(*engine, requests(engine->tokenizer(), s));
  expect_no_leak(*engine);
  *stats = engine->stats();
  return got;
}

std::string temp_dir(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("llmserve-" + name + "-" + std::to_string(::getpid())))
      .string();
}

TEST(DraftModel, SelfDraftAcceptsEveryGreedyDraft) {
  LLMSERVE_REQUIRE_MODEL();
  EngineStats off_stats, on_stats;
  EngineOptions off = small_options();
  off.max_num_seqs = 16;
  off.max_num_batched_tokens = 64;
  const auto want = run(off, {0.0f, 0}, &off_stats);
  const auto got = run(draft_options(test_model()), {0.0f, 0}, &on_stats);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].samples[0].token_ids, want[i].samples[0].token_ids) << i;
  }
  EXPECT_GT(on_stats.spec_num_draft_tokens, 100u);
  EXPECT_EQ(on_stats.spec_num_accepted_tokens, on_stats.spec_num_draft_tokens);
  EXPECT_EQ(on_stats.spec_draft_blocks_held, 0);
  // Most tokens came from accepted drafts (each full check makes 4 of its 5 tokens).
  EXPECT_GT(on_stats.spec_num_accepted_tokens * 2, on_stats.generation_tokens)
      << on_stats.spec_num_accepted_tokens << " of " << on_stats.generation_tokens;
}

TEST(DraftModel, TinyRandomDraftIsRejectedAndRolledBack) {
  LLMSERVE_REQUIRE_MODEL();
  auto spec = load_tokenizer_spec(test_model());
  ASSERT_TRUE(spec.is_ok()) << spec.status().to_string();
  const std::string dir = temp_dir("tiny-draft");
  write_tiny_draft(dir, *spec);
  for (const Setting& s : {Setting{0.0f, 0}, Setting{0.8f, 11}}) {
    EngineStats off_stats, on_stats;
    EngineOptions off = small_options();
    off.max_num_seqs = 16;
    off.max_num_batched_tokens = 64;
    const auto want = run(off, s, &off_stats);
    const auto got = run(draft_options(dir), s, &on_stats);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].samples[0].token_ids, want[i].samples[0].token_ids) << i;
      EXPECT_EQ(got[i].samples[0].text, want[i].samples[0].text) << i;
    }
    EXPECT_GT(on_stats.spec_num_draft_tokens, 100u);
    EXPECT_LT(on_stats.spec_num_accepted_tokens * 10, on_stats.spec_num_draft_tokens);
    EXPECT_EQ(on_stats.spec_draft_blocks_held, 0);
  }
  std::filesystem::remove_all(dir);
}

TEST(DraftModel, DraftOfAnotherVocabularyIsRefused) {
  LLMSERVE_REQUIRE_MODEL();
  auto spec = load_tokenizer_spec(test_model());
  ASSERT_TRUE(spec.is_ok());
  const std::string dir = temp_dir("other-vocab");
  write_tiny_draft(dir, *spec, /*changed_token=*/1000);
  auto engine = Engine::create(draft_options(dir));
  ASSERT_FALSE(engine.is_ok());
  EXPECT_EQ(engine.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(engine.status().message().find("token id 1000"), std::string::npos)
      << engine.status().to_string();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace llmserve::testing
