// CUDA launchers of the mixture-of-experts FFN (the CPU twins: kernels/moe_routing.h and the
// CPU backend's expert loop). All pointers are device memory; bf16 buffers are uint16_t bit
// patterns. Each launcher enqueues on `stream` (no host synchronisation: the routing stays on
// the device, so a captured CUDA graph replays it) and returns the launch error.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace llmserve::kernels::cuda {

constexpr int kMoeTileRows = 32;  // grouped rows per tile of moe_grouped_gemm

// As kernels::moe_route: ids[T, k], weights[T, k] from logits[T, E] (softmax, top k with the
// lower index first on ties, divided by their sum when norm). Preconditions: 1 <= k <= 16,
// k <= E.
cudaError_t moe_route(const float* logits, int64_t T, int E, int k, bool norm, int32_t* ids,
                      float* weights, cudaStream_t stream);

// Tile entries moe_group writes for P = T x k pairs over E experts.
inline int64_t moe_max_tiles(int64_t pairs, int64_t E) {
  return (pairs + kMoeTileRows - 1) / kMoeTileRows + E;
}

// As kernels::moe_group (offsets[E + 1], rows[P], slot_row[P]), and the work list of
// moe_grouped_gemm: tiles[2 i], tiles[2 i + 1] = (expert, first grouped row) of the i-th tile of
// up to kMoeTileRows rows, experts in order; entries past the last are (-1, -1) up to
// moe_max_tiles(P, E). Precondition: E <= 8192.
cudaError_t moe_group(const int32_t* ids, int64_t T, int k, int E, int32_t* offsets, int32_t* rows,
                      int32_t* slot_row, int32_t* tiles, cudaStream_t stream);

// xg[r, 0..H) = x[rows[r] / k, 0..H) for r < P; x rows are x_stride elements apart.
cudaError_t moe_gather_bf16(const uint16_t* x, int64_t x_stride, const int32_t* rows, int k,
                            int64_t P, int64_t H, uint16_t* xg, cudaStream_t stream);

// y[r, 0..N) = x[r, 0..K) . W_e^T (f32 accumulate) for the rows r of every tile (e, r0): rows
// r0 .. min(r0 + kMoeTileRows, offsets[e + 1]). W_e = w + e * N * K, row-major [N, K] bf16; x
// rows K elements apart, y rows N floats apart.
struct MoeGemmArgs {
  const uint16_t* x = nullptr;
  const uint16_t* w = nullptr;
  const int32_t* tiles = nullptr;
  const int32_t* offsets = nullptr;
  int64_t max_tiles = 0;
  int64_t N = 0, K = 0;
  float* y = nullptr;
};
cudaError_t moe_grouped_gemm(const MoeGemmArgs& args, cudaStream_t stream);

// out[t, 0..H) = sum over j < k, in order, of weights[t k + j] * yg[slot_row[t k + j], 0..H).
cudaError_t moe_combine(const float* yg, const int32_t* slot_row, const float* weights, int64_t T,
                        int k, int64_t H, float* out, cudaStream_t stream);

}  // namespace llmserve::kernels::cuda
