#include "engine/runner/step_index.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace llmserve {

StepIndexLayout StepIndexLayout::make(const StepIndexLimits& l) {
  StepIndexLayout s;
  int64_t at = 0;
  auto take = [&at](int64_t n) {
    const int64_t here = at;
    at += (n + 3) / 4 * 4;  // 16-byte aligned arrays
    return here;
  };
  s.tokens = take(l.max_tokens);
  s.positions = take(l.max_tokens);
  s.slots = take(l.max_tokens);
  s.query_start = take(l.max_requests + 1);
  s.seq_lens = take(l.max_requests);
  s.samples = take(l.max_samples);
  s.plan = take(l.plan_ints);
  s.block_tables = take(0);
  s.block_table_stride = l.block_table_stride;
  s.total = s.block_tables + l.max_requests * l.block_table_stride;
  s.max_tokens = l.max_tokens;
  s.max_requests = l.max_requests;
  s.max_samples = l.max_samples;
  return s;
}

Result<StepIndexFill> fill_step_index(const ForwardBatch& batch, int64_t padded_requests,
                                      const StepIndexLayout& layout, std::span<int32_t> area) {
  const int64_t T = batch.num_tokens(), B = batch.num_requests(), S = batch.num_samples();
  // The limits themselves: the arrays are rounded up to 4 entries, and a request count read off
  // their offsets would pass up to 3 more rows than seq_lens and the block tables hold.
  const int64_t max_tokens = layout.max_tokens;
  const int64_t max_requests = layout.max_requests;
  const int64_t max_samples = layout.max_samples;
  const int64_t width = batch.max_blocks_per_seq;
  const bool pad = padded_requests > B;
  if (pad && !(batch.num_decodes == B && T == B && S == B)) {
    return invalid_argument("step index: only a pure-decode batch can be padded");
  }
  const int64_t rows = std::max(B, padded_requests);
  const int64_t tokens = pad ? rows : T, samples = pad ? rows : S;
  if (static_cast<int64_t>(area.size()) < layout.total || tokens > max_tokens ||
      rows > max_requests || samples > max_samples || width > layout.block_table_stride) {
    return invalid_argument("step index: a batch of " + std::to_string(T) + " tokens / " +
                            std::to_string(rows) + " requests / " + std::to_string(samples) +
                            " samples / " + std::to_string(width) +
                            " blocks per sequence exceeds the limits given at creation");
  }
  int32_t* a = area.data();
  for (int64_t i = 0; i < tokens; ++i) {
    const bool real = i < T;
    const auto k = static_cast<size_t>(i);
    a[layout.tokens + i] = real ? batch.token_ids[k] : 0;
    a[layout.positions + i] = real ? batch.positions[k] : 0;
    a[layout.slots + i] = real ? batch.slot_mapping[k] : -1;
  }
  StepIndexFill fill;
  for (int64_t b = 0; b <= rows; ++b) {
    a[layout.query_start + b] =
        b <= B ? batch.query_start[static_cast<size_t>(b)] : static_cast<int32_t>(T + (b - B));
  }
  for (int64_t b = 0; b < rows; ++b) {
    const bool real = b < B;
    const int32_t len = real ? batch.seq_lens[static_cast<size_t>(b)] : 0;
    a[layout.seq_lens + b] = len;
    fill.max_seq_len = std::max(fill.max_seq_len, len);
    if (real) {
      fill.max_q_len =
          std::max(fill.max_q_len, a[layout.query_start + b + 1] - a[layout.query_start + b]);
      std::memcpy(a + layout.block_tables + b * layout.block_table_stride,
                  batch.block_tables.data() + b * width, static_cast<size_t>(width) * 4);
    }
  }
  for (int64_t s = 0; s < samples; ++s) {
    a[layout.samples + s] =
        s < S ? batch.sample_rows[static_cast<size_t>(s)] : static_cast<int32_t>(s);
  }
  fill.rows = rows;
  fill.tokens = tokens;
  fill.samples = samples;
  fill.table_rows = B;
  fill.table_width = width;
  return fill;
}

}  // namespace llmserve
