// CUDA launchers for the element-wise ops of the Llama graph. All pointers are device memory;
// bf16 buffers are passed as uint16_t bit patterns. Each launcher enqueues on `stream` and
// returns the launch error (cudaSuccess when the kernel was queued).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace llmserve::kernels::cuda {

// out[T, dim] f32 = bf16 table rows ids[t]. Precondition: 0 <= ids[t] < vocab.
cudaError_t embedding_bf16(const uint16_t* table, int64_t dim, const int32_t* ids, int64_t T,
                           float* out, cudaStream_t stream);

// Rows of a SwiGLU: out[r, c] = bf16(silu(gate[r, c]) * up[r, c]) for [rows, cols], each
// operand with its own row stride (gate and up may be halves of one fused gate/up output). out
// may overlay gate's or up's memory when out_stride == 2 * in_stride (the f32 row pitch).
struct SiluMulArgs {
  const float* gate = nullptr;
  int64_t gate_stride = 0;  // floats
  const float* up = nullptr;
  int64_t up_stride = 0;  // floats
  uint16_t* out = nullptr;
  int64_t out_stride = 0;  // uint16 elements
  int64_t rows = 0, cols = 0;
};
cudaError_t silu_mul(const SiluMulArgs& args, cudaStream_t stream);

// out[r, dim] = x[rows[r], dim] for r < n; out must not alias x.
cudaError_t gather_rows(const float* x, int64_t dim, const int32_t* rows, int64_t n, float* out,
                        cudaStream_t stream);

// out[i] = bf16(x[i]) rounded to nearest even.
cudaError_t f32_to_bf16(const float* x, int64_t n, uint16_t* out, cudaStream_t stream);

// y[r, c] += bias[c] for y[rows, cols].
cudaError_t add_bias(float* y, const float* bias, int64_t rows, int64_t cols, cudaStream_t stream);

}  // namespace llmserve::kernels::cuda
