#include "engine/model/forward_batch.h"

#include <string>

namespace llmserve {
namespace {

Status bad(const std::string& what) {
  return invalid_argument("forward batch: " + what);
}

}  // namespace

Status ForwardBatch::validate(int64_t vocab_size, int64_t num_blocks, int block_size) const {
  const int64_t T = num_tokens(), B = num_requests();
  if (T == 0 || B == 0) return bad("empty batch");
  if (static_cast<int64_t>(positions.size()) != T ||
      static_cast<int64_t>(slot_mapping.size()) != T) {
    return bad("positions and slot_mapping must have one entry per token");
  }
  if (static_cast<int64_t>(query_start.size()) != B + 1 || query_start[0] != 0 ||
      query_start[B] != T) {
    return bad("query_start must have B + 1 entries from 0 to T");
  }
  if (static_cast<int64_t>(is_prefill.size()) != B) return bad("is_prefill must have B entries");
  if (!prompt_rows.empty() && static_cast<int64_t>(prompt_rows.size()) != T) {
    return bad("prompt_rows must be empty or have T entries");
  }
  if (max_blocks_per_seq <= 0 ||
      static_cast<int64_t>(block_tables.size()) != B * max_blocks_per_seq) {
    return bad("block_tables must be B x max_blocks_per_seq");
  }
  if (num_decodes < 0 || num_decodes > B) return bad("num_decodes out of range");
  for (int64_t b = 0; b < B; ++b) {
    const int64_t q = query_start[b + 1] - query_start[b];
    if (q < 1) return bad("request " + std::to_string(b) + " has no new tokens");
    if (b < num_decodes && q != 1) return bad("decode request with more than one new token");
    if (seq_lens[b] < q) return bad("seq_lens smaller than the new tokens");
    const int64_t needed = (seq_lens[b] + block_size - 1) / block_size;
    if (needed > max_blocks_per_seq) return bad("sequence longer than its block table");
    for (int64_t i = 0; i < needed; ++i) {
      const int32_t blk = block_tables[b * max_blocks_per_seq + i];
      if (blk < 0 || blk >= num_blocks) return bad("block id out of range");
    }
  }
  const int64_t num_slots = num_blocks * block_size;
  for (int64_t t = 0; t < T; ++t) {
    if (token_ids[t] < 0 || token_ids[t] >= vocab_size) {
      return bad("token id " + std::to_string(token_ids[t]) + " outside the vocab");
    }
    if (slot_mapping[t] >= num_slots) return bad("slot out of range");
    if (positions[t] < 0) return bad("negative position");
  }
  if (!input_embeddings.empty() && static_cast<int64_t>(input_embeddings.size()) != T) {
    return bad("input_embeddings must be empty or have T entries");
  }
  if (!attend_end.empty()) {
    if (static_cast<int64_t>(attend_end.size()) != T) {
      return bad("attend_end must be empty or have T entries");
    }
    for (int64_t b = 0; b < B; ++b) {
      for (int32_t t = query_start[b]; t < query_start[b + 1]; ++t) {
        const int64_t lo = positions[t] + 1;
        const int64_t hi = b < num_decodes ? lo : seq_lens[b];
        if (attend_end[t] < lo || attend_end[t] > hi) {
          return bad("attend_end of row " + std::to_string(t) + " outside [position + 1, " +
                     (b < num_decodes ? "position + 1" : "seq_len") + "]");
        }
      }
    }
  }
  for (int32_t r : sample_rows) {
    if (r < 0 || r >= T) return bad("sample row out of range");
  }
  for (int32_t r : pool_rows) {
    if (r < 0 || r >= T) return bad("pool row out of range");
  }
  return Status::ok();
}

}  // namespace llmserve
