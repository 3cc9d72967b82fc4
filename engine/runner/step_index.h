// The index data of one step as a device backend uploads it (DESIGN §5): one int32 area of a
// layout fixed at start-up by the step limits, filled on the host for the rows in use only, so
// per-step host work is O(batch + new tokens + the block-table entries in use), never
// O(max_model_len). Pure logic, no CUDA.
#pragma once

#include <cstdint>
#include <span>

#include "engine/core/status.h"
#include "engine/model/forward_batch.h"

namespace llmserve {

struct StepIndexLimits {
  int64_t max_tokens = 0;          // new tokens per step (padded graph rows included)
  int64_t max_requests = 0;        // requests per step
  int64_t max_samples = 0;         // sampled rows per step
  int64_t block_table_stride = 0;  // columns of the device block table (max blocks per sequence)
  int64_t plan_ints = 0;           // room for the decode-attention plan
};

// Offsets (in int32 elements) of each array in the area. The front part [0, block_tables) is
// uploaded in one copy; the block table [max_requests, block_table_stride] in a second, pitched
// copy of the rows and columns in use.
struct StepIndexLayout {
  int64_t tokens = 0, positions = 0, slots = 0;  // [max_tokens]
  int64_t query_start = 0;                       // [max_requests + 1]
  int64_t seq_lens = 0;                          // [max_requests]
  int64_t samples = 0;                           // [max_samples]
  int64_t plan = 0;                              // [plan_ints]
  int64_t block_tables = 0;                      // [max_requests, block_table_stride]
  int64_t block_table_stride = 0;
  int64_t total = 0;
  int64_t max_tokens = 0, max_requests = 0, max_samples = 0;  // the limits it was made for

  static StepIndexLayout make(const StepIndexLimits& limits);
};

struct StepIndexFill {
  int64_t rows = 0;         // requests written (the batch, or its padded bucket)
  int64_t tokens = 0;       // token rows written (T, or the bucket for a padded decode step)
  int64_t samples = 0;      // sample rows written
  int64_t table_rows = 0;   // block-table rows to upload
  int64_t table_width = 0;  // block-table columns to upload (the batch's max blocks)
  int32_t max_seq_len = 0, max_q_len = 0;
};

// Writes `batch` into `area` (layout.total ints). padded_requests > B pads a pure-decode batch
// to a graph bucket: padding rows have seq_len 0, token 0, position 0, slot -1, one query row
// each, sample row = their own row. Errors: a batch over the layout's limits.
Result<StepIndexFill> fill_step_index(const ForwardBatch& batch, int64_t padded_requests,
                                      const StepIndexLayout& layout, std::span<int32_t> area);

}  // namespace llmserve
