#include "engine/model/bidirectional_rows.h"

#include <string>

namespace llmserve {

Status bidirectional_attend_end(const ForwardBatch& batch, std::vector<int32_t>& attend_end) {
  const int64_t T = batch.num_tokens(), B = batch.num_requests();
  attend_end.resize(static_cast<size_t>(T));
  std::vector<uint8_t> pool(static_cast<size_t>(T), 0);
  for (int32_t r : batch.pool_rows) pool[static_cast<size_t>(r)] = 1;
  for (int64_t t = 0; t < T; ++t) {
    attend_end[static_cast<size_t>(t)] = batch.positions[static_cast<size_t>(t)] + 1;
  }
  for (int64_t b = 0; b < B; ++b) {
    const int32_t begin = batch.query_start[static_cast<size_t>(b)];
    const int32_t end = batch.query_start[static_cast<size_t>(b) + 1];
    int32_t pooled = 0;
    for (int32_t t = begin; t < end; ++t) pooled += pool[static_cast<size_t>(t)];
    if (pooled == 0) continue;
    const int32_t seq_len = batch.seq_lens[static_cast<size_t>(b)];
    if (pooled != end - begin || seq_len != end - begin) {
      return invalid_argument("bidirectional attention: pooling request " + std::to_string(b) +
                              " runs " + std::to_string(end - begin) + " of its " +
                              std::to_string(seq_len) + " tokens (" + std::to_string(pooled) +
                              " pooled) in this step; it must run whole");
    }
    for (int32_t t = begin; t < end; ++t) attend_end[static_cast<size_t>(t)] = seq_len;
  }
  return Status::ok();
}

}  // namespace llmserve
