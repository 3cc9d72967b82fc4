// FP8 e4m3 weights with their scales, as HF FP8 checkpoints store them (docs/QUANTIZE.md):
// W[n, k] ~ e4m3_to_float(q[n, k]) * scale(n, k), where one f32 scale covers a block of
// block_rows x block_cols elements: per tensor (N x K), per output channel (1 x K, the
// compressed-tensors / fbgemm "channel" layout) or 128 x 128 blocks (Qwen3-FP8, DeepSeek-V3;
// the last row / column block ragged when N or K is not a multiple).
//
// e4m3 ("e4m3fn"): 1 sign, 4 exponent (bias 7), 3 mantissa bits; no infinities; 0x7f / 0xff are
// NaN; largest finite 448; subnormals m * 2^-9.
#pragma once

#include <cstddef>
#include <cstdint>

#include "llmserve/kernels/dtype.h"
#include "llmserve/kernels/thread_pool.h"

namespace llmserve::kernels {

inline constexpr float kFp8E4m3Max = 448.0f;

float fp8_e4m3_to_float(uint8_t v);
// Round to nearest, ties to even (torch's float -> float8_e4m3fn); |x| beyond 448 saturates to
// +-448 (the published quantizers clamp before the cast); NaN -> 0x7f.
uint8_t float_to_fp8_e4m3(float x);

// The scale grid of one [N, K] matrix: data holds ceil(N / block_rows) x ceil(K / block_cols)
// f32 scales, row-major.
struct Fp8Scales {
  const float* data = nullptr;
  int64_t block_rows = 0, block_cols = 0;

  bool empty() const { return data == nullptr; }
  int64_t grid_rows(int64_t N) const { return (N + block_rows - 1) / block_rows; }
  int64_t grid_cols(int64_t K) const { return (K + block_cols - 1) / block_cols; }
  size_t count(int64_t N, int64_t K) const {
    return static_cast<size_t>(grid_rows(N) * grid_cols(K));
  }
  float at(int64_t n, int64_t k, int64_t K) const {
    return data[(n / block_rows) * grid_cols(K) + k / block_cols];
  }
};

// Row n of an FP8 matrix [N, K] as f32: out[k] = e4m3_to_float(q[n * K + k]) * scale(n, k), the
// product rounded once in f32.
void dequantize_fp8_row(const uint8_t* q, const Fp8Scales& scales, int64_t n, int64_t K,
                        float* out);

// model.quantize fp8: W[N, K] (F32 / F16 / BF16) -> e4m3 bytes q[N * K] and the scale grid of
// (block_rows x block_cols) blocks (scales: Fp8Scales::count floats), per block:
//   s = max|w| / 448 (f32; 1 for an all-zero block), q = e4m3(w / s) (f32 division, RNE),
// the rule of DeepSeek-V3's block quantizer; s is what the checkpoints store as weight_scale_inv.
// Row blocks are split over the pool.
void quantize_fp8_matrix(ThreadPool& pool, DType src_type, const void* src, int64_t N, int64_t K,
                         int64_t block_rows, int64_t block_cols, uint8_t* q, float* scales);

}  // namespace llmserve::kernels
