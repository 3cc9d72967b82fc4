// FP8 e4m3 conversions, the dequantized rows and model.quantize fp8's block quantizer (fp8.h).
#include "llmserve/kernels/fp8.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "llmserve/kernels/dequantize.h"

namespace llmserve::kernels {
namespace {

float decode_e4m3(uint8_t v) {
  const int e = (v >> 3) & 0xf, m = v & 7;
  float a;
  if ((v & 0x7f) == 0x7f) {
    a = std::numeric_limits<float>::quiet_NaN();
  } else if (e == 0) {
    a = std::ldexp(static_cast<float>(m), -9);
  } else {
    a = std::ldexp(1.0f + static_cast<float>(m) / 8.0f, e - 7);
  }
  return (v & 0x80) != 0 ? -a : a;
}

const std::array<float, 256>& e4m3_table() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int v = 0; v < 256; ++v) t[static_cast<size_t>(v)] = decode_e4m3(static_cast<uint8_t>(v));
    return t;
  }();
  return table;
}

}  // namespace

float fp8_e4m3_to_float(uint8_t v) {
  return e4m3_table()[v];
}

uint8_t float_to_fp8_e4m3(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  const auto sign = static_cast<uint8_t>((bits >> 24) & 0x80);
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u) return 0x7f;  // NaN
  const float a = std::bit_cast<float>(abs);
  if (a >= 464.0f) return sign | 0x7e;  // 464 is the tie between 448 and 480: even is 448
  if (a < 0.015625f) {                  // below 2^-6: subnormal steps of 2^-9 (8 steps = 2^-6)
    return sign | static_cast<uint8_t>(std::nearbyint(a * 512.0f));
  }
  // Normal: keep 3 of f32's 23 mantissa bits, ties to even; a carry moves to the next exponent.
  const uint32_t rounded = (abs + 0x7ffffu + ((abs >> 20) & 1)) >> 20;
  return sign | static_cast<uint8_t>(rounded - ((127u - 7u) << 3));
}

void dequantize_fp8_row(const uint8_t* q, const Fp8Scales& scales, int64_t n, int64_t K,
                        float* out) {
  const std::array<float, 256>& t = e4m3_table();
  const uint8_t* row = q + n * K;
  for (int64_t k = 0; k < K; ++k) out[k] = t[row[k]] * scales.at(n, k, K);
}

void quantize_fp8_matrix(ThreadPool& pool, DType src_type, const void* src, int64_t N, int64_t K,
                         int64_t block_rows, int64_t block_cols, uint8_t* q, float* scales) {
  const Fp8Scales grid{scales, block_rows, block_cols};
  const int64_t gr = grid.grid_rows(N), gc = grid.grid_cols(K);
  const size_t src_row = row_bytes(src_type, K);
  pool.parallel_for(gr, [&](int64_t b0, int64_t b1) {
    std::vector<float> w(static_cast<size_t>(block_rows * K));
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t n0 = b * block_rows, rows = std::min(block_rows, N - n0);
      for (int64_t r = 0; r < rows; ++r) {
        dequantize_row(src_type, static_cast<const uint8_t*>(src) + (n0 + r) * src_row,
                       w.data() + r * K, K);
      }
      for (int64_t c = 0; c < gc; ++c) {
        const int64_t k0 = c * block_cols, k1 = std::min(K, k0 + block_cols);
        float amax = 0.0f;
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t k = k0; k < k1; ++k) amax = std::max(amax, std::fabs(w[r * K + k]));
        }
        const float s = amax > 0.0f ? amax / kFp8E4m3Max : 1.0f;
        scales[b * gc + c] = s;
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t k = k0; k < k1; ++k) {
            q[(n0 + r) * K + k] = float_to_fp8_e4m3(w[r * K + k] / s);
          }
        }
      }
    }
  });
}

}  // namespace llmserve::kernels
