// Paged KV cache writes. One layer's cache for K (and one for V) is
// [num_blocks, num_kv_heads, block_size, head_dim] (HND) of f32, IEEE f16 or int8 elements; token
// slot s lives in block s / block_size at offset s % block_size. Quantized caches (int8; fp8 e4m3
// on CUDA) keep one f16 scale per (token slot, kv head) beside the pages, in arrays of
// [num_blocks, num_kv_heads, block_size] per layer for K and for V: element i of a row is
// q[i] * scale (symmetric, scale = max |x| / 127 for int8, rounded to f16 first).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace llmserve::kernels {

enum class KvDtype { kF32, kF16, kInt8, kFp8 };  // kFp8: e4m3, CUDA only

// Bytes of one cached element.
inline int kv_dtype_bytes(KvDtype d) {
  switch (d) {
    case KvDtype::kF32:
      return 4;
    case KvDtype::kF16:
      return 2;
    case KvDtype::kInt8:
    case KvDtype::kFp8:
      break;
  }
  return 1;
}

// True for the dtypes that keep a per-(token, kv head) scale.
inline bool kv_dtype_scaled(KvDtype d) {
  return d == KvDtype::kInt8 || d == KvDtype::kFp8;
}

inline constexpr int kKvScaleBytes = 2;  // f16
// The largest scale, the largest finite f16: max|x| / qmax is clamped to it before rounding, so a
// huge row saturates instead of getting an infinite scale (CPU and CUDA alike).
inline constexpr float kMaxKvScale = 65504.0f;

// Bytes one token's row of one kv head takes in one of K or V, its scale included.
inline int64_t kv_head_row_bytes(KvDtype d, int64_t head_dim) {
  return head_dim * kv_dtype_bytes(d) + (kv_dtype_scaled(d) ? kKvScaleBytes : 0);
}

inline const char* kv_dtype_name(KvDtype d) {
  switch (d) {
    case KvDtype::kF32:
      return "f32";
    case KvDtype::kF16:
      return "f16";
    case KvDtype::kInt8:
      return "int8";
    case KvDtype::kFp8:
      break;
  }
  return "fp8";
}

// "f32" | "f16" | "int8" | "fp8"; nullopt for anything else.
inline std::optional<KvDtype> parse_kv_dtype(std::string_view s) {
  for (KvDtype d : {KvDtype::kF32, KvDtype::kF16, KvDtype::kInt8, KvDtype::kFp8}) {
    if (s == kv_dtype_name(d)) return d;
  }
  return std::nullopt;
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

// Index of (slot, kv_head)'s scale in a layer's scale array: kv_cache_offset / head_dim.
inline int64_t kv_scale_offset(const KvCacheShape& s, int64_t slot, int kv_head) {
  const int64_t block = slot / s.block_size, off = slot % s.block_size;
  return (block * s.num_kv_heads + kv_head) * s.block_size + off;
}

// Scatters k[T, num_kv_heads, head_dim] and v (same shape, f32) to slots slot_mapping[T] of
// caches of shape.dtype (f16: rounded to nearest even; int8: quantized per (token, kv head), the
// f16 scales written to k_scales / v_scales, which int8 requires). Slots < 0 are skipped
// (padding). Preconditions: slots < num_blocks * block_size; dtype is not kFp8.
void write_kv(const KvCacheShape& shape, const float* k, const float* v,
              const int32_t* slot_mapping, int64_t T, void* k_cache, void* v_cache,
              uint16_t* k_scales = nullptr, uint16_t* v_scales = nullptr);

// The int8 quantization of one row x[n] (the rule above): q[n] and its f16 scale bits.
void quantize_kv_row_int8(const float* x, int n, int8_t* q, uint16_t* scale);

}  // namespace llmserve::kernels
