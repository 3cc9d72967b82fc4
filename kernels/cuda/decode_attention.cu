// Paged decode attention: split-K partial kernel (one block per request x kv-head group x split,
// one warp per key, GQA heads of the group sharing each K/V load), then a log-sum-exp merge.
#include "cuda_common.cuh"
#include "llmserve/kernels/cuda/attention.h"

namespace llmserve::kernels::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kMaxGroup = 8;
constexpr float kLog2e = 1.4426950408889634f;

struct DecodeArgs {
  const uint16_t* k_cache;
  const uint16_t* v_cache;
  const int32_t* block_tables;
  int64_t bt_stride;
  const int32_t* seq_lens;
  const float* q;
  int num_heads, num_kv_heads, block_size, group, heads_per_block, max_splits;
  float scale_log2;
  float* ws_o;   // [B, H, max_splits, D] normalised partial outputs
  float* ws_ml;  // [B, H, max_splits, 2] (max, sum) in the log2 domain
};

template <int D>
__device__ __forceinline__ void load_row(const uint16_t* p, float* f) {
  if constexpr (D / 32 == 2) {
    const uint32_t w = *reinterpret_cast<const uint32_t*>(p);
    f[0] = detail::bf16_bits_to_f32(static_cast<uint16_t>(w & 0xffffu));
    f[1] = detail::bf16_bits_to_f32(static_cast<uint16_t>(w >> 16));
  } else {
    const uint2 w = *reinterpret_cast<const uint2*>(p);
    f[0] = detail::bf16_bits_to_f32(static_cast<uint16_t>(w.x & 0xffffu));
    f[1] = detail::bf16_bits_to_f32(static_cast<uint16_t>(w.x >> 16));
    f[2] = detail::bf16_bits_to_f32(static_cast<uint16_t>(w.y & 0xffffu));
    f[3] = detail::bf16_bits_to_f32(static_cast<uint16_t>(w.y >> 16));
  }
}

template <int D>
__global__ void __launch_bounds__(kWarps * 32) decode_partial_kernel(DecodeArgs a) {
  constexpr int E = D / 32;  // elements per lane
  __shared__ float s_o[kWarps][kMaxGroup][D];
  __shared__ float s_m[kWarps][kMaxGroup], s_l[kWarps][kMaxGroup];

  const int b = blockIdx.z, split = blockIdx.x;
  const int len = a.seq_lens[b];
  const int start = split * kDecodePartition;
  if (start >= len) return;
  const int end = min(len, start + kDecodePartition);
  const int gc = a.heads_per_block, h0 = blockIdx.y * gc, kvh = h0 / a.group;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  float q[kMaxGroup][E], acc[kMaxGroup][E], m[kMaxGroup], l[kMaxGroup];
#pragma unroll
  for (int g = 0; g < kMaxGroup; ++g) {
    m[g] = -INFINITY;
    l[g] = 0.0f;
#pragma unroll
    for (int e = 0; e < E; ++e) {
      acc[g][e] = 0.0f;
      q[g][e] = g < gc ? a.q[(static_cast<int64_t>(b) * a.num_heads + h0 + g) * D + lane * E + e] *
                             a.scale_log2
                       : 0.0f;
    }
  }

  const int32_t* bt = a.block_tables + b * a.bt_stride;
  for (int t = start + warp; t < end; t += kWarps) {
    const int64_t blk = bt[t / a.block_size];
    const int64_t base =
        ((blk * a.num_kv_heads + kvh) * a.block_size + t % a.block_size) * D + lane * E;
    float kf[E], vf[E];
    load_row<D>(a.k_cache + base, kf);
    load_row<D>(a.v_cache + base, vf);
#pragma unroll
    for (int g = 0; g < kMaxGroup; ++g) {
      if (g < gc) {
        float s = 0.0f;
#pragma unroll
        for (int e = 0; e < E; ++e) s += q[g][e] * kf[e];
        s = detail::warp_sum(s);
        const float m_new = fmaxf(m[g], s);
        const float alpha = exp2f(m[g] - m_new), p = exp2f(s - m_new);
        l[g] = l[g] * alpha + p;
#pragma unroll
        for (int e = 0; e < E; ++e) acc[g][e] = acc[g][e] * alpha + p * vf[e];
        m[g] = m_new;
      }
    }
  }
#pragma unroll
  for (int g = 0; g < kMaxGroup; ++g) {
    if (g < gc) {
#pragma unroll
      for (int e = 0; e < E; ++e) s_o[warp][g][lane * E + e] = acc[g][e];
      if (lane == 0) {
        s_m[warp][g] = m[g];
        s_l[warp][g] = l[g];
      }
    }
  }
  __syncthreads();
  for (int idx = threadIdx.x; idx < gc * D; idx += kWarps * 32) {
    const int g = idx / D, e = idx % D;
    float mx = -INFINITY;
    for (int w = 0; w < kWarps; ++w) mx = fmaxf(mx, s_m[w][g]);
    float sum = 0.0f, o = 0.0f;
    for (int w = 0; w < kWarps; ++w) {
      const float f = exp2f(s_m[w][g] - mx);
      sum += s_l[w][g] * f;
      o += s_o[w][g][e] * f;
    }
    const int64_t bh = static_cast<int64_t>(b) * a.num_heads + h0 + g;
    a.ws_o[(bh * a.max_splits + split) * D + e] = o / sum;
    if (e == 0) {
      a.ws_ml[(bh * a.max_splits + split) * 2] = mx;
      a.ws_ml[(bh * a.max_splits + split) * 2 + 1] = sum;
    }
  }
}

