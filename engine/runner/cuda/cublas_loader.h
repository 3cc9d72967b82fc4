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
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  decltype(&cublasGemmEx) gemm_ex = nullptr;
};

// Loads libcublas.so.13 (else libcublas.so) once per process; the same table after that.
Result<const CublasApi*> load_cublas();

}  // namespace llmserve
