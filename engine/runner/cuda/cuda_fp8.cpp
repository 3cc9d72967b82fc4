// CudaOps' FP8 e4m3 weights (docs/CUDA.md, "FP8 weights"): uploaded as stored (one byte per weight,
// rows padded to 16 bytes) with their f32 scale grid; M <= 8 rows run the FP8 GEMV (16-byte loads,
// widened in registers), more rows dequantize the matrix into one reused bf16 scratch and run the
// bf16 tensor-core GEMM (cuBLAS; bias fused by the same epilogue as bf16 weights).
#include <string>

#include "engine/runner/cuda/cuda_device.h"
#include "engine/runner/cuda/cuda_ops.h"
#include "llmserve/kernels/cuda/fp8_matmul.h"

namespace llmserve {

namespace kc = kernels::cuda;
using kernels::DType;

Result<Weight> CudaOps::prepare_fp8(const TensorView& t) {
  if (t.shape.size() != 2 || t.scales.empty()) {
    return invalid_argument("cuda ops: FP8 tensor " + t.name + " is not a matrix with scales");
  }
  const int64_t N = t.rows(), K = t.cols();
  const size_t bytes = static_cast<size_t>(N * K);
  const size_t scale_bytes = t.scales.count(N, K) * sizeof(float);
  LLMSERVE_ASSIGN_OR_RETURN(void* w, device_alloc(bytes));
  LLMSERVE_ASSIGN_OR_RETURN(void* s, device_alloc(scale_bytes));
  LLMSERVE_RETURN_IF_ERROR(upload(w, t.data, bytes));
  LLMSERVE_RETURN_IF_ERROR(upload(s, t.scales.data, scale_bytes));
  // The prefill path's bf16 copy of the largest FP8 matrix, allocated at set-up (before the KV
  // cache is planned, so the plan counts it).
  if (static_cast<int64_t>(bytes) > fp8_scratch_elems_) {
    LLMSERVE_ASSIGN_OR_RETURN(void* scratch, device_alloc(bytes * 2));
    fp8_scratch_ = static_cast<uint16_t*>(scratch);
    fp8_scratch_elems_ = static_cast<int64_t>(bytes);
  }
  LLMSERVE_RETURN_IF_ERROR(cuda_status(cudaStreamSynchronize(stream_), "FP8 weight upload"));
  return Weight{
      DType::F8_E4M3, w, N, K,
      kernels::Fp8Scales{static_cast<const float*>(s), t.scales.block_rows, t.scales.block_cols}};
}

void CudaOps::matmul_fp8(const void* x_bf16, int64_t x_stride, int64_t M, const Weight& w,
                         const float* bias, float* y, int64_t ldy) {
  const kc::Fp8Matrix m{static_cast<const uint8_t*>(w.data),
                        w.scales.data,
                        w.scales.block_rows,
                        w.scales.block_cols,
                        w.rows,
                        w.cols};
  if (M <= kc::kFp8GemvMaxRows && kc::fp8_gemv_supports(m) && x_stride % 8 == 0) {
    check(kc::fp8_gemv(static_cast<const uint16_t*>(x_bf16), x_stride, static_cast<int>(M), m, bias,
                       y, ldy, stream_),
          "fp8_gemv");
    return;
  }
  check(kc::fp8_dequantize_bf16(m, fp8_scratch_, stream_), "fp8_dequantize_bf16");
  gemm(x_bf16, x_stride, M, fp8_scratch_, w.rows, w.cols, bias, y, ldy);
}

}  // namespace llmserve
