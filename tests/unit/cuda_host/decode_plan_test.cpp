// The decode-attention plan: splits per request at edge lengths, batch 1 against a batch that
// fills the GPU, capacity bounds, every key of every request covered once in block multiples,
// merge info consistent with the items, the packed array round trip, and a workspace that does
// not depend on the context length.
#include "llmserve/kernels/cuda/decode_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace llmserve {
namespace {

namespace kc = kernels::cuda;

// An H200 serving Llama-3.1-8B: 132 SMs, 8 kv heads, pages of 16 tokens.
kc::DecodePlanConfig h200() {
  kc::DecodePlanConfig c;
  c.block_size = 16;
  c.num_kv_heads = 8;
  c.num_sms = 132;
  c.ctas_per_sm = 4;
  c.min_split = 128;
  return c;
}

kc::DecodePlan plan_of(const std::vector<int32_t>& lens, const kc::DecodePlanConfig& cfg,
                       int capacity) {
  kc::DecodePlan p;
  EXPECT_TRUE(kc::plan_decode(lens.data(), static_cast<int>(lens.size()), cfg, capacity, p));
  return p;
}

kc::DecodePlan plan_of(const std::vector<int32_t>& lens, const kc::DecodePlanConfig& cfg) {
  return plan_of(lens, cfg, kc::decode_plan_capacity(static_cast<int>(lens.size()), cfg));
}

std::vector<kc::DecodeWorkItem> items_of(const kc::DecodePlan& p, int request) {
  std::vector<kc::DecodeWorkItem> out;
  for (const auto& w : p.items) {
    if (w.request == request) out.push_back(w);
  }
  std::sort(out.begin(), out.end(),
            [](const auto& x, const auto& y) { return x.kv_begin < y.kv_begin; });
  return out;
}

// Every invariant the kernels rely on; names the first one broken.
::testing::AssertionResult plan_ok(const std::vector<int32_t>& lens,
                                   const kc::DecodePlanConfig& cfg, int capacity,
                                   const kc::DecodePlan& p) {
  const int B = static_cast<int>(lens.size());
  if (p.items.size() > static_cast<size_t>(capacity)) {
    return ::testing::AssertionFailure() << p.items.size() << " items > capacity " << capacity;
  }
  if (p.merge.size() != static_cast<size_t>(B)) {
    return ::testing::AssertionFailure() << "merge rows " << p.merge.size() << " != " << B;
  }
  for (size_t i = 1; i < p.items.size(); ++i) {
    const auto& x = p.items[i - 1];
    const auto& y = p.items[i];
    if (x.kv_end - x.kv_begin < y.kv_end - y.kv_begin) {
      return ::testing::AssertionFailure() << "item " << i << " is longer than item " << i - 1;
    }
  }
  std::vector<int> slot_uses(static_cast<size_t>(p.num_partials), 0);
  for (const auto& w : p.items) {
    if (w.request < 0 || w.request >= B) {
      return ::testing::AssertionFailure() << "item of request " << w.request;
    }
    if (w.partial_slot >= p.num_partials || w.partial_slot < -1) {
      return ::testing::AssertionFailure() << "slot " << w.partial_slot << " of " << p.num_partials;
    }
    if (w.partial_slot >= 0) ++slot_uses[static_cast<size_t>(w.partial_slot)];
  }
  for (size_t s = 0; s < slot_uses.size(); ++s) {
    if (slot_uses[s] != 1) {
      return ::testing::AssertionFailure() << "slot " << s << " used " << slot_uses[s] << "x";
    }
  }
  for (int b = 0; b < B; ++b) {
    const auto its = items_of(p, b);
    const kc::DecodeMergeInfo m = p.merge[static_cast<size_t>(b)];
    if (m.num_splits != static_cast<int>(its.size())) {
      return ::testing::AssertionFailure() << "request " << b << ": merge says " << m.num_splits
                                           << " splits, " << its.size() << " items";
    }
    if (lens[b] == 0) {
      if (m.num_splits != 0) return ::testing::AssertionFailure() << "padding row " << b;
      continue;
    }
    int32_t at = kc::decode_plan_first_key(lens[b], cfg);
    for (size_t j = 0; j < its.size(); ++j) {
      const auto& w = its[j];
      if (w.kv_begin != at || w.kv_end <= w.kv_begin || w.kv_end > lens[b]) {
        return ::testing::AssertionFailure()
               << "request " << b << " (len " << lens[b] << "): split " << j << " is ["
               << w.kv_begin << ", " << w.kv_end << "), expected to start at " << at;
      }
      if (w.kv_begin % cfg.block_size != 0 ||
          (w.kv_end != lens[b] && w.kv_end % cfg.block_size != 0)) {
        return ::testing::AssertionFailure()
               << "request " << b << ": split [" << w.kv_begin << ", " << w.kv_end
               << ") is not in whole blocks of " << cfg.block_size;
      }
      const int32_t want_slot = its.size() == 1 ? -1 : m.first_slot + static_cast<int32_t>(j);
      if (w.partial_slot != want_slot) {
        return ::testing::AssertionFailure() << "request " << b << " split " << j << ": slot "
                                             << w.partial_slot << ", expected " << want_slot;
      }
      at = w.kv_end;
    }
    if (at != lens[b]) {
      return ::testing::AssertionFailure()
             << "request " << b << ": covered " << at << " of " << lens[b];
    }
    if (its.size() == 1 && m.first_slot != -1) {
      return ::testing::AssertionFailure() << "request " << b << ": one split with a slot";
    }
  }
  return ::testing::AssertionSuccess();
}

TEST(DecodePlan, EdgeLengthsAtBatchOne) {
  const auto cfg = h200();
  struct Case {
    int32_t len;
    int splits;
  };
  // min_split 128: one split up to 255 keys, two from 256; 128k spread over ~one wave of CTAs.
  for (const Case c : {Case{1, 1}, Case{15, 1}, Case{16, 1}, Case{17, 1}, Case{127, 1},
                       Case{128, 1}, Case{255, 1}, Case{256, 2}, Case{131072, 65}}) {
    const std::vector<int32_t> lens = {c.len};
    const auto p = plan_of(lens, cfg);
    EXPECT_TRUE(plan_ok(lens, cfg, kc::decode_plan_capacity(1, cfg), p)) << "len " << c.len;
    EXPECT_EQ(static_cast<int>(p.items.size()), c.splits) << "len " << c.len;
    EXPECT_EQ(p.merge[0].num_splits, c.splits) << "len " << c.len;
  }
}

TEST(DecodePlan, BatchOneFillsTheGpuAndAFullBatchDoesNotSplit) {
  const auto cfg = h200();
  const int64_t wave = int64_t{cfg.num_sms} * cfg.ctas_per_sm;  // 528 CTAs
  for (int32_t len : {32768, 131072}) {
    const std::vector<int32_t> lens = {len};
    const auto p = plan_of(lens, cfg);
    const int64_t ctas = static_cast<int64_t>(p.items.size()) * cfg.num_kv_heads;
    EXPECT_LE(ctas, wave) << "len " << len;
    EXPECT_GE(ctas, wave / 2) << "len " << len;
    for (const auto& w : p.items) {
      EXPECT_LE(w.kv_end - w.kv_begin, 2 * p.split_len + cfg.block_size);
    }
  }
  // 64 x 4k and 256 x 1k bring 512 and 2048 CTAs with one split each.
  for (auto [B, len] : {std::pair{64, 4096}, std::pair{256, 1024}}) {
    const std::vector<int32_t> lens(static_cast<size_t>(B), len);
    const auto p = plan_of(lens, cfg);
    EXPECT_TRUE(plan_ok(lens, cfg, kc::decode_plan_capacity(B, cfg), p));
    EXPECT_EQ(static_cast<int>(p.items.size()), B) << B << " x " << len;
    EXPECT_EQ(p.num_partials, 0) << B << " x " << len;
  }
  // The same 1k request alone is split (min_split keys each).
  const auto one = plan_of({1024}, cfg);
  EXPECT_EQ(one.items.size(), 8u);
  EXPECT_EQ(one.split_len, 128);
}

TEST(DecodePlan, ShortRequestNeverPaysForALongOne) {
  const auto cfg = h200();
  const std::vector<int32_t> lens = {100, 131072, 0, 16};
  const auto p = plan_of(lens, cfg);
  ASSERT_TRUE(plan_ok(lens, cfg, kc::decode_plan_capacity(4, cfg), p));
  const auto short_items = items_of(p, 0);
  ASSERT_EQ(short_items.size(), 1u);
  EXPECT_EQ(short_items[0].kv_end, 100);
  EXPECT_EQ(short_items[0].partial_slot, -1);
  EXPECT_GT(items_of(p, 1).size(), 30u);
  EXPECT_EQ(p.merge[2].num_splits, 0);  // padding
  EXPECT_TRUE(items_of(p, 2).empty());
  // A skewed full batch still splits its one long request into about fair-share pieces.
  std::vector<int32_t> skew(255, 1024);
  skew.push_back(131072);
  const auto q = plan_of(skew, cfg);
  ASSERT_TRUE(plan_ok(skew, cfg, kc::decode_plan_capacity(256, cfg), q));
  EXPECT_GE(items_of(q, 255).size(), 16u);
  for (int b = 0; b < 255; ++b) ASSERT_EQ(items_of(q, b).size(), 1u) << b;
}

TEST(DecodePlan, CapacityBoundsHoldForRandomBatches) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    kc::DecodePlanConfig cfg;
    cfg.block_size = std::vector<int>{1, 16, 32, 48}[trial % 4];
    cfg.num_kv_heads = std::vector<int>{1, 2, 8, 32}[(trial / 4) % 4];
    cfg.num_sms = std::vector<int>{1, 4, 108, 132}[(trial / 16) % 4];
    cfg.ctas_per_sm = 1 + trial % 5;
    cfg.min_split = std::vector<int>{1, 16, 128, 1000}[(trial / 64) % 4];
    const int B = 1 + static_cast<int>(rng() % 300);
    std::vector<int32_t> lens(static_cast<size_t>(B));
    for (auto& l : lens) {
      const int kind = static_cast<int>(rng() % 8);
      l = kind == 0  ? 0
          : kind < 5 ? static_cast<int32_t>(rng() % 2000) + 1
                     : static_cast<int32_t>(rng() % 140000) + 1;
    }
    const int cap = kc::decode_plan_capacity(B, cfg);
    kc::DecodePlan p, huge;
    ASSERT_TRUE(kc::plan_decode(lens.data(), B, cfg, cap, p)) << trial;
    ASSERT_TRUE(plan_ok(lens, cfg, cap, p)) << "trial " << trial;
    // The capacity never constrains the choice: a larger one gives the same plan.
    ASSERT_TRUE(kc::plan_decode(lens.data(), B, cfg, cap * 4, huge));
    ASSERT_EQ(p.items.size(), huge.items.size()) << "trial " << trial;
    ASSERT_EQ(p.split_len, huge.split_len) << "trial " << trial;
    // A tight capacity (one item per non-empty request) is respected and still covers all.
    const int active =
        static_cast<int>(std::count_if(lens.begin(), lens.end(), [](int32_t l) { return l > 0; }));
    kc::DecodePlan tight;
    ASSERT_TRUE(kc::plan_decode(lens.data(), B, cfg, std::max(active, 1), tight));
    ASSERT_TRUE(plan_ok(lens, cfg, std::max(active, 1), tight)) << "trial " << trial;
    const int mid = (active + cap) / 2;
    kc::DecodePlan between;
    ASSERT_TRUE(kc::plan_decode(lens.data(), B, cfg, std::max(mid, 1), between));
    ASSERT_TRUE(plan_ok(lens, cfg, std::max(mid, 1), between)) << "trial " << trial;
  }
}

