// CUDA launchers for the pieces that Qwen3, Gemma 3 and Phi-3 add to the Llama graph (twins of
// the CPU's rms_norm over head rows, add_normed, scale, softcap and gelu_tanh_mul). Device
// pointers, f32 unless said; each enqueues on `stream` and returns the launch error.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "llmserve/kernels/cuda/elementwise.h"

namespace llmserve::kernels::cuda {

// In place: every head row x[r, h * head_dim .. (h + 1) * head_dim) of rows r < rows (row pitch
// row_stride floats) becomes rms_norm(row) * w[head_dim].
cudaError_t head_rms_norm(float* x, int64_t row_stride, int64_t rows, int heads, int head_dim,
                          const float* w, float eps, cudaStream_t stream);

// residual[rows, dim] += rms_norm(x[rows, dim]) * w[dim] (Gemma's post-attention / post-FFN
// norms). x must not alias residual.
cudaError_t add_normed(float* residual, const float* x, const float* w, int64_t rows, int64_t dim,
                       float eps, cudaStream_t stream);

// x[i] *= s for i < n.
cudaError_t scale(float* x, int64_t n, float s, cudaStream_t stream);

// x[i] = cap * tanh(x[i] / cap) for i < n (cap > 0).
cudaError_t softcap(float* x, int64_t n, float cap, cudaStream_t stream);

// GeGLU rows: out = bf16(gelu_tanh(gate) * up), the operands as in silu_mul (SiluMulArgs),
// gelu_tanh(z) = 0.5 z (1 + tanh(sqrt(2 / pi) (z + 0.044715 z^3))).
cudaError_t gelu_tanh_mul(const SiluMulArgs& args, cudaStream_t stream);

}  // namespace llmserve::kernels::cuda
