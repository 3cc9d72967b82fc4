#include "llmserve/kernels/kv_cache_ops.h"

#include <cstring>

namespace llmserve::kernels {

void write_kv(const KvCacheShape& shape, const float* k, const float* v,
              const int32_t* slot_mapping, int64_t T, float* k_cache, float* v_cache) {
  const size_t row = static_cast<size_t>(shape.head_dim) * sizeof(float);
  for (int64_t t = 0; t < T; ++t) {
    const int64_t slot = slot_mapping[t];
    if (slot < 0) continue;
    for (int h = 0; h < shape.num_kv_heads; ++h) {
      const int64_t src = (t * shape.num_kv_heads + h) * shape.head_dim;
      const int64_t dst = kv_cache_offset(shape, slot, h);
      std::memcpy(k_cache + dst, k + src, row);
      std::memcpy(v_cache + dst, v + src, row);
    }
  }
}

}  // namespace llmserve::kernels