TEST(DecodePlan, RejectsBadInputWithoutTouchingThePlan) {
  const auto cfg = h200();
  kc::DecodePlan p = plan_of({40}, cfg);
  const auto before = p.items.size();
  const std::vector<int32_t> neg = {5, -1};
  EXPECT_FALSE(kc::plan_decode(neg.data(), 2, cfg, 100, p));
  const std::vector<int32_t> three = {5, 6, 7};
  EXPECT_FALSE(kc::plan_decode(three.data(), 3, cfg, 2, p));  // capacity below the requests
  kc::DecodePlanConfig bad = cfg;
  bad.block_size = 0;
  EXPECT_FALSE(kc::plan_decode(three.data(), 3, bad, 100, p));
  EXPECT_EQ(kc::decode_plan_capacity(3, bad), 0);
  EXPECT_EQ(p.items.size(), before);
  // Padding does not count against the capacity; an all-padding batch has no items.
  const std::vector<int32_t> pad = {0, 0, 9};
  ASSERT_TRUE(kc::plan_decode(pad.data(), 3, cfg, 1, p));
  EXPECT_TRUE(plan_ok(pad, cfg, 1, p));
  const std::vector<int32_t> none = {0, 0};
  ASSERT_TRUE(kc::plan_decode(none.data(), 2, cfg, 0, p));
  EXPECT_TRUE(p.items.empty());
  EXPECT_EQ(p.merge.size(), 2u);
}

