// cuBLAS opened at run time (dlopen), so binaries need no libcublas to start: machines without
// the CUDA libraries simply have no CUDA backend. Only the entry points CudaOps uses.
#pragma once

#include <cublas_v2.h>

#include "engine/core/status.h"

namespace llmserve {

struct CublasApi {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSetWorkspace_v2) set_workspace = nullptr;
  cublasStatus_t (*set_math_mode)(cublasHandle_t, cublasMath_t) = nullptr;
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                            const void*, const void*, cudaDataType, int, const void*, cudaDataType,
                            int, const void*, void*, cudaDataType, int, cublasComputeType_t,
                            cublasGemmAlgo_t) = nullptr;
};

// Loads libcublas.so.13 (else libcublas.so) once per process; the same table after that.
Result<const CublasApi*> load_cublas();

}  // namespace llmserve
