// CUDA graphs of whole decode steps, one per batch-size bucket (graph_buckets.h), captured at
// start-up and replayed with the batch padded to its bucket.
#pragma once

#include <cuda_runtime_api.h>

#include <map>

#include "engine/core/status.h"

namespace llmserve {

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
  // Ends and drops a capture that failed part-way, clearing the error it left.
  static void abandon_capture(cudaStream_t stream);
  Status launch(int bucket, cudaStream_t stream) const;
  size_t size() const { return exec_.size(); }

 private:
  std::map<int, cudaGraphExec_t> exec_;
};

}  // namespace llmserve
