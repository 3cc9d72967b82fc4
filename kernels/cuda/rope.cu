#include "cuda_common.cuh"
#include "llmserve/kernels/cuda/rope.h"

namespace llmserve::kernels::cuda {
namespace {

// One block per token; threads walk (head, pair) indices.
__global__ void rope_kernel(float* x, int64_t row_stride, int heads, int head_dim,
                            const int32_t* positions, const float* inv_freq, int half,
                            bool interleaved, float cs_scale) {
  const int64_t t = blockIdx.x;
  const float pos = static_cast<float>(positions[t]);
  for (int j = threadIdx.x; j < heads * half; j += blockDim.x) {
    const int h = j / half, i = j % half;
    float s, c;
    sincosf(pos * inv_freq[i], &s, &c);
    s *= cs_scale;
    c *= cs_scale;
    float* v = x + t * row_stride + static_cast<int64_t>(h) * head_dim;
    const int a = interleaved ? 2 * i : i;
    const int b = interleaved ? 2 * i + 1 : i + half;
    const float x0 = v[a], x1 = v[b];
    v[a] = x0 * c - x1 * s;
    v[b] = x0 * s + x1 * c;
  }
}

}  // namespace

cudaError_t apply_rope(float* x, int64_t row_stride, int64_t T, int heads, int head_dim,
                       const int32_t* positions, const float* inv_freq, int half, bool interleaved,
                       cudaStream_t stream, float cos_sin_scale) {
  if (T <= 0 || half <= 0) return cudaSuccess;
  if (2 * half > head_dim || row_stride < static_cast<int64_t>(heads) * head_dim) {
    return cudaErrorInvalidValue;
  }
  rope_kernel<<<static_cast<unsigned>(T), 128, 0, stream>>>(
      x, row_stride, heads, head_dim, positions, inv_freq, half, interleaved, cos_sin_scale);
  return cudaGetLastError();
}

}  // namespace llmserve::kernels::cuda
