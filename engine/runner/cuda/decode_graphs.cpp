#include "engine/runner/cuda/decode_graphs.h"

#include <algorithm>

#include "engine/runner/cuda/cuda_device.h"

namespace llmserve {

std::vector<int> decode_graph_buckets(int max_num_seqs) {
  std::vector<int> b;
  for (int s : {1, 2, 4, 8}) {
    if (s < max_num_seqs) b.push_back(s);
  }
  for (int s = 16; s < max_num_seqs; s += s < 64 ? 8 : 16) b.push_back(s);
  if (max_num_seqs > 0) b.push_back(max_num_seqs);
  return b;
}

int decode_graph_bucket(const std::vector<int>& buckets, int batch) {
  auto it = std::lower_bound(buckets.begin(), buckets.end(), batch);
  return it == buckets.end() ? 0 : *it;
}

DecodeGraphs::~DecodeGraphs() {
  for (auto& [bucket, exec] : exec_) cudaGraphExecDestroy(exec);
}

Status DecodeGraphs::begin_capture(cudaStream_t stream) {
  return cuda_status(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal),
                     "cudaStreamBeginCapture");
}

Status DecodeGraphs::end_capture(int bucket, cudaStream_t stream) {
  cudaGraph_t graph = nullptr;
  LLMSERVE_RETURN_IF_ERROR(
      cuda_status(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture"));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  LLMSERVE_RETURN_IF_ERROR(cuda_status(e, "cudaGraphInstantiate"));
  exec_[bucket] = exec;
  return Status::ok();
}

Status DecodeGraphs::launch(int bucket, cudaStream_t stream) const {
  auto it = exec_.find(bucket);
  if (it == exec_.end())
    return internal_error("cuda: no decode graph for bucket " + std::to_string(bucket));
  return cuda_status(cudaGraphLaunch(it->second, stream), "cudaGraphLaunch");
}

}  // namespace llmserve
