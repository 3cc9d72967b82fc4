// CUDA matmuls over FP8 e4m3 weights kept as stored (docs/CUDA.md, "FP8 weights"): W [N, K]
// row-major bytes and its f32 scale grid (kernels/fp8.h: one scale per block_rows x block_cols
// block), x bf16 rows of pitch ldx elements (the CUDA backend's GEMM inputs), y f32 rows of pitch
// ldy. Each launcher enqueues on `stream` and returns the launch error.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace llmserve::kernels::cuda {

inline constexpr int kFp8GemvMaxRows = 8;

struct Fp8Matrix {
  const uint8_t* w = nullptr;     // [N, K] e4m3 bytes, rows 16-byte aligned when gemv runs
  const float* scales = nullptr;  // [ceil(N / block_rows), ceil(K / block_cols)]
  int64_t block_rows = 0, block_cols = 0;
  int64_t N = 0, K = 0;
};

// The decode GEMV applies: K % 16 == 0 and each 16 columns in one scale block (block_cols a
// multiple of 16, or the whole row).
bool fp8_gemv_supports(const Fp8Matrix& m);

// y[m, n] = sum_k x[m, k] * e4m3(W[n, k]) * scale(n, k) (+ bias[n] when given) for M <=
// kFp8GemvMaxRows: one warp per output row, each lane reading 16 weight bytes per load (uint4)
// and widening them in registers (cvt e4m3x2 -> f16x2 on sm_89+, emulated before), a partial
// sum per 16 columns in f32 times its scale, a warp reduction. Precondition: fp8_gemv_supports.
cudaError_t fp8_gemv(const uint16_t* x, int64_t ldx, int M, const Fp8Matrix& m, const float* bias,
                     float* y, int64_t ldy, cudaStream_t stream);

// out[N, K] bf16 = bf16(e4m3(W[n, k]) * scale(n, k)): the prefill path's dequantized copy, which
// a bf16 tensor-core GEMM then reads (one matrix at a time, into one reused scratch buffer).
cudaError_t fp8_dequantize_bf16(const Fp8Matrix& m, uint16_t* out, cudaStream_t stream);

}  // namespace llmserve::kernels::cuda
