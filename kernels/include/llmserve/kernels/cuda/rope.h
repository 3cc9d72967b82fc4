// CUDA rotary embedding (twin of llmserve/kernels/rope.h) over x[T, heads, head_dim] f32 in
// place, device pointers. inv_freq[half] holds the (already scaled) frequencies; the first
// 2 * half dims of each head rotate by positions[t] * inv_freq[i] (angle in f32).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace llmserve::kernels::cuda {

// interleaved: pairs (x[2i], x[2i+1]); else (x[i], x[i + half]). Row t of x starts at
// x + t * row_stride (floats, >= heads * head_dim: x may be a slice of a fused QKV output).
// Precondition: 2*half <= head_dim.
cudaError_t apply_rope(float* x, int64_t row_stride, int64_t T, int heads, int head_dim,
                       const int32_t* positions, const float* inv_freq, int half, bool interleaved,
                       cudaStream_t stream, float cos_sin_scale = 1.0f);

}  // namespace llmserve::kernels::cuda
