// cuBLAS opened at run time (dlopen), so binaries need no libcublas to start: machines without
// the CUDA libraries simply have no CUDA backend. Only the entry points CudaOps uses.
#pragma once

#include <cublasLt.h>
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

// cuBLASLt, for GEMMs with a bias epilogue (one kernel for y = x . W^T + b).
struct CublasLtApi {
  decltype(&cublasLtCreate) create = nullptr;
  decltype(&cublasLtDestroy) destroy = nullptr;
  decltype(&cublasLtMatmulDescCreate) desc_create = nullptr;
  decltype(&cublasLtMatmulDescDestroy) desc_destroy = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) desc_set = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) layout_create = nullptr;
  decltype(&cublasLtMatrixLayoutDestroy) layout_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) pref_create = nullptr;
  decltype(&cublasLtMatmulPreferenceDestroy) pref_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) pref_set = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&cublasLtMatmul) matmul = nullptr;
};

// Loads libcublas.so.13 (else libcublas.so) once per process; the same table after that.
Result<const CublasApi*> load_cublas();
// Loads libcublasLt.so.13 (else libcublasLt.so) likewise.
Result<const CublasLtApi*> load_cublas_lt();

}  // namespace llmserve
