// The sliding window end to end through the engine: tests/fixtures/tiny_mistral_sw (Mistral,
// sliding_window 7) with 4-token blocks, so a 42-token request releases the blocks wholly behind
// its window while it decodes. Oracle: transformers' greedy continuation in expected.json.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include <unistd.h>

#include "engine/tokenizer/byte_unicode_map.h"
#include "tests/unit/engine/engine_test_util.h"
#include "tests/unit/hf_tokenizer_json.h"

namespace llmserve {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kVocab = 300;

// The fixture has no tokenizer (its tests feed ids); the engine needs one to load, so the
// model is copied beside a byte-level BPE of the same 300 ids: 3 specials, 256 bytes, 41 merges.
std::string model_dir_with_tokenizer() {
  const fs::path src = fs::path(LLMSERVE_FIXTURES_DIR) / "tiny_mistral_sw";
  const fs::path dir =
      fs::temp_directory_path() / ("llmserve_sw_" + std::to_string(::getpid()) + "_" +
                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::create_directories(dir);
  for (const char* f : {"config.json", "model.safetensors"}) {
    fs::copy_file(src / f, dir / f, fs::copy_options::overwrite_existing);
  }
  TokenizerSpec spec;
  for (const char* special : {"<unk>", "<s>", "</s>"}) {
    spec.tokens.push_back(special);
    spec.token_types.push_back(TokenType::kControl);
  }
  for (int b = 0; b < 256; ++b) spec.tokens.push_back(byte_to_unicode(static_cast<uint8_t>(b)));
  for (char first = 'a'; static_cast<int>(spec.tokens.size()) < kVocab; ++first) {
    for (char second = 'a'; second <= 'z' && static_cast<int>(spec.tokens.size()) < kVocab;
         ++second) {
      spec.merges.emplace_back(std::string(1, first), std::string(1, second));
      spec.tokens.push_back(std::string{first, second});
    }
  }
  spec.token_types.resize(spec.tokens.size(), TokenType::kNormal);
  testing::write_hf_tokenizer_json(dir.string(), spec);
  return dir.string();
}

struct Oracle {
  std::vector<int32_t> prompt, tokens;
};

Oracle read_oracle() {
  std::ifstream in(fs::path(LLMSERVE_FIXTURES_DIR) / "tiny_mistral_sw" / "expected.json");
  const json j = json::parse(in);
  return {j.at("greedy_prompt").get<std::vector<int32_t>>(),
          j.at("greedy_tokens").get<std::vector<int32_t>>()};
}

EngineOptions window_options(const std::string& dir) {
  EngineOptions o;
  o.model_path = dir;
  o.device = "cpu";  // f32 pages, for greedy equality (the CUDA window: unit_cuda's own test)
  o.threads = 1;
  o.kv_cache_dtype = "f32";
  o.kv_cache_bytes = 4ull << 20;
  o.block_size = 4;
  o.max_num_seqs = 8;
  o.max_num_batched_tokens = 16;  // the 12-token prompts prefill in chunks beside decodes
  o.max_model_len = 256;
  o.seed = 7;
  return o;
}

GenerateRequest greedy_request(std::vector<int32_t> prompt, int32_t max_tokens) {
  GenerateRequest r = testing::make_request(std::move(prompt), max_tokens);
  r.params.ignore_eos = true;
  return r;
}

TEST(SlidingWindowEngine, GreedyMatchesTransformersWhileBlocksBehindTheWindowAreReleased) {
  const std::string dir = model_dir_with_tokenizer();
  const Oracle oracle = read_oracle();
  auto engine = testing::make_engine(window_options(dir));
  ASSERT_NE(engine, nullptr);
  ASSERT_EQ(engine->model_config().sliding_window, 7);

  const testing::Collected c = testing::run_alone(
      *engine, greedy_request(oracle.prompt, static_cast<int32_t>(oracle.tokens.size())));
  ASSERT_EQ(c.samples.size(), 1u);
  EXPECT_EQ(c.samples[0].token_ids, oracle.tokens);
  // 42 tokens in 4-token blocks, window 7: at the last step only the 2-3 blocks covering the
  // last 7 positions are needed, so at least 42/4 - 3 = 7 blocks went back early.
  const EngineStats s = engine->stats();
  EXPECT_GE(s.kv_blocks_released_by_window, 7u);
  testing::expect_no_leak(*engine);
  fs::remove_all(dir);
}

TEST(SlidingWindowEngine, BatchedRequestsAndAPrefixHitKeepTheirOutputs) {
  const std::string dir = model_dir_with_tokenizer();
  const Oracle oracle = read_oracle();
  auto engine = testing::make_engine(window_options(dir));
  ASSERT_NE(engine, nullptr);
  const auto n = static_cast<int32_t>(oracle.tokens.size());

  // Alone first: the reference each batched request must reproduce.
  std::vector<std::vector<int32_t>> prompts = {oracle.prompt};
  for (int32_t k = 0; k < 3; ++k) {
    std::vector<int32_t> p;
    for (int32_t i = 0; i < 9 + 7 * k; ++i) p.push_back(3 + (i * 37 + k * 11) % (kVocab - 3));
    prompts.push_back(p);
  }
  std::vector<std::vector<int32_t>> alone;
  for (const auto& p : prompts) {
    alone.push_back(testing::run_alone(*engine, greedy_request(p, n)).samples.at(0).token_ids);
  }
  EXPECT_EQ(alone[0], oracle.tokens);
  const uint64_t released_alone = engine->stats().kv_blocks_released_by_window;

  // Together, and the oracle's prompt twice more (its prompt blocks come from the prefix cache).
  std::vector<GenerateRequest> reqs;
  for (const auto& p : prompts) reqs.push_back(greedy_request(p, n));
  reqs.push_back(greedy_request(oracle.prompt, n));
  reqs.push_back(greedy_request(oracle.prompt, n));
  const auto together = testing::run_together(*engine, std::move(reqs));
  ASSERT_EQ(together.size(), prompts.size() + 2);
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(together[i].samples.at(0).token_ids, alone[i]) << "prompt " << i;
  }
  EXPECT_EQ(together[4].samples.at(0).token_ids, oracle.tokens);
  EXPECT_EQ(together[5].samples.at(0).token_ids, oracle.tokens);
  EXPECT_GT(together[5].usage.cached_prompt_tokens, 0);
  EXPECT_GT(engine->stats().kv_blocks_released_by_window, released_alone);
  testing::expect_no_leak(*engine);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace llmserve
