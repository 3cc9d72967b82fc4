#include "engine/runner/graph_buckets.h"

#include <algorithm>

namespace llmserve {

std::vector<int> decode_graph_buckets(int max_num_seqs, int64_t max_tokens, int64_t max_samples) {
  const int64_t cap = std::min<int64_t>({max_num_seqs, max_tokens, max_samples});
  const int max_batch = static_cast<int>(std::max<int64_t>(cap, 0));
  std::vector<int> b;
  for (int s : {1, 2, 4, 8}) {
    if (s < max_batch) b.push_back(s);
  }
  for (int s = 16; s < max_batch; s += s < 64 ? 8 : 16) b.push_back(s);
  if (max_batch > 0) b.push_back(max_batch);
  return b;
}

int decode_graph_bucket(const std::vector<int>& buckets, int batch) {
  if (batch <= 0) return 0;
  auto it = std::lower_bound(buckets.begin(), buckets.end(), batch);
  return it == buckets.end() ? 0 : *it;
}

}  // namespace llmserve