TEST(DecodePlan, PackedArrayRoundTrips) {
  const auto cfg = h200();
  const std::vector<int32_t> lens = {3000, 0, 17, 70000, 256};
  const int cap = kc::decode_plan_capacity(8, cfg);  // a bucket of 8 rows
  const auto p = plan_of(lens, cfg, cap);
  std::vector<int32_t> packed(static_cast<size_t>(kc::decode_plan_ints(cap, 8)), -7);
  ASSERT_TRUE(kc::pack_decode_plan(p, cap, 8, packed.data()));
  EXPECT_EQ(packed[0], static_cast<int32_t>(p.items.size()));
  EXPECT_EQ(packed[1], 5);
  EXPECT_EQ(packed[2], cap);
  EXPECT_EQ(packed[3], 8);
  // Item i at the fixed offset the kernels read; unused rows zero.
  const int64_t io = kc::decode_plan_items_offset();
  for (size_t i = 0; i < p.items.size(); ++i) {
    EXPECT_EQ(packed[io + 4 * i + 0], p.items[i].request);
    EXPECT_EQ(packed[io + 4 * i + 1], p.items[i].kv_begin);
    EXPECT_EQ(packed[io + 4 * i + 2], p.items[i].kv_end);
    EXPECT_EQ(packed[io + 4 * i + 3], p.items[i].partial_slot);
  }
  for (int64_t i = io + 4 * static_cast<int64_t>(p.items.size());
       i < kc::decode_plan_merge_offset(cap); ++i) {
    ASSERT_EQ(packed[i], 0) << i;
  }
  const int64_t mo = kc::decode_plan_merge_offset(cap);
  EXPECT_EQ(packed[mo + 2 * 3], p.merge[3].first_slot);
  EXPECT_EQ(packed[mo + 2 * 3 + 1], p.merge[3].num_splits);
  for (int64_t i = mo + 2 * 5; i < static_cast<int64_t>(packed.size()); ++i) {
    ASSERT_EQ(packed[i], 0) << i;
  }

  kc::DecodePlan back;
  ASSERT_TRUE(kc::unpack_decode_plan(packed.data(), static_cast<int64_t>(packed.size()), back));
  ASSERT_EQ(back.items.size(), p.items.size());
  for (size_t i = 0; i < p.items.size(); ++i) {
    EXPECT_EQ(back.items[i].request, p.items[i].request);
    EXPECT_EQ(back.items[i].kv_begin, p.items[i].kv_begin);
    EXPECT_EQ(back.items[i].kv_end, p.items[i].kv_end);
    EXPECT_EQ(back.items[i].partial_slot, p.items[i].partial_slot);
  }
  ASSERT_EQ(back.merge.size(), p.merge.size());
  for (size_t b = 0; b < p.merge.size(); ++b) {
    EXPECT_EQ(back.merge[b].first_slot, p.merge[b].first_slot);
    EXPECT_EQ(back.merge[b].num_splits, p.merge[b].num_splits);
  }
  EXPECT_EQ(back.num_partials, p.num_partials);
  EXPECT_EQ(back.split_len, p.split_len);

  // Too small a layout is refused, and a truncated array does not unpack.
  EXPECT_FALSE(kc::pack_decode_plan(p, static_cast<int>(p.items.size()) - 1, 8, packed.data()));
  EXPECT_FALSE(kc::pack_decode_plan(p, cap, 4, packed.data()));
  EXPECT_FALSE(
      kc::unpack_decode_plan(packed.data(), static_cast<int64_t>(packed.size()) - 1, back));
}