// One block of head_dim threads per (head, request).
__global__ void decode_merge_kernel(const float* ws_o, const float* ws_ml, const int32_t* seq_lens,
                                    int num_heads, int head_dim, int max_splits, float* out) {
  const int h = blockIdx.x, b = blockIdx.y, e = threadIdx.x;
  const int64_t bh = static_cast<int64_t>(b) * num_heads + h;
  const int n = (seq_lens[b] + kDecodePartition - 1) / kDecodePartition;
  float mx = -INFINITY;
  for (int s = 0; s < n; ++s) mx = fmaxf(mx, ws_ml[(bh * max_splits + s) * 2]);
  float num = 0.0f, den = 0.0f;
  for (int s = 0; s < n; ++s) {
    const int64_t i = bh * max_splits + s;
    const float w = ws_ml[i * 2 + 1] * exp2f(ws_ml[i * 2] - mx);
    num += w * ws_o[i * head_dim + e];
    den += w;
  }
  out[bh * head_dim + e] = n > 0 ? num / den : 0.0f;
}

int splits_for(int max_seq_len) {
  return max_seq_len <= 0 ? 1 : (max_seq_len + kDecodePartition - 1) / kDecodePartition;
}

}  // namespace

bool attention_supports_head_dim(int head_dim) {
  return head_dim == 64 || head_dim == 128;
}

int64_t decode_attention_workspace_floats(int B, int num_heads, int head_dim, int max_seq_len) {
  return static_cast<int64_t>(B) * num_heads * splits_for(max_seq_len) * (head_dim + 2);
}

cudaError_t decode_attention(const PagedKvDevice& kv, const float* q, const int32_t* seq_lens,
                             int B, int max_seq_len, int num_heads, float scale, float* workspace,
                             float* out, cudaStream_t stream) {
  if (B <= 0) return cudaSuccess;
  if (!attention_supports_head_dim(kv.head_dim) || kv.num_kv_heads <= 0 ||
      num_heads % kv.num_kv_heads != 0) {
    return cudaErrorInvalidValue;
  }
  const int splits = splits_for(max_seq_len), group = num_heads / kv.num_kv_heads;
  int gc = group < kMaxGroup ? group : kMaxGroup;
  while (group % gc != 0) --gc;
  DecodeArgs a{kv.k_cache,
               kv.v_cache,
               kv.block_tables,
               kv.block_table_stride,
               seq_lens,
               q,
               num_heads,
               kv.num_kv_heads,
               kv.block_size,
               group,
               gc,
               splits,
               scale * kLog2e,
               workspace,
               workspace + static_cast<int64_t>(B) * num_heads * splits * kv.head_dim};
  const dim3 grid(static_cast<unsigned>(splits), static_cast<unsigned>(num_heads / gc),
                  static_cast<unsigned>(B));
  if (kv.head_dim == 64) {
    decode_partial_kernel<64><<<grid, kWarps * 32, 0, stream>>>(a);
  } else {
    decode_partial_kernel<128><<<grid, kWarps * 32, 0, stream>>>(a);
  }
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  decode_merge_kernel<<<dim3(static_cast<unsigned>(num_heads), static_cast<unsigned>(B)),
                        static_cast<unsigned>(kv.head_dim), 0, stream>>>(
      a.ws_o, a.ws_ml, seq_lens, num_heads, kv.head_dim, splits, out);
  return cudaGetLastError();
}

}  // namespace llmserve::kernels::cuda
