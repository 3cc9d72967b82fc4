#include "llmserve/kernels/kv_cache_ops.h"

#include <immintrin.h>

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

}  // namespace

void write_kv(const KvCacheShape& shape, const float* k, const float* v,
              const int32_t* slot_mapping, int64_t T, void* k_cache, void* v_cache) {
  const int D = shape.head_dim;
  for (int64_t t = 0; t < T; ++t) {
    const int64_t slot = slot_mapping[t];
    if (slot < 0) continue;
    for (int h = 0; h < shape.num_kv_heads; ++h) {
      const int64_t src = (t * shape.num_kv_heads + h) * D;
      const int64_t dst = kv_cache_offset(shape, slot, h);
      if (shape.dtype == KvDtype::kF16) {
        to_f16(k + src, static_cast<uint16_t*>(k_cache) + dst, D);
        to_f16(v + src, static_cast<uint16_t*>(v_cache) + dst, D);
      } else {
        std::memcpy(static_cast<float*>(k_cache) + dst, k + src, D * sizeof(float));
        std::memcpy(static_cast<float*>(v_cache) + dst, v + src, D * sizeof(float));
      }
    }
  }
}

}  // namespace llmserve::kernels