TEST(DecodePlan, WorkspaceDependsOnCapacityNotContext) {
  const auto cfg = h200();
  const int cap = kc::decode_plan_capacity(256, cfg);
  EXPECT_EQ(cap, 256 + 66);
  // Llama-8B at batch 256: 322 slots x 32 heads x 130 floats = 5.4 MB, for any context.
  EXPECT_EQ(kc::decode_workspace_floats(cap, 32, 128), int64_t{cap} * 32 * 130);
  for (int32_t len : {100, 4096, 131072}) {
    const std::vector<int32_t> lens(256, len);
    const auto p = plan_of(lens, cfg, cap);
    EXPECT_LE(p.num_partials, cap);
    const auto one = plan_of({len}, cfg, cap);
    EXPECT_LE(one.num_partials, cap);
  }
  EXPECT_EQ(kc::decode_plan_ints(cap, 256), 8 + 4 * cap + 2 * 256);
}

TEST(DecodePlan, OddBlockSizesSplitInWholeBlocks) {
  for (int bs : {1, 3, 48, 256}) {
    kc::DecodePlanConfig cfg = h200();
    cfg.block_size = bs;
    cfg.min_split = 1;
    const std::vector<int32_t> lens = {1, bs - 1 > 0 ? bs - 1 : 1, bs, bs + 1, 5000, 99999};
    const int cap = kc::decode_plan_capacity(static_cast<int>(lens.size()), cfg);
    const auto p = plan_of(lens, cfg, cap);
    EXPECT_TRUE(plan_ok(lens, cfg, cap, p)) << "block size " << bs;
    EXPECT_EQ(p.split_len % bs, 0) << "block size " << bs;
  }
}

