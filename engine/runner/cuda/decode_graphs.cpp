#include "engine/runner/cuda/decode_graphs.h"

#include <string>

#include "engine/runner/cuda/cuda_device.h"

namespace llmserve {

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

void DecodeGraphs::abandon_capture(cudaStream_t stream) {
  cudaGraph_t graph = nullptr;
  cudaStreamEndCapture(stream, &graph);
  if (graph != nullptr) cudaGraphDestroy(graph);
  cudaGetLastError();
}

Status DecodeGraphs::launch(int bucket, cudaStream_t stream) const {
  auto it = exec_.find(bucket);
  if (it == exec_.end())
    return internal_error("cuda: no decode graph for bucket " + std::to_string(bucket));
  return cuda_status(cudaGraphLaunch(it->second, stream), "cudaGraphLaunch");
}

}  // namespace llmserve
