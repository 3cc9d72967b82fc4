// The flattened varlen batch of one step (DESIGN §5): the only input a backend sees. All spans
// view caller-owned host memory that must stay valid for the step.
//
// B requests, T new tokens, S sampled rows. Requests [0, num_decodes) are decodes: one new token
// each, so their rows are [0, num_decodes); the rest are prefills (any number of new tokens).
#pragma once

#include <cstdint>
#include <span>

#include "engine/core/status.h"

namespace llmserve {

struct ForwardBatch {
  std::span<const int32_t> token_ids;     // [T]
  std::span<const int32_t> positions;     // [T] position of each new token in its sequence
  std::span<const int32_t> query_start;   // [B + 1] cu_seqlens of the new tokens; [0] = 0
  std::span<const int32_t> seq_lens;      // [B] tokens in cache after this step
  std::span<const int32_t> block_tables;  // [B, max_blocks_per_seq] block ids, row-major
  int64_t max_blocks_per_seq = 0;
  std::span<const int32_t> slot_mapping;  // [T] block * block_size + offset for each new K/V
  std::span<const int32_t> sample_rows;   // [S] rows of T whose logits are returned, in order
  std::span<const uint8_t> is_prefill;    // [B] 1 = prefill (or chunk), 0 = decode
  int64_t num_decodes = 0;                // leading requests with exactly one new token
  // [T] 1 = the row's token is part of its request's prompt, 0 = output (generated or a draft);
  // may be empty (all output). Backends may compute prompt rows at a lower precision.
  std::span<const uint8_t> prompt_rows = {};
  // [P] rows whose last hidden state (before the final norm) comes back to the host
  // (LlamaGraph::pooled_hidden): the rows of pooling requests (engine/pooling). May be empty.
  std::span<const int32_t> pool_rows = {};
  // Images (engine/vision), empty when the batch has none:
  // [T] per row, null or the row's input embedding ([hidden] f32, host memory), which replaces
  // the token's (scaled) embedding: an image soft token's projected features.
  std::span<const float* const> input_embeddings = {};
  // [T] per row, the exclusive end of the key positions the row attends: its position + 1
  // (causal), or past it for a row inside an image that attends the whole image (Gemma 3's
  // bidirectional attention within an image). Every key below the end must be in the cache
  // after this step's write_kv (an image is never split across steps).
  std::span<const int32_t> attend_end = {};

  int64_t num_tokens() const { return static_cast<int64_t>(token_ids.size()); }
  int64_t num_requests() const { return static_cast<int64_t>(seq_lens.size()); }
  int64_t num_samples() const { return static_cast<int64_t>(sample_rows.size()); }
  int64_t num_pool_rows() const { return static_cast<int64_t>(pool_rows.size()); }

  // Checks sizes and index ranges: spans agree with T / B, query_start is non-decreasing and
  // ends at T, new tokens fit in seq_lens, block-table entries < num_blocks, slots <
  // num_blocks * block_size, sample rows < T, token ids < vocab_size, decodes come first,
  // prompt_rows empty or of T entries, input_embeddings / attend_end empty or of T entries,
  // attend_end within [position + 1, seq_len] (position + 1 for decodes).
  Status validate(int64_t vocab_size, int64_t num_blocks, int block_size) const;
};

}  // namespace llmserve
