#include "llmserve/kernels/kv_cache_ops.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace llmserve::kernels {
namespace {

void to_f16(const float* src, uint16_t* dst, int n) {
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < n; ++i) dst[i] = _cvtss_sh(src[i], _MM_FROUND_TO_NEAREST_INT);
}

// q[0..8) = clamp(round_to_nearest_even(x / s), -127, 127) for 8 floats x.
inline void quantize8(__m256 x, __m256 s, int8_t* q) {
  __m256 r = _mm256_round_ps(_mm256_div_ps(x, s), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  r = _mm256_min_ps(_mm256_max_ps(r, _mm256_set1_ps(-127.0f)), _mm256_set1_ps(127.0f));
  const __m256i i32 = _mm256_cvttps_epi32(r);
  const __m128i i16 =
      _mm_packs_epi32(_mm256_castsi256_si128(i32), _mm256_extracti128_si256(i32, 1));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(q), _mm_packs_epi16(i16, i16));
}

}  // namespace

void quantize_kv_row_int8(const float* x, int n, int8_t* q, uint16_t* scale) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 vmax = _mm256_setzero_ps();
  int i = 0;
  for (; i + 8 <= n; i += 8)
    vmax = _mm256_max_ps(vmax, _mm256_and_ps(_mm256_loadu_ps(x + i), abs_mask));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, vmax);
  float amax = *std::max_element(lanes, lanes + 8);
  for (; i < n; ++i) amax = std::max(amax, std::abs(x[i]));

  *scale = _cvtss_sh(std::min(amax / 127.0f, kMaxKvScale), _MM_FROUND_TO_NEAREST_INT);
  const float s = _cvtsh_ss(*scale);
  if (s == 0.0f) {
    std::memset(q, 0, n);
    return;
  }
  const __m256 vs = _mm256_set1_ps(s);
  i = 0;
  for (; i + 8 <= n; i += 8) quantize8(_mm256_loadu_ps(x + i), vs, q + i);
  if (i < n) {  // the tail through a zero-padded vector: the same arithmetic as the body
    alignas(32) float xt[8] = {};
    int8_t qt[8];
    std::memcpy(xt, x + i, (n - i) * sizeof(float));
    quantize8(_mm256_load_ps(xt), vs, qt);
    std::memcpy(q + i, qt, n - i);
  }
}

void write_kv(const KvCacheShape& shape, const float* k, const float* v,
              const int32_t* slot_mapping, int64_t T, void* k_cache, void* v_cache,
              uint16_t* k_scales, uint16_t* v_scales) {
  const int D = shape.head_dim;
  for (int64_t t = 0; t < T; ++t) {
    const int64_t slot = slot_mapping[t];
    if (slot < 0) continue;
    for (int h = 0; h < shape.num_kv_heads; ++h) {
      const int64_t src = (t * shape.num_kv_heads + h) * D;
      const int64_t dst = kv_cache_offset(shape, slot, h);
      switch (shape.dtype) {
        case KvDtype::kF16:
          to_f16(k + src, static_cast<uint16_t*>(k_cache) + dst, D);
          to_f16(v + src, static_cast<uint16_t*>(v_cache) + dst, D);
          break;
        case KvDtype::kInt8: {
          const int64_t si = kv_scale_offset(shape, slot, h);
          quantize_kv_row_int8(k + src, D, static_cast<int8_t*>(k_cache) + dst, k_scales + si);
          quantize_kv_row_int8(v + src, D, static_cast<int8_t*>(v_cache) + dst, v_scales + si);
          break;
        }
        case KvDtype::kF32:
          std::memcpy(static_cast<float*>(k_cache) + dst, k + src, D * sizeof(float));
          std::memcpy(static_cast<float*>(v_cache) + dst, v + src, D * sizeof(float));
          break;
        case KvDtype::kFp8:  // CUDA only (precondition)
          break;
      }
    }
  }
}

}  // namespace llmserve::kernels
