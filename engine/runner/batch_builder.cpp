#include "engine/runner/batch_builder.h"

#include <algorithm>
#include <string>

namespace llmserve {
namespace {

bool is_decode(const BatchEntry& e) {
  return e.expands() || (e.num_new == 1 && e.num_computed > 0);
}

int32_t token_at(const BatchEntry& e, int32_t pos) {
  const auto p = static_cast<size_t>(pos);
  return p < e.tokens.size() ? e.tokens[p] : e.drafts[p - e.tokens.size()];
}

}  // namespace

Result<ForwardBatch> BatchBuilder::build(std::span<const BatchEntry> entries) {
  if (entries.empty()) return invalid_argument("batch builder: no entries");
  if (block_size_ <= 0) return invalid_argument("batch builder: block_size must be positive");
  order_.clear();
  for (size_t i = 0; i < entries.size(); ++i) {
    if (is_decode(entries[i])) order_.push_back(i);
  }
  const size_t num_decode_entries = order_.size();
  for (size_t i = 0; i < entries.size(); ++i) {
    if (!is_decode(entries[i])) order_.push_back(i);
  }

  size_t max_blocks = 1;
  size_t num_rows = 0;  // the batch's requests: one per entry, one per new token when expanded
  for (const BatchEntry& e : entries) {
    const size_t known = e.tokens.size() + e.drafts.size();
    if (e.num_new <= 0 || e.num_computed < 0 ||
        static_cast<size_t>(e.num_computed) + static_cast<size_t>(e.num_new) > known) {
      return invalid_argument("batch builder: entry new tokens out of range");
    }
    if (!e.drafts.empty() &&
        (!e.sample || static_cast<size_t>(e.num_computed) + 1 != e.tokens.size() ||
         static_cast<size_t>(e.num_new) != e.drafts.size() + 1)) {
      return invalid_argument(
          "batch builder: an entry with drafts must sample and run its last token and drafts");
    }
    if (e.num_scored < 0 || e.num_scored > e.num_new - (e.sample ? 1 : 0) ||
        (e.num_scored > 0 && e.expands())) {
      return invalid_argument("batch builder: scored rows out of range");
    }
    if (e.pool && (e.expands() || e.num_scored > 0)) {
      return invalid_argument("batch builder: a pooling entry cannot have drafts or scored rows");
    }
    const size_t needed =
        (static_cast<size_t>(e.num_computed + e.num_new) + block_size_ - 1) / block_size_;
    if (e.block_table.size() < needed) {
      return invalid_argument("batch builder: block table has " +
                              std::to_string(e.block_table.size()) + " blocks, needs " +
                              std::to_string(needed));
    }
    if (!e.image_spans.empty() &&
        (e.image_features.size() != e.image_spans.size() || e.image_hidden <= 0 ||
         (!e.expands() &&
          splits_image(e.image_spans, e.num_computed, e.num_computed + e.num_new)))) {
      return invalid_argument(
          "batch builder: an entry's new tokens split an image, or its image features are "
          "missing");
    }
    max_blocks = std::max(max_blocks, needed);
    num_rows += e.expands() ? static_cast<size_t>(e.num_new) : 1;
  }

  token_ids_.clear();
  positions_.clear();
  slot_mapping_.clear();
  query_start_.assign(1, 0);
  seq_lens_.clear();
  is_prefill_.clear();
  prompt_rows_.clear();
  block_tables_.assign(num_rows * max_blocks, 0);
  sample_index_.assign(entries.size(), -1);
  score_index_.assign(entries.size(), -1);
  first_row_.assign(entries.size(), -1);

  bool images = false;
  for (const BatchEntry& e : entries) {
    for (const ImageSpan& sp : e.image_spans) {
      images = images ||
               (!e.expands() && sp.start < e.num_computed + e.num_new && sp.end() > e.num_computed);
    }
  }
  input_embeddings_.clear();
  attend_end_.clear();

  size_t b = 0;  // batch request (row of block_tables)
  size_t num_decodes = 0;
  for (size_t o = 0; o < order_.size(); ++o) {
    const BatchEntry& e = entries[order_[o]];
    const bool decode = o < num_decode_entries;
    const size_t groups = e.expands() ? static_cast<size_t>(e.num_new) : 1;
    first_row_[order_[o]] = static_cast<int32_t>(token_ids_.size());
    for (size_t g = 0; g < groups; ++g, ++b) {
      const int32_t begin = e.num_computed + (e.expands() ? static_cast<int32_t>(g) : 0);
      const int32_t end = e.expands() ? begin + 1 : e.num_computed + e.num_new;
      const size_t needed = (static_cast<size_t>(end) + block_size_ - 1) / block_size_;
      std::copy_n(e.block_table.begin(), needed,
                  block_tables_.begin() + static_cast<std::ptrdiff_t>(b * max_blocks));
      for (int32_t pos = begin; pos < end; ++pos) {
        token_ids_.push_back(token_at(e, pos));
        positions_.push_back(pos);
        prompt_rows_.push_back(pos < e.num_prompt ? 1 : 0);
        slot_mapping_.push_back(e.block_table[static_cast<size_t>(pos / block_size_)] *
                                    block_size_ +
                                pos % block_size_);
      }
      if (images) {
        if (e.expands() || e.image_spans.empty()) {
          for (int32_t pos = begin; pos < end; ++pos) {
            input_embeddings_.push_back(nullptr);
            attend_end_.push_back(pos + 1);
          }
        } else {
          fill_image_rows(e.image_spans, e.image_features, e.image_hidden, begin, end - begin,
                          entry_embeddings_, entry_attend_end_);
          input_embeddings_.insert(input_embeddings_.end(), entry_embeddings_.begin(),
                                   entry_embeddings_.end());
          attend_end_.insert(attend_end_.end(), entry_attend_end_.begin(), entry_attend_end_.end());
        }
      }
      query_start_.push_back(static_cast<int32_t>(token_ids_.size()));
      seq_lens_.push_back(end);
      is_prefill_.push_back(decode ? 0 : 1);
      num_decodes += decode;
    }
  }
  // Logits rows in entry order; an entry's rows are its scored leading tokens, then its last new
  // token when it samples, or all of them with drafts.
  sample_rows_.clear();
  for (size_t i = 0; i < entries.size(); ++i) {
    const BatchEntry& e = entries[i];
    if (e.num_scored > 0) {
      score_index_[i] = static_cast<int32_t>(sample_rows_.size());
      for (int32_t j = 0; j < e.num_scored; ++j) sample_rows_.push_back(first_row_[i] + j);
    }
    if (!e.sample) continue;
    sample_index_[i] = static_cast<int32_t>(sample_rows_.size());
    const int32_t last = first_row_[i] + e.num_new - 1;
    for (int32_t row = last - e.num_sampled() + 1; row <= last; ++row) sample_rows_.push_back(row);
  }

  pool_rows_.clear();
  pool_index_.assign(entries.size(), -1);
  for (size_t i = 0; i < entries.size(); ++i) {
    if (!entries[i].pool) continue;
    pool_index_[i] = static_cast<int32_t>(pool_rows_.size());
    for (int32_t j = 0; j < entries[i].num_new; ++j) pool_rows_.push_back(first_row_[i] + j);
  }

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
  fb.prompt_rows = prompt_rows_;
  fb.pool_rows = pool_rows_;
  fb.num_decodes = static_cast<int64_t>(num_decodes);
  if (images) {
    fb.input_embeddings = input_embeddings_;
    fb.attend_end = attend_end_;
  }
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
