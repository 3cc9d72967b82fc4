#include "engine/runner/batch_builder.h"

#include <algorithm>
#include <string>

namespace llmserve {

Result<ForwardBatch> BatchBuilder::build(std::span<const BatchEntry> entries) {
  if (entries.empty()) return invalid_argument("batch builder: no entries");
  if (block_size_ <= 0) return invalid_argument("batch builder: block_size must be positive");
  order_.clear();
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].num_new == 1 && entries[i].num_computed > 0) order_.push_back(i);
  }
  const size_t num_decodes = order_.size();
  for (size_t i = 0; i < entries.size(); ++i) {
    if (!(entries[i].num_new == 1 && entries[i].num_computed > 0)) order_.push_back(i);
  }

  size_t max_blocks = 1;
  for (const BatchEntry& e : entries) {
    if (e.num_new <= 0 || e.num_computed < 0 ||
        static_cast<size_t>(e.num_computed) + static_cast<size_t>(e.num_new) > e.tokens.size()) {
      return invalid_argument("batch builder: entry new tokens out of range");
    }
    const size_t needed =
        (static_cast<size_t>(e.num_computed + e.num_new) + block_size_ - 1) / block_size_;
    if (e.block_table.size() < needed) {
      return invalid_argument("batch builder: block table has " +
                              std::to_string(e.block_table.size()) + " blocks, needs " +
                              std::to_string(needed));
    }
    max_blocks = std::max(max_blocks, needed);
  }

  const size_t B = entries.size();
  token_ids_.clear();
  positions_.clear();
  slot_mapping_.clear();
  query_start_.assign(1, 0);
  seq_lens_.clear();
  is_prefill_.clear();
  block_tables_.assign(B * max_blocks, 0);
  sample_index_.assign(B, -1);
  sample_rows_.clear();

  std::vector<int32_t>& last_row = sample_rows_;  // filled per entry index below
  last_row.assign(B, -1);
  for (size_t b = 0; b < B; ++b) {
    const BatchEntry& e = entries[order_[b]];
    const size_t needed =
        (static_cast<size_t>(e.num_computed + e.num_new) + block_size_ - 1) / block_size_;
    std::copy_n(e.block_table.begin(), needed,
                block_tables_.begin() + static_cast<std::ptrdiff_t>(b * max_blocks));
    for (int32_t i = 0; i < e.num_new; ++i) {
      const int32_t pos = e.num_computed + i;
      token_ids_.push_back(e.tokens[static_cast<size_t>(pos)]);
      positions_.push_back(pos);
      slot_mapping_.push_back(e.block_table[static_cast<size_t>(pos / block_size_)] * block_size_ +
                              pos % block_size_);
    }
    query_start_.push_back(static_cast<int32_t>(token_ids_.size()));
    seq_lens_.push_back(e.num_computed + e.num_new);
    is_prefill_.push_back(b >= num_decodes ? 1 : 0);
    if (e.sample) last_row[order_[b]] = static_cast<int32_t>(token_ids_.size()) - 1;
  }
  // Sample rows in entry order.
  int32_t s = 0;
  for (size_t i = 0; i < B; ++i) {
    if (entries[i].sample) sample_index_[i] = s++;
  }
  size_t out = 0;
  for (size_t i = 0; i < B; ++i) {
    if (entries[i].sample) sample_rows_[out++] = last_row[i];
  }
  sample_rows_.resize(out);

  ForwardBatch fb;
  fb.token_ids = token_ids_;
  fb.positions = positions_;
  fb.query_start = query_start_;
  fb.seq_lens = seq_lens_;
  fb.block_tables = block_tables_;
  fb.max_blocks_per_seq = static_cast<int64_t>(max_blocks);
  fb.slot_mapping = slot_mapping_;
  fb.sample_rows = sample_rows_;
  fb.is_prefill = is_prefill_;
  fb.num_decodes = static_cast<int64_t>(num_decodes);
  return fb;
}

std::vector<int32_t> contiguous_block_table(int32_t first_block, int64_t num_tokens,
                                            int block_size) {
  const int64_t n = (num_tokens + block_size - 1) / block_size;
  std::vector<int32_t> table(static_cast<size_t>(std::max<int64_t>(n, 0)));
  for (size_t i = 0; i < table.size(); ++i) table[i] = first_block + static_cast<int32_t>(i);
  return table;
}

}  // namespace llmserve
