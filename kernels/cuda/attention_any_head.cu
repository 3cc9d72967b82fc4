// One warp per (query row, head): lane l holds elements l, l + 32, ... of q and of the output
// accumulator, each key's score is a warp sum, and the online softmax keeps its running max and sum
// in f32 (log2 domain). 8-bit caches: K's scale multiplies the score, V's the softmax weight.
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cmath>
#include <cstdint>

#include "cuda_common.cuh"
#include "kv_quant.cuh"
#include "llmserve/kernels/cuda/attention_any_head.h"

namespace llmserve::kernels::cuda {
namespace {

constexpr int kWarps = 4, kThreads = kWarps * 32, kMaxPerLane = 8;  // head_dim <= 256
constexpr int kMaxGridY = 65535, kMaxGridZ = 65535;
constexpr float kLog2e = 1.4426950408889634f;

template <KvDtype KT>
__device__ __forceinline__ float load_elem(const void* cache, int64_t i) {
  if constexpr (KT == KvDtype::kF16) {
    return detail::bf16_bits_to_f32(static_cast<const uint16_t*>(cache)[i]);
  } else if constexpr (KT == KvDtype::kInt8) {
    return static_cast<float>(static_cast<const int8_t*>(cache)[i]);
  } else {
    const __half h(
        __nv_cvt_fp8_to_halfraw(static_cast<const __nv_fp8_storage_t*>(cache)[i], __NV_E4M3));
    return __half2float(h);
  }
}

template <KvDtype KT>
__global__ void __launch_bounds__(kThreads)
    any_head_kernel(const PrefillAttentionParams p, const float scale_log2) {
  constexpr bool kQuant = KT != KvDtype::kF16;
  const int b = static_cast<int>(blockIdx.z), h = static_cast<int>(blockIdx.x);
  const int warp = static_cast<int>(threadIdx.x) >> 5, lane = static_cast<int>(threadIdx.x) & 31;
  const int i = static_cast<int>(blockIdx.y) * kWarps + warp;  // query index in the request
  const int seq_len = p.seq_lens[b];
  const bool decode = p.query_start == nullptr;
  const int64_t q0 = decode ? b : p.query_start[b];
  const int q_len = decode ? 1 : p.query_start[b + 1] - p.query_start[b];
  if (i >= q_len) return;
  const int D = p.kv.head_dim, per_lane = D / 32;
  const int64_t row = q0 + i;
  uint16_t* out = p.out + row * p.out_row_stride + static_cast<int64_t>(h) * D;
  if (decode && seq_len <= 0) {
    for (int j = 0; j < per_lane; ++j) out[lane + 32 * j] = 0;
    return;
  }
  const int kvh = h / (p.num_heads / p.kv.num_kv_heads);
  const int pos = seq_len - q_len + i;
  const int lo = p.sliding_window > 0 ? max(0, pos - p.sliding_window + 1) : 0;
  const int32_t* bt = p.kv.block_tables + static_cast<int64_t>(b) * p.kv.block_table_stride;
  const float* q = p.q + row * p.q_row_stride + static_cast<int64_t>(h) * D;
  float qv[kMaxPerLane], o[kMaxPerLane];
#pragma unroll
  for (int j = 0; j < kMaxPerLane; ++j) {
    qv[j] = j < per_lane ? q[lane + 32 * j] * scale_log2 : 0.0f;
    o[j] = 0.0f;
  }
  float m = -INFINITY, l = 0.0f;
  for (int key = lo; key <= pos; ++key) {
    const int64_t slot_row =
        (static_cast<int64_t>(bt[key / p.kv.block_size]) * p.kv.num_kv_heads + kvh) *
            p.kv.block_size +
        key % p.kv.block_size;
    const int64_t base = slot_row * D;
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < kMaxPerLane; ++j) {
      if (j < per_lane) s += qv[j] * load_elem<KT>(p.kv.k_cache, base + lane + 32 * j);
    }
    s = detail::warp_sum(s);
    float v_scale = 1.0f;
    if constexpr (kQuant) {
      s *= detail::scale_to_f32(p.kv.k_scales[slot_row]);
      v_scale = detail::scale_to_f32(p.kv.v_scales[slot_row]);
    }
    const float m_new = fmaxf(m, s);
    const float corr = exp2f(m - m_new), w = exp2f(s - m_new);
    l = l * corr + w;
    const float wv = w * v_scale;
#pragma unroll
    for (int j = 0; j < kMaxPerLane; ++j) {
      if (j < per_lane) o[j] = o[j] * corr + wv * load_elem<KT>(p.kv.v_cache, base + lane + 32 * j);
    }
    m = m_new;
  }
  const float inv = l > 0.0f ? 1.0f / l : 0.0f;
#pragma unroll
  for (int j = 0; j < kMaxPerLane; ++j) {
    if (j < per_lane) out[lane + 32 * j] = __bfloat16_as_ushort(__float2bfloat16_rn(o[j] * inv));
  }
}

}  // namespace

bool attention_any_head_supports(int head_dim) {
  return head_dim > 0 && head_dim % 32 == 0 && head_dim <= 32 * kMaxPerLane;
}

cudaError_t attention_any_head(const PrefillAttentionParams& p, cudaStream_t stream) {
  const PagedKvDevice& kv = p.kv;
  const int64_t row = static_cast<int64_t>(p.num_heads) * kv.head_dim;
  const bool quant = kv.dtype == KvDtype::kInt8 || kv.dtype == KvDtype::kFp8;
  const bool ok =
      attention_any_head_supports(kv.head_dim) && kv.num_kv_heads > 0 && p.num_heads > 0 &&
      p.num_heads % kv.num_kv_heads == 0 && kv.block_size > 0 && kv.k_cache != nullptr &&
      kv.v_cache != nullptr && kv.block_tables != nullptr && (kv.dtype == KvDtype::kF16 || quant) &&
      (!quant || (kv.k_scales != nullptr && kv.v_scales != nullptr)) && p.q != nullptr &&
      p.out != nullptr && p.seq_lens != nullptr && p.q_row_stride >= row &&
      p.out_row_stride >= row && p.scale > 0.0f && p.num_seqs >= 0 && p.num_seqs <= kMaxGridZ &&
      p.max_q_len >= 0 && p.sliding_window >= 0;
  if (!ok) return cudaErrorInvalidValue;
  const int max_q = p.query_start == nullptr ? 1 : p.max_q_len;
  if (p.num_seqs == 0 || max_q == 0) return cudaSuccess;
  const int64_t tiles = (static_cast<int64_t>(max_q) + kWarps - 1) / kWarps;
  if (tiles > kMaxGridY) return cudaErrorInvalidValue;
  const dim3 grid(static_cast<unsigned>(p.num_heads), static_cast<unsigned>(tiles),
                  static_cast<unsigned>(p.num_seqs));
  const float scale_log2 = p.scale * kLog2e;
  switch (kv.dtype) {
    case KvDtype::kInt8:
      any_head_kernel<KvDtype::kInt8><<<grid, kThreads, 0, stream>>>(p, scale_log2);
      break;
    case KvDtype::kFp8:
      any_head_kernel<KvDtype::kFp8><<<grid, kThreads, 0, stream>>>(p, scale_log2);
      break;
    default:
      any_head_kernel<KvDtype::kF16><<<grid, kThreads, 0, stream>>>(p, scale_log2);
      break;
  }
  return cudaGetLastError();
}

}  // namespace llmserve::kernels::cuda
