// Batch-size buckets of the CUDA decode graphs (one captured graph each; a decode step of B
// requests replays the smallest bucket >= B with the batch padded). Pure logic, no CUDA.
#pragma once

#include <cstdint>
#include <vector>

namespace llmserve {

// 1, 2, 4, 8, then steps of 8 up to 64 and of 16 after, the last one `max_batch`, where
// max_batch = min(max_num_seqs, max_tokens, max_samples): a padded bucket always fits the
// activation buffers sized for max_tokens new tokens and max_samples sampled rows.
std::vector<int> decode_graph_buckets(int max_num_seqs, int64_t max_tokens, int64_t max_samples);
// The smallest bucket >= batch; 0 when batch exceeds them all (or batch <= 0).
int decode_graph_bucket(const std::vector<int>& buckets, int batch);

}  // namespace llmserve
