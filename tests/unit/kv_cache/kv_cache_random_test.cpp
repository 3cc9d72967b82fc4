// Randomized allocate / compute / hit / free sequences against a shadow of what each block holds:
// every prefix hit must point at blocks whose written tokens equal the request's tokens, and a
// request only ever writes into blocks it holds alone.
#include <memory>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "engine/kv_cache/kv_cache_manager.h"

namespace llmserve {
namespace {

constexpr int32_t kBlockSize = 4;
constexpr int32_t kNumBlocks = 65;

class Simulation {
 public:
  explicit Simulation(uint32_t seed)
      : rng_(seed),
        kv_(kNumBlocks, kBlockSize),
        shadow_(kNumBlocks, std::vector<int32_t>(kBlockSize, -1)) {
    for (int i = 0; i < 4; ++i) system_prompts_.push_back(random_tokens(uniform(0, 20)));
  }

  void run(int num_ops) {
    for (int op = 0; op < num_ops; ++op) {
      const int kind = uniform(0, 9);
      if (kind <= 2 || live_.empty()) {
        admit(new_prompt());
      } else if (kind <= 6) {
        advance(*live_[uniform(0, static_cast<int>(live_.size()) - 1)]);
      } else if (kind == 7) {
        const Request& src = *live_[uniform(0, static_cast<int>(live_.size()) - 1)];
        std::vector<int32_t> prompt;
        for (int32_t p = 0; p < src.num_computed_tokens; ++p) prompt.push_back(src.token_at(p));
        const auto tail = random_tokens(uniform(1, 6));
        prompt.insert(prompt.end(), tail.begin(), tail.end());
        admit(std::move(prompt));
      } else {
        release(uniform(0, static_cast<int>(live_.size()) - 1));
      }
      ASSERT_TRUE(kv_.check_invariants(holders()).is_ok())
          << kv_.check_invariants(holders()).to_string();
      if (::testing::Test::HasFatalFailure()) return;
    }
    while (!live_.empty()) release(0);
    ASSERT_TRUE(kv_.check_invariants().is_ok());
    EXPECT_EQ(kv_.num_free_blocks(), kv_.num_usable_blocks());
    for (int32_t id = 1; id < kNumBlocks; ++id) {
      EXPECT_TRUE(kv_.pool().is_free(id));
      EXPECT_EQ(kv_.pool().ref_count(id), 0);
    }
    EXPECT_GT(kv_.prefix_cache_hits(), 0);
    EXPECT_GT(allocation_failures_, 0);
  }

 private:
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  std::vector<int32_t> random_tokens(int n) {
    std::vector<int32_t> t(n);
    for (auto& x : t) x = uniform(0, 7);  // tiny vocabulary: accidental sharing happens too
    return t;
  }
  std::vector<int32_t> new_prompt() {
    std::vector<int32_t> p = system_prompts_[uniform(0, 3)];
    const auto tail = random_tokens(uniform(1, 20));
    p.insert(p.end(), tail.begin(), tail.end());
    return p;
  }
  std::vector<const Request*> holders() const {
    std::vector<const Request*> h;
    for (const auto& r : live_) h.push_back(r.get());
    return h;
  }

  // Writes the K/V "content" of positions [num_computed, num_computed + n) and advances.
  void compute(Request& r, int32_t n) {
    for (int32_t pos = r.num_computed_tokens; pos < r.num_computed_tokens + n; ++pos) {
      const int32_t block = r.kv.block_ids[pos / kBlockSize];
      ASSERT_EQ(kv_.pool().ref_count(block), 1) << "write into a shared block " << block;
      shadow_[block][pos % kBlockSize] = r.token_at(pos);
    }
    r.num_computed_tokens += n;
    kv_.cache_computed_blocks(r);
  }

  void admit(std::vector<int32_t> prompt) {
    auto r = std::make_unique<Request>();
    r->id = next_id_++;
    r->prompt_token_ids = std::move(prompt);
    const CachedPrefix p = kv_.find_cached_prefix(*r);
    ASSERT_LT(p.num_tokens, r->num_tokens());
    for (int32_t pos = 0; pos < p.num_tokens; ++pos) {
      ASSERT_EQ(shadow_[p.block_ids[pos / kBlockSize]][pos % kBlockSize], r->token_at(pos))
          << "prefix hit on a block holding other tokens";
    }
    const int32_t chunk = uniform(1, r->num_tokens() - p.num_tokens);
    if (!kv_.allocate(*r, chunk, p)) {
      ++allocation_failures_;
      ASSERT_TRUE(r->kv.block_ids.empty());
      return;
    }
    r->num_computed_tokens = p.num_tokens;
    compute(*r, chunk);
    live_.push_back(std::move(r));
  }

  void advance(Request& r) {
    int32_t n = r.num_tokens() - r.num_computed_tokens;
    if (n == 0) {  // decode: a new sampled token to compute
      r.output_token_ids.push_back(uniform(0, 7));
      n = 1;
    } else {
      n = uniform(1, n);
    }
    if (!kv_.allocate(r, n)) {
      ++allocation_failures_;
      if (r.num_computed_tokens < r.num_tokens() && n == 1 && !r.output_token_ids.empty()) {
        r.output_token_ids.pop_back();
      }
      return;
    }
    compute(r, n);
  }

  void release(int index) {
    kv_.free(*live_[index]);
    EXPECT_TRUE(live_[index]->kv.block_ids.empty());
    live_.erase(live_.begin() + index);
  }

  std::mt19937 rng_;
  KvCacheManager kv_;
  std::vector<std::vector<int32_t>> shadow_;
  std::vector<std::vector<int32_t>> system_prompts_;
  std::vector<std::unique_ptr<Request>> live_;
  uint64_t next_id_ = 1;
  int allocation_failures_ = 0;
};

TEST(KvCacheRandom, InvariantsAndHitContentHoldOverThousandsOfOperations) {
  for (uint32_t seed : {1u, 2u, 3u, 42u}) {
    SCOPED_TRACE(seed);
    Simulation sim(seed);
    sim.run(4000);
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace llmserve
