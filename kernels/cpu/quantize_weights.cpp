#include "llmserve/kernels/quantize_weights.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <vector>

#include "llmserve/kernels/dequantize.h"

namespace llmserve::kernels {
namespace {

constexpr int kSub = 32;  // Q4_K sub-block
constexpr int kQ4Max = 15;
constexpr int kCodeMax = 63;  // 6-bit Q4_K scale and min codes

// Nearest integer (ties to even) of |v| < 2^22 as a float, without a libm call: adding 1.5 x 2^23
// rounds away the fraction. Plain float arithmetic, so the fixed-length loops below vectorize.
float round_f(float v) {
  return (v + 12582912.0f) - 12582912.0f;
}

// q = clamp(round((x + m) * inv), 0, 15) for 32 elements.
void quants_f(const float* x, float m, float inv, float* q) {
  for (int i = 0; i < kSub; ++i) {
    const float v = std::min(std::max((x[i] + m) * inv, -1.0f), 16.0f);
    q[i] = std::min(std::max(round_f(v), 0.0f), static_cast<float>(kQ4Max));
  }
}

// Squared error of x ~ s * q - m with q = clamp(round((x + m) / s), 0, 15) (q = 0 when s is 0);
// the quants go to q.
float requant_error(const float* x, float s, float m, float* q) {
  quants_f(x, m, s > 0 ? 1.0f / s : 0.0f, q);
  float err = 0;
  for (int i = 0; i < kSub; ++i) {
    const float diff = s * q[i] - m - x[i];
    err += diff * diff;
  }
  return err;
}

// Least-squares s, m of x ~ s * q - m for fixed quants q, with m >= 0 (the format subtracts a
// non-negative min). False when q is constant or the fit has no positive scale.
bool fit_given_quants(const float* x, const float* q, float* s, float* m) {
  float sq = 0, sqq = 0, sx = 0, sqx = 0;
  for (int i = 0; i < kSub; ++i) {
    sq += q[i];
    sqq += q[i] * q[i];
    sx += x[i];
    sqx += q[i] * x[i];
  }
  const float det = kSub * sqq - sq * sq;
  if (!(det > 0)) return false;
  float scale = (kSub * sqx - sq * sx) / det;
  float offset = (sx - scale * sq) / kSub;  // x ~ scale * q + offset
  if (offset > 0) {                         // a positive offset is not representable: pin it to 0
    offset = 0;
    scale = sqx / sqq;
  }
  if (!(scale > 0)) return false;
  *s = scale;
  *m = -offset;
  return true;
}

// The (scale, min) of one sub-block of 32: quants from 21 step sizes around range / 15, each
// followed by a least-squares fit and a re-rounding; the least squared error wins, and is refined
// by up to two more rounds of fit and re-rounding.
void fit_sub_block(const float* x, float* scale, float* min) {
  float lo = 0, hi = -std::numeric_limits<float>::infinity();
  for (int i = 0; i < kSub; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  *min = -lo;
  if (!(hi > lo)) {  // all equal to lo <= 0: exact with scale 0
    *scale = 0;
    return;
  }
  float q[kSub], best_q[kSub];
  *scale = (hi - lo) / kQ4Max;
  float best = requant_error(x, *scale, *min, best_q);
  float s, m;
  for (int k = -10; k <= 10; ++k) {
    quants_f(x, -lo, (kQ4Max + 0.1f * static_cast<float>(k)) / (hi - lo), q);
    if (!fit_given_quants(x, q, &s, &m)) continue;
    const float err = requant_error(x, s, m, q);
    if (err < best) {
      best = err;
      *scale = s;
      *min = m;
      std::copy(q, q + kSub, best_q);
    }
  }
  for (int pass = 0; pass < 2 && fit_given_quants(x, best_q, &s, &m); ++pass) {
    const float err = requant_error(x, s, m, q);
    if (!(err < best)) break;
    best = err;
    *scale = s;
    *min = m;
    std::copy(q, q + kSub, best_q);
  }
}

int round_clamp(float v, int hi) {
  return static_cast<int>(std::min(std::max(round_f(std::min(std::max(v, -1.0f), hi + 1.0f)), 0.0f),
                                   static_cast<float>(hi)));
}

void quantize_block_q4_k(const float* x, BlockQ4_K* y) {
  float scales[8], mins[8], max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    fit_sub_block(x + kSub * j, &scales[j], &mins[j]);
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }
  y->d = fp32_to_fp16(max_scale / kCodeMax);
  y->dmin = fp32_to_fp16(max_min / kCodeMax);
  const float d = fp16_to_fp32(y->d), dmin = fp16_to_fp32(y->dmin);
  uint8_t L[kQKK];
  float trial[kSub];
  int ls[8], lm[8];
  for (int j = 0; j < 8; ++j) {
    const float* xs = x + kSub * j;
    const int ls0 = d > 0 ? round_clamp(scales[j] / d, kCodeMax) : 0;
    const int lm0 = dmin > 0 ? round_clamp(mins[j] / dmin, kCodeMax) : 0;
    float best = std::numeric_limits<float>::infinity();
    // The codes round the fitted pair independently: one step either way can fit better.
    for (int a = std::max(0, ls0 - 1); a <= std::min(kCodeMax, ls0 + 1); ++a) {
      for (int b = std::max(0, lm0 - 1); b <= std::min(kCodeMax, lm0 + 1); ++b) {
        if ((a != 0 && !(d > 0)) || (b != 0 && !(dmin > 0))) continue;
        const float err =
            requant_error(xs, d * static_cast<float>(a), dmin * static_cast<float>(b), trial);
        if (err < best) {
          best = err;
          ls[j] = a;
          lm[j] = b;
          for (int i = 0; i < kSub; ++i) L[kSub * j + i] = static_cast<uint8_t>(trial[i]);
        }
      }
    }
  }
  // 12 bytes: codes 0-3 in the low 6 bits of bytes 0-3 (scales) and 4-7 (mins); codes 4-7 as
  // nibbles in bytes 8-11, their top 2 bits in the top bits of bytes 0-7.
  for (int j = 0; j < 4; ++j) {
    y->scales[j] = static_cast<uint8_t>(ls[j] | ((ls[j + 4] >> 4) << 6));
    y->scales[j + 4] = static_cast<uint8_t>(lm[j] | ((lm[j + 4] >> 4) << 6));
    y->scales[j + 8] = static_cast<uint8_t>((ls[j + 4] & 0xF) | ((lm[j + 4] & 0xF) << 4));
  }
  // Each 64 elements: the first 32 in the low nibbles of 32 bytes, the next 32 in the high ones.
  for (int c = 0; c < kQKK / 64; ++c) {
    for (int l = 0; l < 32; ++l) {
      y->qs[32 * c + l] = static_cast<uint8_t>(L[64 * c + l] | (L[64 * c + 32 + l] << 4));
    }
  }
}

}  // namespace

bool can_quantize_to(DType target) {
  return target == DType::Q8_0 || target == DType::Q4_0 || target == DType::Q4_K;
}

bool can_quantize_row(DType target, int64_t K) {
  return can_quantize_to(target) && K > 0 && K % dtype_info(target).block_elems == 0;
}

void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
    float amax = 0;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    y[b].d = fp32_to_fp16(d);
    for (int j = 0; j < kQK; ++j) y[b].qs[j] = static_cast<int8_t>(std::round(x[j] * id));
  }
}

