// CUDA graphs of whole decode steps, one per batch-size bucket, captured on first use and
// replayed with the batch padded to its bucket.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <vector>

#include "engine/core/status.h"

namespace llmserve {

// 1, 2, 4, 8, then steps of 8 up to 64 and of 16 after, the last one max_num_seqs.
std::vector<int> decode_graph_buckets(int max_num_seqs);
// The smallest bucket >= batch; 0 when batch exceeds them all.
int decode_graph_bucket(const std::vector<int>& buckets, int batch);

class DecodeGraphs {
 public:
  DecodeGraphs() = default;
  DecodeGraphs(const DecodeGraphs&) = delete;
  DecodeGraphs& operator=(const DecodeGraphs&) = delete;
  ~DecodeGraphs();

  bool has(int bucket) const { return exec_.count(bucket) != 0; }
  Status begin_capture(cudaStream_t stream);
  // Ends the capture begun on `stream` and keeps the instantiated graph for `bucket`.
  Status end_capture(int bucket, cudaStream_t stream);
  Status launch(int bucket, cudaStream_t stream) const;
  size_t size() const { return exec_.size(); }

 private:
  std::map<int, cudaGraphExec_t> exec_;
};

}  // namespace llmserve
