// Paged KV cache writes. One layer's cache for K (and one for V) is
// [num_blocks, num_kv_heads, block_size, head_dim] (HND) of f32 or IEEE f16 elements; token slot
// s lives in block s / block_size at offset s % block_size.
#pragma once

#include <cstdint>

namespace llmserve::kernels {

enum class KvDtype { kF32, kF16 };

inline int kv_dtype_bytes(KvDtype d) {
  return d == KvDtype::kF16 ? 2 : 4;
}

struct KvCacheShape {
  int64_t num_blocks;
  int num_kv_heads;
  int block_size;
  int head_dim;
  KvDtype dtype = KvDtype::kF32;  // element type of both caches
};

// Element (not byte) offset of (slot, kv_head) in a layer's cache: the start of that head_dim row.
inline int64_t kv_cache_offset(const KvCacheShape& s, int64_t slot, int kv_head) {
  const int64_t block = slot / s.block_size, off = slot % s.block_size;
  return ((block * s.num_kv_heads + kv_head) * s.block_size + off) * s.head_dim;
}

// Scatters k[T, num_kv_heads, head_dim] and v (same shape, f32) to slots slot_mapping[T] of
// caches of shape.dtype (f16: rounded to nearest even). Slots < 0 are skipped (padding).
// Preconditions: slots < num_blocks * block_size.
void write_kv(const KvCacheShape& shape, const float* k, const float* v,
              const int32_t* slot_mapping, int64_t T, void* k_cache, void* v_cache);

}  // namespace llmserve::kernels
