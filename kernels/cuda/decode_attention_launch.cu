// Paged decode attention: argument checks, the partial kernel's launch (decode_attention.cu)
// and the merge kernel, which combines the partial results of a request's splits with
// log-sum-exp (D / 4 threads per (request, head), 4 elements each).
#include "cuda_common.cuh"
#include "decode_attention_internal.cuh"
#include "llmserve/kernels/cuda/attention.h"
#include "llmserve/kernels/cuda/decode_attention.h"
#include "llmserve/kernels/cuda/decode_plan.h"
#include "tensor_core.cuh"

namespace llmserve::kernels::cuda {
namespace {

using detail::pack_bf16x2;
constexpr int kHeadTile = detail::kDecodeHeadTile;
constexpr int kMaxHeadTiles = detail::kDecodeMaxHeadTiles;
constexpr int kMergeThreads = 128;
constexpr float kLog2e = 1.4426950408889634f;

struct MergeArgs {
  const int32_t* plan;
  int64_t merge_offset;  // decode_plan_merge_offset(capacity)
  const float* ws_o;
  const float* ws_ml;
  uint16_t* out;
  int64_t out_stride;
  int num_heads;
};

// D / 4 threads per (request, head), 4 elements each; grid (head blocks, requests).
template <int D>
__global__ void __launch_bounds__(kMergeThreads) decode_merge_kernel(MergeArgs a) {
  constexpr int TPH = D / 4, HPB = kMergeThreads / TPH;
  const int b = static_cast<int>(blockIdx.y);
  const int h = static_cast<int>(blockIdx.x) * HPB + static_cast<int>(threadIdx.x) / TPH;
  const int t = static_cast<int>(threadIdx.x) % TPH;
  if (h >= a.num_heads) return;
  int first = 0, n = 0;
  if (b < a.plan[1]) {
    first = a.plan[a.merge_offset + b * kDecodePlanMergeInts];
    n = a.plan[a.merge_offset + b * kDecodePlanMergeInts + 1];
  }
  if (n == 1) return;  // the request's only item wrote its row
  uint2* dst = reinterpret_cast<uint2*>(a.out + b * a.out_stride + h * D + t * 4);
  if (n <= 0) {
    *dst = make_uint2(0u, 0u);
    return;
  }
  const int64_t row0 = static_cast<int64_t>(first) * a.num_heads + h;
  float mx = -INFINITY;
  for (int s = 0; s < n; ++s) mx = fmaxf(mx, a.ws_ml[(row0 + int64_t{s} * a.num_heads) * 2]);
  float den = 0.0f, o0 = 0.0f, o1 = 0.0f, o2 = 0.0f, o3 = 0.0f;
#pragma unroll 4
  for (int s = 0; s < n; ++s) {
    const int64_t row = row0 + int64_t{s} * a.num_heads;
    const float2 ml = *reinterpret_cast<const float2*>(a.ws_ml + row * 2);
    const float4 o = *reinterpret_cast<const float4*>(a.ws_o + row * D + t * 4);
    const float w = ml.y * exp2f(ml.x - mx);
    den += w;
    o0 = fmaf(w, o.x, o0);
    o1 = fmaf(w, o.y, o1);
    o2 = fmaf(w, o.z, o2);
    o3 = fmaf(w, o.w, o3);
  }
  const float inv = den > 0.0f ? 1.0f / den : 0.0f;
  *dst = make_uint2(pack_bf16x2(o0 * inv, o1 * inv), pack_bf16x2(o2 * inv, o3 * inv));
}

// Head tiles per pass and passes for a group: passes * head_tiles * 8 >= group.
struct CtaShape {
  int head_tiles, passes;
  int threads() const { return head_tiles * 2 * 32; }
};

CtaShape cta_shape(int group) {
  constexpr int per_pass_max = kMaxHeadTiles * kHeadTile;
  const int passes = (group + per_pass_max - 1) / per_pass_max;
  const int per_pass = (group + passes - 1) / passes;
  return {(per_pass + kHeadTile - 1) / kHeadTile, passes};
}

bool aligned16(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}

}  // namespace

bool attention_supports_head_dim(int head_dim) {
  return head_dim == 64 || head_dim == 128;
}

cudaError_t decode_attention(const DecodeAttentionParams& p, cudaStream_t stream) {
  const PagedKvDevice& kv = p.kv;
  if (p.num_requests < 0 || p.num_requests > 65535) return cudaErrorInvalidValue;
  if (p.num_requests == 0) return cudaSuccess;
  if (!attention_supports_head_dim(kv.head_dim) || kv.num_kv_heads <= 0 || p.num_heads <= 0 ||
      p.num_heads % kv.num_kv_heads != 0 || kv.block_size <= 0 || p.plan_capacity <= 0 ||
      kv.k_cache == nullptr || kv.v_cache == nullptr || kv.block_tables == nullptr ||
      p.plan == nullptr || p.workspace == nullptr || !aligned16(p.q) || !aligned16(p.out) ||
      !aligned16(p.workspace) || p.q_row_stride % 4 != 0 || p.out_row_stride % 8 != 0 ||
      kv_device_elem_bytes(kv.dtype) == 0 || !aligned16(kv.k_cache) || !aligned16(kv.v_cache)) {
    return cudaErrorInvalidValue;
  }
  // 8-bit: scales copied in 4-byte pairs of keys, which needs an even block size.
  if (kv_dtype_scaled(kv.dtype) &&
      (kv.k_scales == nullptr || kv.v_scales == nullptr || kv.block_size % 2 != 0 ||
       (reinterpret_cast<uintptr_t>(kv.k_scales) & 3u) != 0 ||
       (reinterpret_cast<uintptr_t>(kv.v_scales) & 3u) != 0)) {
    return cudaErrorInvalidValue;
  }
  const int D = kv.head_dim, group = p.num_heads / kv.num_kv_heads;
  const CtaShape shape = cta_shape(group);
  const int64_t ctas = int64_t{p.plan_capacity} * kv.num_kv_heads * shape.passes;
  if (ctas > 0x7fffffff) return cudaErrorInvalidValue;

  detail::DecodePartialArgs a{};
  a.k_cache = static_cast<const unsigned char*>(kv.k_cache);
  a.v_cache = static_cast<const unsigned char*>(kv.v_cache);
  a.k_scales = kv.k_scales;
  a.v_scales = kv.v_scales;
  a.block_tables = kv.block_tables;
  a.bt_stride = kv.block_table_stride;
  a.num_kv_heads = kv.num_kv_heads;
  a.block_size = kv.block_size;
  a.q = p.q;
  a.q_stride = p.q_row_stride;
  a.out = p.out;
  a.out_stride = p.out_row_stride;
  a.plan = p.plan;
  a.ws_o = p.workspace;
  a.ws_ml = p.workspace + int64_t{p.plan_capacity} * p.num_heads * D;
  a.num_heads = p.num_heads;
  a.group = group;
  a.head_tiles = shape.head_tiles;
  a.passes = shape.passes;
  a.scale_log2 = p.scale * kLog2e;
  if (p.sliding_window < 0 || (p.sliding_window > 0 && p.seq_lens == nullptr)) {
    return cudaErrorInvalidValue;
  }
  a.window = p.sliding_window;
  a.seq_lens = p.seq_lens;
  void* args[] = {&a};
  int smem = 0;
  void* kernel = detail::decode_partial_kernel_for(D, kv.dtype, &smem);
  if (cudaError_t e =
          cudaLaunchKernel(kernel, dim3(static_cast<unsigned>(ctas)),
                           dim3(static_cast<unsigned>(shape.threads())), args, smem, stream);
      e != cudaSuccess) {
    return e;
  }
  const MergeArgs mg{p.plan,     decode_plan_merge_offset(p.plan_capacity),
                     a.ws_o,     a.ws_ml,
                     p.out,      p.out_row_stride,
                     p.num_heads};
  const int hpb = kMergeThreads / (D / 4);
  const dim3 grid(static_cast<unsigned>((p.num_heads + hpb - 1) / hpb),
                  static_cast<unsigned>(p.num_requests));
  if (D == 64) {
    decode_merge_kernel<64><<<grid, kMergeThreads, 0, stream>>>(mg);
  } else {
    decode_merge_kernel<128><<<grid, kMergeThreads, 0, stream>>>(mg);
  }
  return cudaGetLastError();
}

cudaError_t decode_attention_ctas_per_sm(int head_dim, int num_heads, int num_kv_heads,
                                         int* ctas_per_sm, KvDtype dtype) {
  if (!attention_supports_head_dim(head_dim) || num_kv_heads <= 0 || num_heads <= 0 ||
      num_heads % num_kv_heads != 0 || ctas_per_sm == nullptr || kv_device_elem_bytes(dtype) == 0) {
    return cudaErrorInvalidValue;
  }
  const CtaShape shape = cta_shape(num_heads / num_kv_heads);
  int smem = 0;
  void* kernel = detail::decode_partial_kernel_for(head_dim, dtype, &smem);
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(ctas_per_sm, kernel, shape.threads(), smem);
}

}  // namespace llmserve::kernels::cuda
