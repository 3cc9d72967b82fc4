// y[M, N] = x[M, K] . W[N, K]^T + bias[N] as one cuBLASLt matmul with the BIAS epilogue (the bias
// add fused into the GEMM's store): x bf16 rows of pitch ldx elements, W bf16 row-major, bias and
// y f32 (y rows of pitch ldy). Descriptors are made on the host per call and the algorithm is
// cached per shape, so calls are graph-capturable. Not thread-safe.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>

#include "engine/core/status.h"
#include "engine/runner/cuda/cublas_loader.h"

namespace llmserve {

class BiasGemm {
 public:
  // workspace: device memory the matmuls may use (shared with other work of the same stream).
  static Result<std::unique_ptr<BiasGemm>> create(void* workspace, size_t workspace_bytes);
  ~BiasGemm();
  BiasGemm(const BiasGemm&) = delete;
  BiasGemm& operator=(const BiasGemm&) = delete;

  Status run(const void* x, int64_t ldx, int64_t M, const void* w, int64_t N, int64_t K,
             const float* bias, float* y, int64_t ldy, cudaStream_t stream);

 private:
  BiasGemm(const CublasLtApi* lt, void* workspace, size_t bytes)
      : lt_(lt), workspace_(workspace), workspace_bytes_(bytes) {}

  const CublasLtApi* lt_;
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_;
  size_t workspace_bytes_;
  std::map<std::array<int64_t, 5>, cublasLtMatmulAlgo_t> algos_;  // (M, N, K, ldx, ldy)
};

}  // namespace llmserve
