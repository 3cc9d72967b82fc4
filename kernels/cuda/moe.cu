#include "cuda_common.cuh"
#include "llmserve/kernels/cuda/moe.h"

namespace llmserve::kernels::cuda {
namespace {

using detail::bf16_bits_to_f32;

constexpr int kMaxTopK = 16;

// One thread per token: the softmax and the running top k (insertion, strict > keeps the lower
// index first), as the CPU twin.
__global__ void moe_route_kernel(const float* logits, int64_t T, int E, int k, bool norm,
                                 int32_t* ids, float* weights) {
  const int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (t >= T) return;
  const float* x = logits + t * E;
  float mx = x[0];
  for (int e = 1; e < E; ++e) mx = fmaxf(mx, x[e]);
  double sum = 0;
  for (int e = 0; e < E; ++e) sum += exp(static_cast<double>(x[e] - mx));
  int id[kMaxTopK];
  int n = 0;
  for (int e = 0; e < E; ++e) {
    if (n == k && !(x[e] > x[id[k - 1]])) continue;
    int i = n < k ? n++ : k - 1;
    while (i > 0 && x[e] > x[id[i - 1]]) {
      id[i] = id[i - 1];
      --i;
    }
    id[i] = e;
  }
  float w[kMaxTopK];
  float picked = 0;
  for (int j = 0; j < k; ++j) {
    w[j] = static_cast<float>(exp(static_cast<double>(x[id[j]] - mx)) / sum);
    picked += w[j];
  }
  for (int j = 0; j < k; ++j) {
    ids[t * k + j] = id[j];
    weights[t * k + j] = norm ? w[j] / picked : w[j];
  }
}

// One block: each thread owns experts e = tid, tid + blockDim, ... and scans the pairs in order
// (deterministic rows); thread 0 makes the offsets and the tile list in between.
__global__ void moe_group_kernel(const int32_t* ids, int64_t P, int E, int32_t* offsets,
                                 int32_t* rows, int32_t* slot_row, int32_t* tiles,
                                 int64_t max_tiles) {
  extern __shared__ int32_t start[];  // [E]
  for (int e = threadIdx.x; e < E; e += blockDim.x) {
    int32_t c = 0;
    for (int64_t p = 0; p < P; ++p) c += ids[p] == e;
    start[e] = c;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    int32_t off = 0;
    int64_t n = 0;
    for (int e = 0; e < E; ++e) {
      const int32_t c = start[e];
      offsets[e] = off;
      start[e] = off;
      for (int32_t r = 0; r < c; r += kMoeTileRows, ++n) {
        tiles[2 * n] = e;
        tiles[2 * n + 1] = off + r;
      }
      off += c;
    }
    offsets[E] = off;
    for (; n < max_tiles; ++n) tiles[2 * n] = tiles[2 * n + 1] = -1;
  }
  __syncthreads();
  for (int e = threadIdx.x; e < E; e += blockDim.x) {
    int32_t r = start[e];
    for (int64_t p = 0; p < P; ++p) {
      if (ids[p] != e) continue;
      rows[r] = static_cast<int32_t>(p);
      slot_row[p] = r;
      ++r;
    }
  }
}

__global__ void moe_gather_kernel(const uint16_t* x, int64_t x_stride, const int32_t* rows, int k,
                                  int64_t H, uint16_t* xg) {
  const int64_t r = blockIdx.x;
  const uint16_t* src = x + static_cast<int64_t>(rows[r] / k) * x_stride;
  for (int64_t i = threadIdx.x; i < H; i += blockDim.x) xg[r * H + i] = src[i];
}

constexpr int kTileN = 64, kTileK = 32, kThreads = 256;

// A kMoeTileRows x kTileN block of y per (tile, column block): x and W staged through shared
// memory in f32, each thread accumulating 2 rows x 4 columns.
__global__ void __launch_bounds__(kThreads) moe_gemm_kernel(MoeGemmArgs a) {
  const int e = a.tiles[2 * blockIdx.y];
  if (e < 0) return;
  const int r0 = a.tiles[2 * blockIdx.y + 1];
  const int rows = min(kMoeTileRows, a.offsets[e + 1] - r0);
  const int64_t n0 = static_cast<int64_t>(blockIdx.x) * kTileN;
  const uint16_t* w = a.w + static_cast<int64_t>(e) * a.N * a.K;
  __shared__ float xs[kMoeTileRows][kTileK + 1];
  __shared__ float ws[kTileN][kTileK + 1];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  float acc[2][4] = {};
  for (int64_t k0 = 0; k0 < a.K; k0 += kTileK) {
    for (int i = threadIdx.x; i < kMoeTileRows * kTileK; i += kThreads) {
      const int r = i / kTileK, c = i % kTileK;
      const int64_t kk = k0 + c;
      xs[r][c] = r < rows && kk < a.K ? bf16_bits_to_f32(a.x[(r0 + r) * a.K + kk]) : 0.0f;
    }
    for (int i = threadIdx.x; i < kTileN * kTileK; i += kThreads) {
      const int n = i / kTileK, c = i % kTileK;
      const int64_t kk = k0 + c, nn = n0 + n;
      ws[n][c] = nn < a.N && kk < a.K ? bf16_bits_to_f32(w[nn * a.K + kk]) : 0.0f;
    }
    __syncthreads();
#pragma unroll 8
    for (int c = 0; c < kTileK; ++c) {
      const float x0 = xs[ty * 2][c], x1 = xs[ty * 2 + 1][c];
      for (int j = 0; j < 4; ++j) {
        const float wv = ws[tx + 16 * j][c];
        acc[0][j] += x0 * wv;
        acc[1][j] += x1 * wv;
      }
    }
    __syncthreads();
  }
  for (int i = 0; i < 2; ++i) {
    const int r = ty * 2 + i;
    if (r >= rows) continue;
    for (int j = 0; j < 4; ++j) {
      const int64_t n = n0 + tx + 16 * j;
      if (n < a.N) a.y[(r0 + r) * a.N + n] = acc[i][j];
    }
  }
}

__global__ void moe_combine_kernel(const float* yg, const int32_t* slot_row, const float* weights,
                                   int k, int64_t H, float* out) {
  const int64_t t = blockIdx.x;
  for (int64_t h = threadIdx.x; h < H; h += blockDim.x) {
    float s = 0.0f;
    for (int j = 0; j < k; ++j) {
      s += weights[t * k + j] * yg[static_cast<int64_t>(slot_row[t * k + j]) * H + h];
    }
    out[t * H + h] = s;
  }
}

}  // namespace

cudaError_t moe_route(const float* logits, int64_t T, int E, int k, bool norm, int32_t* ids,
                      float* weights, cudaStream_t stream) {
  if (T <= 0) return cudaSuccess;
  if (k < 1 || k > kMaxTopK || k > E) return cudaErrorInvalidValue;
  moe_route_kernel<<<detail::grid_for(T, 128), 128, 0, stream>>>(logits, T, E, k, norm, ids,
                                                                 weights);
  return cudaGetLastError();
}

cudaError_t moe_group(const int32_t* ids, int64_t T, int k, int E, int32_t* offsets, int32_t* rows,
                      int32_t* slot_row, int32_t* tiles, cudaStream_t stream) {
  if (E <= 0 || E > 8192) return cudaErrorInvalidValue;
  const int64_t P = T * k;
  moe_group_kernel<<<1, 256, static_cast<size_t>(E) * sizeof(int32_t), stream>>>(
      ids, P, E, offsets, rows, slot_row, tiles, moe_max_tiles(P, E));
  return cudaGetLastError();
}

cudaError_t moe_gather_bf16(const uint16_t* x, int64_t x_stride, const int32_t* rows, int k,
                            int64_t P, int64_t H, uint16_t* xg, cudaStream_t stream) {
  if (P <= 0) return cudaSuccess;
  moe_gather_kernel<<<static_cast<unsigned>(P), 128, 0, stream>>>(x, x_stride, rows, k, H, xg);
  return cudaGetLastError();
}

cudaError_t moe_grouped_gemm(const MoeGemmArgs& a, cudaStream_t stream) {
  if (a.max_tiles <= 0 || a.N <= 0) return cudaSuccess;
  if (a.max_tiles > 65535) return cudaErrorInvalidValue;
  const dim3 grid(static_cast<unsigned>((a.N + kTileN - 1) / kTileN),
                  static_cast<unsigned>(a.max_tiles));
  moe_gemm_kernel<<<grid, kThreads, 0, stream>>>(a);
  return cudaGetLastError();
}

cudaError_t moe_combine(const float* yg, const int32_t* slot_row, const float* weights, int64_t T,
                        int k, int64_t H, float* out, cudaStream_t stream) {
  if (T <= 0) return cudaSuccess;
  moe_combine_kernel<<<static_cast<unsigned>(T), 128, 0, stream>>>(yg, slot_row, weights, k, H,
                                                                   out);
  return cudaGetLastError();
}

}  // namespace llmserve::kernels::cuda