// Bit-identical to ggml's reference only when x * id and + 8.5 round separately: a fused
// multiply-add moves values that land on a quant boundary (F16 weights often do).
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("fp-contract=off")))
#endif
void quantize_row_q4_0(const float* x, BlockQ4_0* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
    float amax = 0, vmax = 0;  // the first element of largest magnitude, with its sign
    for (int j = 0; j < kQK; ++j) {
      if (std::fabs(x[j]) > amax) {
        amax = std::fabs(x[j]);
        vmax = x[j];
      }
    }
    const float d = vmax / -8.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    y[b].d = fp32_to_fp16(d);
    for (int j = 0; j < kQK / 2; ++j) {
      const float lo_x = x[j] * id, hi_x = x[j + 16] * id;  // separate statements: no fusing
      const int lo = std::min(15, static_cast<int>(static_cast<int8_t>(lo_x + 8.5f)));
      const int hi = std::min(15, static_cast<int>(static_cast<int8_t>(hi_x + 8.5f)));
      y[b].qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

void quantize_row_q4_k(const float* x, BlockQ4_K* y, int64_t n) {
  for (int64_t b = 0; b < n / kQKK; ++b) quantize_block_q4_k(x + b * kQKK, y + b);
}

void quantize_row(DType target, const float* x, void* dst, int64_t n) {
  switch (target) {
    case DType::Q8_0:
      return quantize_row_q8_0(x, static_cast<BlockQ8_0*>(dst), n);
    case DType::Q4_0:
      return quantize_row_q4_0(x, static_cast<BlockQ4_0*>(dst), n);
    case DType::Q4_K:
      return quantize_row_q4_k(x, static_cast<BlockQ4_K*>(dst), n);
    default:
      return;
  }
}

void quantize_matrix(ThreadPool& pool, DType src_type, const void* src, DType target, void* dst,
                     int64_t N, int64_t K) {
  const size_t src_row = row_bytes(src_type, K), dst_row = row_bytes(target, K);
  constexpr int64_t kRowsPerTask = 4;
  const auto* in = static_cast<const std::byte*>(src);
  auto* out = static_cast<std::byte*>(dst);
  pool.parallel_for((N + kRowsPerTask - 1) / kRowsPerTask, [&](int64_t b, int64_t e) {
    std::vector<float> row(static_cast<size_t>(K));
    for (int64_t r = b * kRowsPerTask; r < std::min(N, e * kRowsPerTask); ++r) {
      dequantize_row(src_type, in + static_cast<size_t>(r) * src_row, row.data(), K);
      quantize_row(target, row.data(), out + static_cast<size_t>(r) * dst_row, K);
    }
  });
}

}  // namespace llmserve::kernels
