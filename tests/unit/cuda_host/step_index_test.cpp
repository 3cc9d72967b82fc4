#include "engine/runner/step_index.h"

#include <gtest/gtest.h>

#include <vector>

namespace llmserve {
namespace {

StepIndexLimits limits() {
  StepIndexLimits l;
  l.max_tokens = 64;
  l.max_requests = 8;
  l.max_samples = 8;
  l.block_table_stride = 300;  // a long max_model_len: 4800 tokens at block size 16
  l.plan_ints = 10;
  return l;
}

TEST(StepIndexLayout, ArraysAreDisjointAlignedAndInOrder) {
  const StepIndexLayout s = StepIndexLayout::make(limits());
  const int64_t offsets[] = {s.tokens,   s.positions, s.slots, s.query_start,
                             s.seq_lens, s.samples,   s.plan,  s.block_tables};
  const int64_t sizes[] = {64, 64, 64, 9, 8, 8, 10, 0};
  for (size_t i = 0; i + 1 < std::size(offsets); ++i) {
    EXPECT_EQ(offsets[i] % 4, 0);
    EXPECT_GE(offsets[i + 1], offsets[i] + sizes[i]);
  }
  EXPECT_EQ(s.total, s.block_tables + 8 * 300);
}

struct Batch {
  std::vector<int32_t> tokens, positions, query_start, seq_lens, tables, slots, samples;
  std::vector<uint8_t> prefill;
  int64_t width = 0, decodes = 0;
  ForwardBatch view() const {
    return ForwardBatch{tokens, positions, query_start, seq_lens, tables,
                        width,  slots,     samples,     prefill,  decodes};
  }
};

// Three decodes at lengths 5, 17 and 33 (block size 16): widths 1, 2 and 3 blocks.
Batch decodes() {
  Batch b;
  b.tokens = {11, 12, 13};
  b.positions = {4, 16, 32};
  b.query_start = {0, 1, 2, 3};
  b.seq_lens = {5, 17, 33};
  b.width = 3;
  b.tables = {7, 0, 0, 3, 4, 0, 9, 10, 11};
  b.slots = {7 * 16 + 4, 4 * 16 + 0, 11 * 16 + 0};
  b.samples = {0, 1, 2};
  b.prefill = {0, 0, 0};
  b.decodes = 3;
  return b;
}

TEST(StepIndex, WritesOnlyTheRowsAndColumnsInUse) {
  const StepIndexLayout s = StepIndexLayout::make(limits());
  std::vector<int32_t> area(static_cast<size_t>(s.total), -7);
  const Batch b = decodes();
  auto fill = fill_step_index(b.view(), 0, s, area);
  ASSERT_TRUE(fill.is_ok()) << fill.status().message();
  EXPECT_EQ(fill->rows, 3);
  EXPECT_EQ(fill->tokens, 3);
  EXPECT_EQ(fill->table_rows, 3);
  EXPECT_EQ(fill->table_width, 3);
  EXPECT_EQ(fill->max_seq_len, 33);
  EXPECT_EQ(fill->max_q_len, 1);
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t c = 0; c < 300; ++c) {
      const int32_t got = area[static_cast<size_t>(s.block_tables + r * 300 + c)];
      EXPECT_EQ(got, c < 3 ? b.tables[static_cast<size_t>(r * 3 + c)] : -7) << r << "," << c;
    }
  }
  // Rows past the batch are not touched (and not uploaded).
  EXPECT_EQ(area[static_cast<size_t>(s.block_tables + 3 * 300)], -7);
  EXPECT_EQ(area[static_cast<size_t>(s.slots + 2)], 11 * 16);
  EXPECT_EQ(area[static_cast<size_t>(s.query_start + 3)], 3);
}

TEST(StepIndex, PadsADecodeBatchToItsBucket) {
  const StepIndexLayout s = StepIndexLayout::make(limits());
  std::vector<int32_t> area(static_cast<size_t>(s.total), -7);
  const Batch b = decodes();
  auto fill = fill_step_index(b.view(), 8, s, area);
  ASSERT_TRUE(fill.is_ok()) << fill.status().message();
  EXPECT_EQ(fill->rows, 8);
  EXPECT_EQ(fill->tokens, 8);
  EXPECT_EQ(fill->samples, 8);
  EXPECT_EQ(fill->table_rows, 3);
  for (int64_t r = 3; r < 8; ++r) {
    EXPECT_EQ(area[static_cast<size_t>(s.seq_lens + r)], 0);
    EXPECT_EQ(area[static_cast<size_t>(s.slots + r)], -1);
    EXPECT_EQ(area[static_cast<size_t>(s.tokens + r)], 0);
    EXPECT_EQ(area[static_cast<size_t>(s.query_start + r + 1)], r + 1);
    EXPECT_EQ(area[static_cast<size_t>(s.samples + r)], r);
  }
}

TEST(StepIndex, RefusesBatchesOverTheLimits) {
  const StepIndexLayout s = StepIndexLayout::make(limits());
  std::vector<int32_t> area(static_cast<size_t>(s.total));
  Batch b = decodes();
  EXPECT_FALSE(fill_step_index(b.view(), 9, s, area).is_ok());  // more rows than max_requests
  b.width = 301;
  b.tables.assign(3 * 301, 0);
  EXPECT_FALSE(fill_step_index(b.view(), 0, s, area).is_ok());  // wider than the device table
  Batch p = decodes();
  p.decodes = 2;  // not a pure-decode batch: cannot be padded
  EXPECT_FALSE(fill_step_index(p.view(), 8, s, area).is_ok());
  std::vector<int32_t> small(static_cast<size_t>(s.total - 1));
  EXPECT_FALSE(fill_step_index(decodes().view(), 0, s, small).is_ok());
}

// n decodes of one token each (width 1): only the request count can be over the limits.
Batch single_token_decodes(int n) {
  Batch b;
  for (int i = 0; i < n; ++i) {
    b.tokens.push_back(11);
    b.positions.push_back(0);
    b.query_start.push_back(i);
    b.seq_lens.push_back(1);
    b.tables.push_back(i);
    b.slots.push_back(i * 16);
    b.samples.push_back(i);
    b.prefill.push_back(0);
  }
  b.query_start.push_back(n);
  b.width = 1;
  b.decodes = n;
  return b;
}

TEST(StepIndex, RefusesEveryRequestOverMaxRequestsWhateverTheArrayRounding) {
  StepIndexLimits l = limits();
  l.max_samples = 64;  // so that the request count alone decides
  const StepIndexLayout s = StepIndexLayout::make(l);
  std::vector<int32_t> area(static_cast<size_t>(s.total));
  EXPECT_TRUE(fill_step_index(single_token_decodes(8).view(), 0, s, area).is_ok());
  for (int n = 9; n <= 12; ++n) {
    EXPECT_FALSE(fill_step_index(single_token_decodes(n).view(), 0, s, area).is_ok()) << n;
  }
}

}  // namespace
}  // namespace llmserve
