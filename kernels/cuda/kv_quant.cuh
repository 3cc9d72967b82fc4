// Device helpers of the quantized KV cache (paged_kv.h): the per-row quantization write_kv uses,
// and the exact 8-bit -> bf16 conversion the attention kernels run on shared-memory tiles (the
// scales are applied by the kernels in f32: K's to the scores, V's to the softmax weights).
#pragma once

#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "llmserve/kernels/kv_cache_ops.h"
#include "tensor_core.cuh"

namespace llmserve::kernels::cuda::detail {

// Largest quantized magnitude: the scale is f16(max|x| / kQuantMax).
template <KvDtype KT>
inline constexpr float kQuantMax = KT == KvDtype::kInt8 ? 127.0f : 448.0f;

// One element x / s (s > 0) as the cached byte.
template <KvDtype KT>
__device__ __forceinline__ uint8_t quantize_elem(float y) {
  if constexpr (KT == KvDtype::kInt8) {
    return static_cast<uint8_t>(static_cast<int8_t>(fminf(fmaxf(rintf(y), -127.0f), 127.0f)));
  } else {
    return static_cast<uint8_t>(__nv_cvt_float_to_fp8(y, __NV_SATFINITE, __NV_E4M3));
  }
}

// Four int8 (one word) as four bf16, exact: 2^23 + (x + 128) is built in an f32's mantissa
// (byte permutes), the offset subtracted, and the top halves are the bf16 bits.
__device__ __forceinline__ uint2 int8x4_to_bf16x4(uint32_t w) {
  const uint32_t u = w ^ 0x80808080u;
  constexpr uint32_t kMagic = 0x4b000000u;  // 2^23
  constexpr float kOffset = 8388736.0f;     // 2^23 + 128
  const float f0 = __uint_as_float(__byte_perm(u, kMagic, 0x7440)) - kOffset;
  const float f1 = __uint_as_float(__byte_perm(u, kMagic, 0x7441)) - kOffset;
  const float f2 = __uint_as_float(__byte_perm(u, kMagic, 0x7442)) - kOffset;
  const float f3 = __uint_as_float(__byte_perm(u, kMagic, 0x7443)) - kOffset;
  return make_uint2(__byte_perm(__float_as_uint(f0), __float_as_uint(f1), 0x7632),
                    __byte_perm(__float_as_uint(f2), __float_as_uint(f3), 0x7632));
}

// Two e4m3 (the low byte first) as bf16x2, exact (every e4m3 value is an f16 and a bf16).
__device__ __forceinline__ uint32_t e4m3x2_to_bf16x2(uint32_t two) {
  const __half2 h(__nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(two), __NV_E4M3));
  const float2 f = __half22float2(h);
  return pack_bf16x2(f.x, f.y);
}

// Sixteen cached bytes as sixteen bf16 (lo: elements 0..7, hi: 8..15).
template <KvDtype KT>
__device__ __forceinline__ void bytes16_to_bf16(uint4 x, uint4& lo, uint4& hi) {
  if constexpr (KT == KvDtype::kInt8) {
    const uint2 a = int8x4_to_bf16x4(x.x), b = int8x4_to_bf16x4(x.y);
    const uint2 c = int8x4_to_bf16x4(x.z), d = int8x4_to_bf16x4(x.w);
    lo = make_uint4(a.x, a.y, b.x, b.y);
    hi = make_uint4(c.x, c.y, d.x, d.y);
  } else {
    lo = make_uint4(e4m3x2_to_bf16x2(x.x & 0xffffu), e4m3x2_to_bf16x2(x.x >> 16),
                    e4m3x2_to_bf16x2(x.y & 0xffffu), e4m3x2_to_bf16x2(x.y >> 16));
    hi = make_uint4(e4m3x2_to_bf16x2(x.z & 0xffffu), e4m3x2_to_bf16x2(x.z >> 16),
                    e4m3x2_to_bf16x2(x.w & 0xffffu), e4m3x2_to_bf16x2(x.w >> 16));
  }
}

// Converts `n` 16-byte chunks of 8-bit rows of D elements (plain row-major in shared memory at
// src) to bf16 rows at dst, whose 16-byte chunk c of row r is at dst + offset(r, c): the tile
// layout the bf16 path loads. Threads tid, tid + nthreads, ... take one source chunk each. Lanes
// with chunk index bit 2 set store their upper half first, so that with an XOR swizzle by row
// the eight stores of a quarter warp hit eight different bank groups.
template <KvDtype KT, int D, typename Offset>
__device__ __forceinline__ void convert_tile_to_bf16(const unsigned char* src, unsigned char* dst,
                                                     int n, int tid, int nthreads, Offset offset) {
  constexpr int kSrcChunks = D / 16;
  for (int i = tid; i < n; i += nthreads) {
    const int r = i / kSrcChunks, c = i % kSrcChunks;
    uint4 lo, hi;
    bytes16_to_bf16<KT>(*reinterpret_cast<const uint4*>(src + i * 16), lo, hi);
    const bool swap = (c & 4) != 0;
    *reinterpret_cast<uint4*>(dst + offset(r, 2 * c + (swap ? 1 : 0))) = swap ? hi : lo;
    *reinterpret_cast<uint4*>(dst + offset(r, 2 * c + (swap ? 0 : 1))) = swap ? lo : hi;
  }
}

// f16 scale bits to f32.
__device__ __forceinline__ float scale_to_f32(uint16_t bits) {
  return __half2float(__ushort_as_half(bits));
}

}  // namespace llmserve::kernels::cuda::detail
