// Host side of the quantized KV-cache tests: e4m3 encoding, the per-row quantization rules of
// paged_kv.h (int8 through the CPU's kernels::quantize_kv_row_int8), paged int8 / e4m3 caches
// with their scales and dequantized copies, and double-precision attention over f32 pages.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "llmserve/kernels/dequantize.h"
#include "llmserve/kernels/kv_cache_ops.h"

namespace llmserve::cuda_test {

inline float e4m3_to_float(uint8_t b) {
  const int e = (b >> 3) & 15, m = b & 7;
  if (e == 15 && m == 7) return std::numeric_limits<float>::quiet_NaN();
  const float mag = e == 0 ? std::ldexp(m / 8.0f, -6) : std::ldexp(1.0f + m / 8.0f, e - 7);
  return (b & 0x80) != 0 ? -mag : mag;
}

// Round to nearest even, saturating to +-448 (CUDA's __NV_SATFINITE); the sign of zero kept.
inline uint8_t float_to_e4m3(float x) {
  if (std::isnan(x)) return 0x7f;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0;
  const double a = std::fabs(static_cast<double>(x));
  if (a >= 448.0) return sign | 0x7e;
  int lo = 0;  // largest code not above a (codes 0..0x7e increase in magnitude)
  while (lo < 0x7e && e4m3_to_float(static_cast<uint8_t>(lo + 1)) <= a) ++lo;
  const double below = a - e4m3_to_float(static_cast<uint8_t>(lo));
  const double above = e4m3_to_float(static_cast<uint8_t>(lo + 1)) - a;
  const int code = below < above ? lo : below > above ? lo + 1 : ((lo & 1) != 0 ? lo + 1 : lo);
  return static_cast<uint8_t>(sign | code);
}

// The e4m3 rule: s = f16(min(max|x| / 448, 65504)), q = e4m3(x / s), zeros when s == 0.
inline void quantize_row_fp8(const float* x, int n, uint8_t* q, uint16_t* scale) {
  float amax = 0.0f;
  for (int i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
  *scale = kernels::fp32_to_fp16(std::min(amax / 448.0f, kernels::kMaxKvScale));
  const float s = kernels::fp16_to_fp32(*scale);
  for (int i = 0; i < n; ++i) q[i] = s == 0.0f ? uint8_t{0} : float_to_e4m3(x[i] / s);
}

inline void quantize_row(kernels::KvDtype dtype, const float* x, int n, uint8_t* q,
                         uint16_t* scale) {
  if (dtype == kernels::KvDtype::kInt8) {
    kernels::quantize_kv_row_int8(x, n, reinterpret_cast<int8_t*>(q), scale);
  } else {
    quantize_row_fp8(x, n, q, scale);
  }
}

inline float dequantize_elem(kernels::KvDtype dtype, uint8_t q, uint16_t scale) {
  const float v = dtype == kernels::KvDtype::kInt8 ? static_cast<float>(static_cast<int8_t>(q))
                                                   : e4m3_to_float(q);
  return v * kernels::fp16_to_fp32(scale);
}

// One layer's paged int8 / e4m3 K and V with their scales, and f32 copies: `f32` the values
// written, `deq` their dequantization. Unwritten slots hold 0x7f bytes (an e4m3 NaN), NaN
// scales and NaN copies, so a kernel that uses one shows it.
struct QuantPages {
  kernels::KvCacheShape shape;
  std::vector<uint8_t> k, v;
  std::vector<uint16_t> ks, vs;
  std::vector<float> k_f32, v_f32, k_deq, v_deq;

  QuantPages(kernels::KvDtype dtype, int64_t num_blocks, int num_kv_heads, int block_size,
             int head_dim)
      : shape{num_blocks, num_kv_heads, block_size, head_dim, dtype} {
    const size_t rows = static_cast<size_t>(num_blocks) * num_kv_heads * block_size;
    const size_t elems = rows * static_cast<size_t>(head_dim);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    k.assign(elems, 0x7f);
    v.assign(elems, 0x7f);
    ks.assign(rows, 0x7e00);
    vs.assign(rows, 0x7e00);
    for (auto* f : {&k_f32, &v_f32, &k_deq, &v_deq}) f->assign(elems, nan);
  }

  // Quantizes rows kx, vx [head_dim] into (slot, kv_head).
  void write(int64_t slot, int kv_head, const float* kx, const float* vx) {
    const int D = shape.head_dim;
    const int64_t at = kernels::kv_cache_offset(shape, slot, kv_head);
    const int64_t si = kernels::kv_scale_offset(shape, slot, kv_head);
    quantize_row(shape.dtype, kx, D, k.data() + at, ks.data() + si);
    quantize_row(shape.dtype, vx, D, v.data() + at, vs.data() + si);
    for (int d = 0; d < D; ++d) {
      k_f32[at + d] = kx[d];
      v_f32[at + d] = vx[d];
      k_deq[at + d] = dequantize_elem(shape.dtype, k[at + d], ks[si]);
      v_deq[at + d] = dequantize_elem(shape.dtype, v[at + d], vs[si]);
    }
  }
};

// A batch of requests over scattered pages: request r holds lens[r] tokens in table row r.
struct ScatteredPages {
  QuantPages pages;
  std::vector<int32_t> lens, table;
  int64_t width = 0;  // table row width
};

// K/V ~ U[-1, 1] (seed + 1) quantized through QuantPages::write into pages shuffled by seed;
// unused table entries point at a spare page.
inline ScatteredPages scattered_pages(kernels::KvDtype dtype, int D, int nkv,
                                      const std::vector<int32_t>& lens, uint32_t seed) {
  const int bs = 16;
  int64_t total = 0, width = 1;
  for (int32_t l : lens) {
    total += (l + bs - 1) / bs;
    width = std::max<int64_t>(width, (l + bs - 1) / bs);
  }
  ScatteredPages p{QuantPages(dtype, total + 3, nkv, bs, D), lens, {}, width + 1};
  std::vector<int32_t> perm(static_cast<size_t>(total + 3));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937(seed));
  p.table.assign(lens.size() * static_cast<size_t>(p.width), perm.back());  // a spare page
  std::mt19937 rng(seed + 1);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> kx(static_cast<size_t>(D)), vx(kx.size());
  size_t next = 0;
  for (size_t r = 0; r < lens.size(); ++r) {
    int32_t* row = p.table.data() + r * static_cast<size_t>(p.width);
    for (int j = 0; j < (lens[r] + bs - 1) / bs; ++j) row[j] = perm[next++];
    for (int pos = 0; pos < lens[r]; ++pos) {
      for (int h = 0; h < nkv; ++h) {
        for (int d = 0; d < D; ++d) {
          kx[static_cast<size_t>(d)] = u(rng);
          vx[static_cast<size_t>(d)] = u(rng);
        }
        p.pages.write(int64_t{row[pos / bs]} * bs + pos % bs, h, kx.data(), vx.data());
      }
    }
  }
  return p;
}

// out[num_heads * D] for one query q[num_heads * D] over positions [first, n) of a request whose
// pages are table[], in double: softmax(scale q . k) v with K/V rows from kp / vp (f32 pages of
// shape s), kv head h / (num_heads / num_kv_heads). first > 0: a sliding window's start.
inline void reference_attention(const kernels::KvCacheShape& s, const float* kp, const float* vp,
                                const int32_t* table, int n, const float* q, int num_heads,
                                double scale, float* out, int first = 0) {
  const int D = s.head_dim, group = num_heads / s.num_kv_heads;
  std::vector<double> w(static_cast<size_t>(n));
  std::vector<double> o(static_cast<size_t>(D));
  for (int h = 0; h < num_heads; ++h) {
    const int kvh = h / group;
    double mx = -1e300;
    for (int j = first; j < n; ++j) {
      const int64_t slot = int64_t{table[j / s.block_size]} * s.block_size + j % s.block_size;
      const float* kr = kp + kernels::kv_cache_offset(s, slot, kvh);
      double dot = 0.0;
      for (int d = 0; d < D; ++d) dot += static_cast<double>(q[h * D + d]) * kr[d];
      w[static_cast<size_t>(j)] = dot * scale;
      mx = std::max(mx, w[static_cast<size_t>(j)]);
    }
    double sum = 0.0;
    std::fill(o.begin(), o.end(), 0.0);
    for (int j = first; j < n; ++j) {
      const int64_t slot = int64_t{table[j / s.block_size]} * s.block_size + j % s.block_size;
      const float* vr = vp + kernels::kv_cache_offset(s, slot, kvh);
      const double p = std::exp(w[static_cast<size_t>(j)] - mx);
      sum += p;
      for (int d = 0; d < D; ++d) o[static_cast<size_t>(d)] += p * vr[d];
    }
    for (int d = 0; d < D; ++d) {
      out[h * D + d] = n > 0 ? static_cast<float>(o[static_cast<size_t>(d)] / sum) : 0.0f;
    }
  }
}

// Largest |a - b| (NaN counts as infinite).
inline double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0.0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const double d = std::fabs(static_cast<double>(a[i]) - b[i]);
    m = std::isnan(d) ? std::numeric_limits<double>::infinity() : std::max(m, d);
  }
  return m;
}

}  // namespace llmserve::cuda_test
