#include "engine/runner/cuda/bias_gemm.h"

#include <string>

namespace llmserve {
namespace {

Status lt_status(cublasStatus_t st, const char* what) {
  if (st == CUBLAS_STATUS_SUCCESS) return Status::ok();
  return internal_error(std::string("cuda: cuBLASLt ") + what + " failed with status " +
                        std::to_string(static_cast<int>(st)));
}

// Owns the descriptors of one call.
struct LtCall {
  const CublasLtApi* lt;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~LtCall() {
    if (pref != nullptr) lt->pref_destroy(pref);
    if (d != nullptr) lt->layout_destroy(d);
    if (b != nullptr) lt->layout_destroy(b);
    if (a != nullptr) lt->layout_destroy(a);
    if (desc != nullptr) lt->desc_destroy(desc);
  }
};

}  // namespace

Result<std::unique_ptr<BiasGemm>> BiasGemm::create(void* workspace, size_t workspace_bytes) {
  LLMSERVE_ASSIGN_OR_RETURN(const CublasLtApi* lt, load_cublas_lt());
  std::unique_ptr<BiasGemm> g(new BiasGemm(lt, workspace, workspace_bytes));
  LLMSERVE_RETURN_IF_ERROR(lt_status(lt->create(&g->handle_), "create"));
  return g;
}

BiasGemm::~BiasGemm() {
  if (handle_ != nullptr) lt_->destroy(handle_);
}

// Column-major terms (cuBLAS's): D[N, M] = op(A)[N, K] . B[K, M] + bias[N], where A is W stored
// as [K, N] (ld K) taken transposed, B is x^T [K, M] (ld ldx), D is y^T [N, M] (ld ldy).
Status BiasGemm::run(const void* x, int64_t ldx, int64_t M, const void* w, int64_t N, int64_t K,
                     const float* bias, float* y, int64_t ldy, cudaStream_t stream) {
  LtCall c{lt_};
  LLMSERVE_RETURN_IF_ERROR(
      lt_status(lt_->desc_create(&c.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "descriptor"));
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
  const cudaDataType_t bias_type = CUDA_R_32F;
  LLMSERVE_RETURN_IF_ERROR(
      lt_status(lt_->desc_set(c.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "transa"));
  LLMSERVE_RETURN_IF_ERROR(
      lt_status(lt_->desc_set(c.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "transb"));
  LLMSERVE_RETURN_IF_ERROR(
      lt_status(lt_->desc_set(c.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue),
                "epilogue"));
  LLMSERVE_RETURN_IF_ERROR(lt_status(
      lt_->desc_set(c.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias), "bias"));
  LLMSERVE_RETURN_IF_ERROR(lt_status(
      lt_->desc_set(c.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof bias_type),
      "bias type"));
  const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  LLMSERVE_RETURN_IF_ERROR(
      lt_status(lt_->layout_create(&c.a, CUDA_R_16BF, u(K), u(N), K), "layout A"));
  LLMSERVE_RETURN_IF_ERROR(
      lt_status(lt_->layout_create(&c.b, CUDA_R_16BF, u(K), u(M), ldx), "layout B"));
  LLMSERVE_RETURN_IF_ERROR(
      lt_status(lt_->layout_create(&c.d, CUDA_R_32F, u(N), u(M), ldy), "layout D"));
  const std::array<int64_t, 5> key{M, N, K, ldx, ldy};
  auto it = algos_.find(key);
  if (it == algos_.end()) {
    LLMSERVE_RETURN_IF_ERROR(lt_status(lt_->pref_create(&c.pref), "preference"));
    const uint64_t ws = workspace_bytes_;
    LLMSERVE_RETURN_IF_ERROR(
        lt_status(lt_->pref_set(c.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws),
                  "workspace preference"));
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    LLMSERVE_RETURN_IF_ERROR(
        lt_status(lt_->heuristic(handle_, c.desc, c.a, c.b, c.d, c.d, c.pref, 1, &result, &found),
                  "heuristic"));
    if (found == 0) {
      return unimplemented("cuda: cuBLASLt has no bias-epilogue GEMM for M " + std::to_string(M) +
                           ", N " + std::to_string(N) + ", K " + std::to_string(K));
    }
    it = algos_.emplace(key, result.algo).first;
  }
  const float alpha = 1.0f, beta = 0.0f;
  return lt_status(lt_->matmul(handle_, c.desc, &alpha, w, c.a, x, c.b, &beta, y, c.d, y, c.d,
                               &it->second, workspace_, workspace_bytes_, stream),
                   "matmul");
}

}  // namespace llmserve
