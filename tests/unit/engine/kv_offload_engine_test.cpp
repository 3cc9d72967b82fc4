// The tiers through the whole engine on the real model: a conversation whose pages the pool
// evicted, or that a restarted daemon never computed, comes back from disk and gives the same
// greedy tokens as an engine without tiers (f16 and int8 pages); a corrupted page is detected,
// deleted and recomputed; a tenant's salt keeps another tenant's pages out; preempted requests
// resume from the host tier instead of recomputing, with the tokens of a run never preempted.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "engine/grammar/grammar_compiler.h"
#include "engine/kv_cache/block_hash.h"
#include "tests/unit/engine/engine_test_util.h"

namespace llmserve::testing {
namespace {

namespace fs = std::filesystem;

struct TierDir {
  fs::path path =
      fs::temp_directory_path() / ("kv_offload_engine_" + std::to_string(::getpid()) + "_" +
                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
  TierDir() { fs::remove_all(path); }
  ~TierDir() { fs::remove_all(path); }
};

// A pool of 16 blocks (256 tokens) per dtype: two other conversations evict the first one.
EngineOptions pressure_options(const std::string& dtype) {
  EngineOptions o = small_options();
  o.kv_cache_dtype = dtype;
  const uint64_t per_token = dtype == "int8" ? 11880 : 23040;  // SmolLM2-135M (docs/KV_CACHE.md)
  o.kv_cache_bytes = per_token * 16 * 17;
  o.max_model_len = 256;
  o.max_num_batched_tokens = 64;
  return o;
}

EngineOptions with_tiers(EngineOptions o, const fs::path& dir) {
  o.kv_offload.disk_bytes = 256ll << 20;
  o.kv_offload.disk_path = dir.string();
  return o;
}

// A long first turn, and a second turn that extends it.
struct Conversation {
  std::vector<int32_t> turn1, turn2;
};

Conversation conversation(const Tokenizer& tok, int topic) {
  const auto prompts = distinct_prompts(tok, 16);
  Conversation c;
  for (int k = 0; k < 8; ++k) {
    const auto& p = prompts[static_cast<size_t>((topic + k) % 16)];
    c.turn1.insert(c.turn1.end(), p.begin(), p.end());
  }
  c.turn1.resize(std::min<size_t>(c.turn1.size(), 150));
  c.turn2 = c.turn1;
  const auto& more = prompts[static_cast<size_t>((topic + 7) % 16)];
  c.turn2.insert(c.turn2.end(), more.begin(), more.end());
  return c;
}

struct Outputs {
  std::vector<int32_t> resumed;
  int32_t cached_tokens = 0;
};

// Runs turn 1 of conversation 0, then conversations 1 and 2 (evicting it from the pool), then
// turn 2 of conversation 0.
Outputs run_pressure(Engine& e) {
  const Tokenizer& tok = e.tokenizer();
  const Conversation c0 = conversation(tok, 0);
  run_alone(e, make_request(c0.turn1, 8));
  run_alone(e, make_request(conversation(tok, 1).turn1, 8));
  run_alone(e, make_request(conversation(tok, 2).turn1, 8));
  const Collected r = run_alone(e, make_request(c0.turn2, 12));
  expect_no_leak(e);
  return {r.samples.at(0).token_ids, r.usage.cached_prompt_tokens};
}

std::vector<int32_t> baseline(const std::string& dtype) {
  auto e = make_engine(pressure_options(dtype));
  if (e == nullptr) return {};
  const Conversation c0 = conversation(e->tokenizer(), 0);
  return run_alone(*e, make_request(c0.turn2, 12)).samples.at(0).token_ids;
}

void check_eviction_and_restart(const std::string& dtype) {
  const std::vector<int32_t> expected = baseline(dtype);
  ASSERT_EQ(expected.size(), 12u);
  TierDir dir;
  {
    auto e = make_engine(with_tiers(pressure_options(dtype), dir.path));
    ASSERT_NE(e, nullptr);
    const Outputs out = run_pressure(*e);
    EXPECT_EQ(out.resumed, expected) << dtype << ": resumed after eviction";
    const EngineStats s = e->stats();
    EXPECT_GE(s.kv_tier_disk_hits, 9u) << "the first turn's 9 blocks come back from disk";
    EXPECT_GE(s.kv_tier_blocks_restored, 9u);
    EXPECT_GE(out.cached_tokens, 144) << "the resumed turn reuses the restored pages";
    EXPECT_GT(s.kv_tier_disk_bytes, 0);
    EXPECT_EQ(s.kv_tier_pages_corrupt, 0u);
  }
  // A restarted daemon: the pool is empty, the disk tier is not.
  auto e = make_engine(with_tiers(pressure_options(dtype), dir.path));
  ASSERT_NE(e, nullptr);
  EXPECT_GT(e->stats().kv_tier_pages_loaded, 0u);
  const Conversation c0 = conversation(e->tokenizer(), 0);
  const Collected r = run_alone(*e, make_request(c0.turn2, 12));
  EXPECT_EQ(r.samples.at(0).token_ids, expected) << dtype << ": resumed after a restart";
  EXPECT_GE(r.usage.cached_prompt_tokens, 144);
  expect_no_leak(*e);
}

TEST(KvOffloadEngine, F16PagesComeBackAfterEvictionAndRestartWithTheSameTokens) {
  LLMSERVE_REQUIRE_MODEL();
  check_eviction_and_restart("f16");
}

TEST(KvOffloadEngine, Int8PagesComeBackAfterEvictionAndRestartWithTheSameTokens) {
  LLMSERVE_REQUIRE_MODEL();
  check_eviction_and_restart("int8");
}

TEST(KvOffloadEngine, ACorruptedPageIsDetectedAndRecomputed) {
  LLMSERVE_REQUIRE_MODEL();
  const std::vector<int32_t> expected = baseline("f16");
  TierDir dir;
  std::vector<int32_t> turn1;
  {
    auto e = make_engine(with_tiers(pressure_options("f16"), dir.path));
    ASSERT_NE(e, nullptr);
    turn1 = conversation(e->tokenizer(), 0).turn1;
    run_alone(*e, make_request(turn1, 8));
    expect_no_leak(*e);  // settles the writes
  }
  // Flip one byte in the middle of the page of the conversation's third block.
  BlockHash h{};
  for (int b = 0; b < 3; ++b) {
    h = hash_block_tokens(h, std::span(turn1).subspan(static_cast<size_t>(b) * 16, 16));
  }
  char name[64];
  std::snprintf(name, sizeof(name), "%016llx%016llx.kvp", static_cast<unsigned long long>(h.hi),
                static_cast<unsigned long long>(h.lo));
  const fs::path page = dir.path / name;
  ASSERT_TRUE(fs::exists(page));
  {
    std::fstream f(page, std::ios::in | std::ios::out | std::ios::binary);
    const auto size = static_cast<std::streamoff>(fs::file_size(page));
    f.seekg(size / 2);
    const char c = static_cast<char>(f.get());
    f.seekp(size / 2);
    f.put(static_cast<char>(c ^ 0x10));
  }
  auto e = make_engine(with_tiers(pressure_options("f16"), dir.path));
  ASSERT_NE(e, nullptr);
  const Collected r = run_alone(*e, make_request(conversation(e->tokenizer(), 0).turn2, 12));
  EXPECT_EQ(r.samples.at(0).token_ids, expected);
  const EngineStats s = e->stats();
  EXPECT_EQ(s.kv_tier_pages_corrupt, 1u);
  EXPECT_EQ(s.kv_tier_disk_hits, 2u) << "the two blocks before the corrupted one";
  EXPECT_EQ(r.usage.cached_prompt_tokens, 32);
  expect_no_leak(*e);  // settles the writes: the recomputed block was written again, good
  e.reset();
  auto again = make_engine(with_tiers(pressure_options("f16"), dir.path));
  ASSERT_NE(again, nullptr);
  const Collected r2 =
      run_alone(*again, make_request(conversation(again->tokenizer(), 0).turn2, 12));
  EXPECT_EQ(r2.samples.at(0).token_ids, expected);
  EXPECT_GE(r2.usage.cached_prompt_tokens, 144);
  EXPECT_EQ(again->stats().kv_tier_pages_corrupt, 0u);
  expect_no_leak(*again);
}

TEST(KvOffloadEngine, AnotherTenantsSaltRestoresNothing) {
  LLMSERVE_REQUIRE_MODEL();
  TierDir dir;
  std::vector<int32_t> expected;
  std::vector<int32_t> turn2;
  {
    auto e = make_engine(with_tiers(pressure_options("f16"), dir.path));
    ASSERT_NE(e, nullptr);
    const Conversation c0 = conversation(e->tokenizer(), 0);
    turn2 = c0.turn2;
    GenerateRequest a = make_request(c0.turn1, 8);
    a.cache_salt = "tenant-a";
    run_alone(*e, std::move(a));
    expect_no_leak(*e);
  }
  auto e = make_engine(with_tiers(pressure_options("f16"), dir.path));
  ASSERT_NE(e, nullptr);
  GenerateRequest b = make_request(turn2, 12);
  b.cache_salt = "tenant-b";
  const Collected rb = run_alone(*e, std::move(b));
  EXPECT_EQ(rb.usage.cached_prompt_tokens, 0);
  EXPECT_EQ(e->stats().kv_tier_disk_hits, 0u);
  GenerateRequest a = make_request(turn2, 12);
  a.cache_salt = "tenant-a";
  const Collected ra = run_alone(*e, std::move(a));
  EXPECT_GE(ra.usage.cached_prompt_tokens, 144);
  EXPECT_EQ(ra.samples.at(0).token_ids, rb.samples.at(0).token_ids);
  expect_no_leak(*e);
}

TEST(KvOffloadEngine, PreemptionUnderTheTiersGivesTheSameTokens) {
  LLMSERVE_REQUIRE_MODEL();
  // Three conversations at once in a 16-block pool: they preempt one another, while their blocks
  // are pinned for copying and written behind; then each resumes.
  auto run = [](Engine& e) {
    std::vector<GenerateRequest> first, second;
    for (int k = 0; k < 3; ++k) {
      const Conversation c = conversation(e.tokenizer(), k);
      first.push_back(
          make_request(std::vector<int32_t>(c.turn1.begin(), c.turn1.begin() + 90), 16));
      second.push_back(make_request(c.turn2, 8));
    }
    std::vector<std::vector<int32_t>> out;
    for (auto& c : run_together(e, std::move(first))) out.push_back(c.samples.at(0).token_ids);
    for (auto& c : run_together(e, std::move(second))) out.push_back(c.samples.at(0).token_ids);
    expect_no_leak(e);
    return out;
  };
  auto plain = make_engine(pressure_options("f16"));
  ASSERT_NE(plain, nullptr);
  const auto expected = run(*plain);
  const uint64_t plain_preemptions = plain->stats().preemptions;
  TierDir dir;
  auto tiered = make_engine(with_tiers(pressure_options("f16"), dir.path));
  ASSERT_NE(tiered, nullptr);
  EXPECT_EQ(run(*tiered), expected);
  EXPECT_GT(plain_preemptions + tiered->stats().preemptions, 0u) << "the pool must be too small";
}

TEST(KvOffloadEngine, PreemptedRequestsResumeFromATierWithTheTokensOfARunNeverPreempted) {
  LLMSERVE_REQUIRE_MODEL();
  // Two requests that each grow to 9 blocks (70 prompt + 64 generated tokens) in an 11-block
  // pool: one is preempted, and while the other grows the pool evicts the preempted one's cached
  // blocks (a chain's end first); when it comes back they are read from the host tier.
  auto requests = [](const Tokenizer& tok) {
    std::vector<GenerateRequest> r;
    for (int k = 0; k < 2; ++k) {
      const Conversation c = conversation(tok, k);
      r.push_back(make_request(std::vector<int32_t>(c.turn1.begin(), c.turn1.begin() + 70), 64));
      r.back().params.ignore_eos = true;
    }
    return r;
  };
  auto tokens_of = [](const std::vector<Collected>& cs) {
    std::vector<std::vector<int32_t>> out;
    for (const Collected& c : cs) out.push_back(c.samples.at(0).token_ids);
    return out;
  };
  // The oracle: a pool large enough that nobody is preempted.
  auto large = make_engine(small_options());
  ASSERT_NE(large, nullptr);
  const auto expected = tokens_of(run_together(*large, requests(large->tokenizer())));
  EXPECT_EQ(large->stats().preemptions, 0u);

  EngineOptions o = pressure_options("f16");
  o.kv_cache_bytes = 23040ull * 16 * 12;
  TierDir dir;
  o = with_tiers(o, dir.path);
  o.kv_offload.host_bytes = 64ll << 20;
  auto tiered = make_engine(o);
  ASSERT_NE(tiered, nullptr);
  EXPECT_EQ(tokens_of(run_together(*tiered, requests(tiered->tokenizer()))), expected);
  const EngineStats s = tiered->stats();
  std::cout << "[preemption] " << s.preemptions << " preemptions, " << s.kv_tier_preempted_restores
            << " resumed from a tier, " << s.kv_tier_blocks_restored << " pages restored ("
            << s.kv_tier_host_hits << " from host memory)\n";
  EXPECT_GT(s.preemptions, 0u);
  EXPECT_GT(s.kv_tier_preempted_restores, 0u);
  EXPECT_GT(s.kv_tier_host_hits, 0u);
  expect_no_leak(*tiered);
}

TEST(KvOffloadEngine, SpeculationAndGrammarsWriteOnlyAcceptedTokensToTheTiers) {
  LLMSERVE_REQUIRE_MODEL();
  // Turn 1 generates 40 tokens under a grammar with n-gram speculation, so the blocks that fill
  // during decode hold KV written by verify steps (rejected drafts' slots overwritten). Turn 2
  // continues from turn 1's answer: after eviction its pages, decode blocks included, come back
  // from disk, and it gives the tokens an engine that kept them in its pool gives.
  auto spec_options = [](EngineOptions o) {
    o.speculative.method = SpecMethod::kNgram;
    o.speculative.num_tokens = 4;
    o.speculative.max_running_requests = 64;
    o.speculative.draft_token_cost = 0;
    return o;
  };
  struct Turns {
    std::vector<int32_t> first, second;
    int32_t drafts = 0, cached = 0;
  };
  auto run = [](Engine& e, bool evict) {
    const Tokenizer& tok = e.tokenizer();
    const Conversation c0 = conversation(tok, 0);
    GrammarSpec spec;
    spec.kind = GrammarKind::kRegex;
    spec.text = "[a-z ,.]{400,500}";  // cannot end within 40 tokens
    auto grammar = e.grammar_compiler().compile_and_wait(
        spec, std::chrono::steady_clock::now() + std::chrono::seconds(120));
    EXPECT_TRUE(grammar.is_ok());
    Turns t;
    if (!grammar.is_ok()) return t;
    GenerateRequest r1 = make_request(c0.turn1, 40);
    r1.params.ignore_eos = true;
    r1.grammar = *grammar;
    const Collected first = run_alone(e, std::move(r1));
    t.first = first.samples.at(0).token_ids;
    t.drafts = first.usage.draft_tokens;
    if (evict) {
      run_alone(e, make_request(conversation(tok, 1).turn1, 8));
      run_alone(e, make_request(conversation(tok, 2).turn1, 8));
    }
    std::vector<int32_t> turn2 = c0.turn1;
    turn2.insert(turn2.end(), t.first.begin(), t.first.end());
    const auto more = distinct_prompts(tok, 16).at(9);
    turn2.insert(turn2.end(), more.begin(), more.begin() + std::min<size_t>(more.size(), 20));
    const Collected second = run_alone(e, make_request(turn2, 12));
    t.second = second.samples.at(0).token_ids;
    t.cached = second.usage.cached_prompt_tokens;
    expect_no_leak(e);
    return t;
  };
  EngineOptions big = spec_options(small_options());
  big.max_model_len = 256;
  auto pool_only = make_engine(big);
  ASSERT_NE(pool_only, nullptr);
  const Turns expected = run(*pool_only, false);
  ASSERT_EQ(expected.first.size(), 40u);
  EXPECT_GT(expected.drafts, 0) << "speculation must have run in turn 1";

  TierDir dir;
  auto tiered = make_engine(with_tiers(spec_options(pressure_options("f16")), dir.path));
  ASSERT_NE(tiered, nullptr);
  const Turns got = run(*tiered, true);
  EXPECT_EQ(got.first, expected.first);
  EXPECT_EQ(got.second, expected.second);
  const size_t turn1_blocks = (conversation(tiered->tokenizer(), 0).turn1.size() + 40) / 16;
  EXPECT_GE(got.cached, static_cast<int32_t>(turn1_blocks * 16))
      << "turn 1's blocks, the decoded ones too, come back";
  EXPECT_GE(tiered->stats().kv_tier_disk_hits, turn1_blocks);
}

}  // namespace
}  // namespace llmserve::testing