// Sliding windows: each request is planned from the block holding its first key inside the
// window, so no item lies wholly below it, and a long windowed request plans as a short one
// shifted up.
TEST(DecodePlan, SlidingWindowPlansOnlyTheWindow) {
  kc::DecodePlanConfig cfg = h200();
  cfg.sliding_window = 4096;
  EXPECT_EQ(kc::decode_plan_first_key(4096, cfg), 0);
  EXPECT_EQ(kc::decode_plan_first_key(4097, cfg), 0);        // key 1 is the first: block 0
  EXPECT_EQ(kc::decode_plan_first_key(4096 + 17, cfg), 16);  // key 17 is in block 1
  EXPECT_EQ(kc::decode_plan_first_key(32768, cfg), 28672);

  const kc::DecodePlan windowed = plan_of({32768}, cfg);
  EXPECT_TRUE(plan_ok({32768}, cfg, kc::decode_plan_capacity(1, cfg), windowed));
  kc::DecodePlanConfig no_window = h200();
  const kc::DecodePlan short_one = plan_of({4096}, no_window);
  ASSERT_EQ(windowed.items.size(), short_one.items.size());
  for (size_t i = 0; i < windowed.items.size(); ++i) {
    EXPECT_EQ(windowed.items[i].kv_begin, short_one.items[i].kv_begin + 28672) << i;
    EXPECT_EQ(windowed.items[i].kv_end, short_one.items[i].kv_end + 28672) << i;
  }
  const kc::DecodePlan full = plan_of({32768}, no_window);
  EXPECT_GT(full.items.size(), windowed.items.size());

  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    cfg.sliding_window = 1 + static_cast<int>(rng() % 5000);
    std::vector<int32_t> lens(1 + rng() % 64);
    for (auto& l : lens) l = static_cast<int32_t>(rng() % 20000);
    const int capacity = kc::decode_plan_capacity(static_cast<int>(lens.size()), cfg);
    const kc::DecodePlan p = plan_of(lens, cfg, capacity);
    ASSERT_TRUE(plan_ok(lens, cfg, capacity, p)) << "window " << cfg.sliding_window;
    for (const auto& w : p.items) {
      EXPECT_GT(w.kv_end, lens[static_cast<size_t>(w.request)] - cfg.sliding_window)
          << "an item wholly below the window";
    }
  }
}

}  // namespace
}  // namespace llmserve
