#include "engine/runner/batch_builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

namespace llmserve {
namespace {

using ::testing::ElementsAre;

std::vector<int32_t> v(std::span<const int32_t> s) {
  return {s.begin(), s.end()};
}

TEST(BatchBuilder, DecodesFirstSampleRowsInEntryOrder) {
  BatchBuilder b(4);
  const std::vector<int32_t> a_tok = {10, 11, 12, 13, 14, 15, 16, 17}, a_tab = {7, 2};
  const std::vector<int32_t> d_tok = {20, 21, 22, 23, 24, 25}, d_tab = {0, 1};
  const std::vector<int32_t> c_tok = {30, 31, 32}, c_tab = {5};
  const std::vector<BatchEntry> entries = {
      {a_tok, 3, 5, a_tab, true},   // prefill chunk: positions 3..7
      {c_tok, 0, 2, c_tab, false},  // prefill chunk, not sampled
      {d_tok, 5, 1, d_tab, true},   // decode: position 5
  };
  auto r = b.build(entries);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const ForwardBatch& fb = *r;
  EXPECT_EQ(fb.num_decodes, 1);
  EXPECT_THAT(v(fb.token_ids), ElementsAre(25, 13, 14, 15, 16, 17, 30, 31));
  EXPECT_THAT(v(fb.positions), ElementsAre(5, 3, 4, 5, 6, 7, 0, 1));
  EXPECT_THAT(v(fb.query_start), ElementsAre(0, 1, 6, 8));
  EXPECT_THAT(v(fb.seq_lens), ElementsAre(6, 8, 2));
  EXPECT_EQ(fb.max_blocks_per_seq, 2);
  EXPECT_THAT(v(fb.block_tables), ElementsAre(0, 1, 7, 2, 5, 0));
  // slot = block * 4 + pos % 4
  EXPECT_THAT(v(fb.slot_mapping), ElementsAre(1 * 4 + 1, 7 * 4 + 3, 2 * 4 + 0, 2 * 4 + 1, 2 * 4 + 2,
                                              2 * 4 + 3, 5 * 4 + 0, 5 * 4 + 1));
  EXPECT_THAT(std::vector<uint8_t>(fb.is_prefill.begin(), fb.is_prefill.end()),
              ElementsAre(0, 1, 1));
  // Entry 0 (rows 1..5, last 5) samples first, then entry 2 (row 0).
  EXPECT_THAT(v(fb.sample_rows), ElementsAre(5, 0));
  EXPECT_EQ(b.sample_index(0), 0);
  EXPECT_EQ(b.sample_index(1), -1);
  EXPECT_EQ(b.sample_index(2), 1);
  EXPECT_TRUE(fb.validate(100, 8, 4).is_ok());
}

TEST(BatchBuilder, DraftsRunAsDecodeRowsAndAllSample) {
  BatchBuilder b(4);
  const std::vector<int32_t> p_tok = {10, 11, 12, 13, 14}, p_tab = {3, 4};
  const std::vector<int32_t> s_tok = {20, 21, 22, 23, 24, 25}, s_tab = {0, 1, 2};
  const std::vector<int32_t> drafts = {26, 27, 28};
  BatchEntry spec{s_tok, 5, 4, s_tab, true};  // last token (pos 5) + 3 drafts (pos 6..8)
  spec.drafts = drafts;
  const std::vector<BatchEntry> entries = {
      {p_tok, 0, 5, p_tab, true},  // a prefill
      spec,
  };
  auto r = b.build(entries);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const ForwardBatch& fb = *r;
  // Four one-token decode rows first, each seeing the positions up to its own.
  EXPECT_EQ(fb.num_decodes, 4);
  EXPECT_EQ(fb.num_requests(), 5);
  EXPECT_THAT(v(fb.token_ids), ElementsAre(25, 26, 27, 28, 10, 11, 12, 13, 14));
  EXPECT_THAT(v(fb.positions), ElementsAre(5, 6, 7, 8, 0, 1, 2, 3, 4));
  EXPECT_THAT(v(fb.query_start), ElementsAre(0, 1, 2, 3, 4, 9));
  EXPECT_THAT(v(fb.seq_lens), ElementsAre(6, 7, 8, 9, 5));
  EXPECT_EQ(fb.max_blocks_per_seq, 3);
  EXPECT_THAT(v(fb.block_tables), ElementsAre(0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 2, 3, 4, 0));
  EXPECT_THAT(v(fb.slot_mapping), ElementsAre(1 * 4 + 1, 1 * 4 + 2, 1 * 4 + 3, 2 * 4 + 0, 3 * 4,
                                              3 * 4 + 1, 3 * 4 + 2, 3 * 4 + 3, 4 * 4));
  EXPECT_THAT(std::vector<uint8_t>(fb.is_prefill.begin(), fb.is_prefill.end()),
              ElementsAre(0, 0, 0, 0, 1));
  // Entry order: the prefill's last row, then the spec entry's four rows.
  EXPECT_THAT(v(fb.sample_rows), ElementsAre(8, 0, 1, 2, 3));
  EXPECT_EQ(b.sample_index(0), 0);
  EXPECT_EQ(b.sample_index(1), 1);
  EXPECT_TRUE(fb.validate(100, 8, 4).is_ok());

  // rows_as_decodes without drafts: the same rows, only the last sampled.
  BatchEntry catch_up{s_tok, 3, 3, s_tab, true};
  catch_up.rows_as_decodes = true;
  auto c = b.build(std::vector<BatchEntry>{catch_up});
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ(c->num_decodes, 3);
  EXPECT_THAT(v(c->seq_lens), ElementsAre(4, 5, 6));
  EXPECT_THAT(v(c->sample_rows), ElementsAre(2));

  // Drafts must follow the last known token, all run, and sample.
  BatchEntry bad = spec;
  bad.num_new = 3;
  EXPECT_FALSE(b.build(std::vector<BatchEntry>{bad}).is_ok());
  bad = spec;
  bad.sample = false;
  EXPECT_FALSE(b.build(std::vector<BatchEntry>{bad}).is_ok());
  bad = spec;
  bad.num_computed = 4;
  bad.num_new = 5;
  EXPECT_FALSE(b.build(std::vector<BatchEntry>{bad}).is_ok());
}

TEST(BatchBuilder, RejectsShortBlockTableAndEmptyEntries) {
  BatchBuilder b(4);
  const std::vector<int32_t> tok = {1, 2, 3, 4, 5}, tab = {0};
  const std::vector<BatchEntry> short_table = {{tok, 0, 5, tab, true}};
  EXPECT_FALSE(b.build(short_table).is_ok());
  const std::vector<BatchEntry> none = {{tok, 0, 0, tab, true}};
  EXPECT_FALSE(b.build(none).is_ok());
  const std::vector<BatchEntry> past_end = {{tok, 4, 2, tab, true}};
  EXPECT_FALSE(b.build(past_end).is_ok());
}

TEST(ForwardBatch, ValidateCatchesBadIndices) {
  BatchBuilder b(4);
  const std::vector<int32_t> tok = {1, 2, 3}, tab = {9};
  const std::vector<BatchEntry> e = {{tok, 0, 3, tab, true}};
  auto r = b.build(e);
  ASSERT_TRUE(r.is_ok());
  EXPECT_FALSE(r->validate(100, 8, 4).is_ok());  // block 9 >= 8 blocks
  EXPECT_TRUE(r->validate(100, 10, 4).is_ok());
  EXPECT_FALSE(r->validate(3, 10, 4).is_ok());  // token 3 outside a vocab of 3
}

TEST(ContiguousBlockTable, CoversTokens) {
  EXPECT_THAT(contiguous_block_table(3, 33, 16), ElementsAre(3, 4, 5));
  EXPECT_THAT(contiguous_block_table(0, 16, 16), ElementsAre(0));
  EXPECT_TRUE(contiguous_block_table(0, 0, 16).empty());
}

}  // namespace
}  // namespace llmserve
