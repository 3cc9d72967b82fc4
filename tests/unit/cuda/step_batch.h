// Builds ForwardBatches for the CUDA model tests: request r owns blocks
// [r * blocks_per_seq, (r + 1) * blocks_per_seq) of the cache.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/model/forward_batch.h"

namespace llmserve::cuda_test {

struct StepBatch {
  std::vector<int32_t> tokens, positions, query_start{0}, seq_lens, block_tables, slots, samples;
  std::vector<uint8_t> is_prefill;
  int64_t blocks_per_seq = 0, num_decodes = 0;
  int block_size = 16;

  // Request `r` appends `new_tokens` after `cached` tokens already in its pages.
  void add(int r, const std::vector<int32_t>& new_tokens, int cached) {
    const int n = static_cast<int>(new_tokens.size());
    for (int i = 0; i < n; ++i) {
      const int pos = cached + i;
      tokens.push_back(new_tokens[static_cast<size_t>(i)]);
      positions.push_back(pos);
      slots.push_back(static_cast<int32_t>((r * blocks_per_seq + pos / block_size) * block_size +
                                           pos % block_size));
    }
    query_start.push_back(static_cast<int32_t>(tokens.size()));
    seq_lens.push_back(cached + n);
    for (int64_t j = 0; j < blocks_per_seq; ++j)
      block_tables.push_back(static_cast<int32_t>(r * blocks_per_seq + j));
    samples.push_back(static_cast<int32_t>(tokens.size()) - 1);
    is_prefill.push_back(n > 1 ? 1 : 0);
    if (n == 1 && num_decodes == static_cast<int64_t>(seq_lens.size()) - 1) ++num_decodes;
  }

  ForwardBatch view() const {
    ForwardBatch b;
    b.token_ids = tokens;
    b.positions = positions;
    b.query_start = query_start;
    b.seq_lens = seq_lens;
    b.block_tables = block_tables;
    b.max_blocks_per_seq = blocks_per_seq;
    b.slot_mapping = slots;
    b.sample_rows = samples;
    b.is_prefill = is_prefill;
    b.num_decodes = num_decodes;
    return b;
  }
};

}  // namespace llmserve::cuda_test
