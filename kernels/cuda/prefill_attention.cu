// Varlen causal prefill attention over the paged cache, FlashAttention-2 style: a block owns 64
// query rows of one head; it walks 64-key tiles of K/V (gathered from pages into shared memory),
// computes S = QK^T and O += PV with bf16 WMMA (f32 accumulate), and keeps the online-softmax
// state (row max, row sum) per row. Each of the 4 warps owns 16 query rows.
#include <mma.h>

#include "cuda_common.cuh"
#include "llmserve/kernels/cuda/attention.h"

namespace llmserve::kernels::cuda {
namespace {

namespace wmma = nvcuda::wmma;

constexpr int kBM = 64, kBN = 64, kWarps = 4, kThreads = kWarps * 32;
constexpr float kLog2e = 1.4426950408889634f;

struct PrefillArgs {
  const uint16_t* k_cache;
  const uint16_t* v_cache;
  const int32_t* block_tables;
  int64_t bt_stride;
  const int32_t* query_start;
  const int32_t* seq_lens;
  const float* q;
  float* out;
  int num_heads, num_kv_heads, block_size;
  float scale_log2;
};

// Shared-memory layout (row strides padded; every region a multiple of 32 bytes).
template <int D>
struct Layout {
  static constexpr int kLdQ = D + 8, kLdS = kBN + 4, kLdP = kBN + 8, kLdO = D + 4;
  static constexpr int kQ = 0;
  static constexpr int kK = kQ + kBM * kLdQ * 2;
  static constexpr int kV = kK + kBN * kLdQ * 2;
  static constexpr int kS = kV + kBN * kLdQ * 2;
  static constexpr int kP = kS + kBM * kLdS * 4;
  static constexpr int kO = kP + kBM * kLdP * 2;
  static constexpr int kM = kO + kBM * kLdO * 4;
  static constexpr int kL = kM + kBM * 4;
  static constexpr int kBytes = kL + kBM * 4;
};

template <int D>
__global__ void __launch_bounds__(kThreads) prefill_kernel(PrefillArgs a) {
  using L = Layout<D>;
  extern __shared__ __align__(128) unsigned char smem[];
  auto* sQ = reinterpret_cast<__nv_bfloat16*>(smem + L::kQ);
  auto* sK = reinterpret_cast<__nv_bfloat16*>(smem + L::kK);
  auto* sV = reinterpret_cast<__nv_bfloat16*>(smem + L::kV);
  auto* sS = reinterpret_cast<float*>(smem + L::kS);
  auto* sP = reinterpret_cast<__nv_bfloat16*>(smem + L::kP);
  auto* sO = reinterpret_cast<float*>(smem + L::kO);
  auto* sM = reinterpret_cast<float*>(smem + L::kM);
  auto* sL = reinterpret_cast<float*>(smem + L::kL);

  const int b = blockIdx.z, h = blockIdx.y, qt = blockIdx.x;
  const int q0 = a.query_start[b], q_len = a.query_start[b + 1] - q0;
  if (qt * kBM >= q_len) return;
  const int rows = min(kBM, q_len - qt * kBM);
  const int first_pos = a.seq_lens[b] - q_len + qt * kBM;  // position of tile row 0
  const int kv_end = first_pos + rows;                     // keys [0, kv_end)
  const int kvh = h / (a.num_heads / a.num_kv_heads);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int64_t row0 = static_cast<int64_t>(q0) + qt * kBM;

  for (int i = tid; i < kBM * D; i += kThreads) {
    const int r = i / D, d = i % D;
    const float v = r < rows ? a.q[((row0 + r) * a.num_heads + h) * D + d] : 0.0f;
    sQ[r * L::kLdQ + d] = __float2bfloat16_rn(v);
    sO[r * L::kLdO + d] = 0.0f;
  }
  if (tid < kBM) {
    sM[tid] = -INFINITY;
    sL[tid] = 0.0f;
  }
  const int32_t* bt = a.block_tables + b * a.bt_stride;
  const int n_tiles = (kv_end + kBN - 1) / kBN;
  for (int kt = 0; kt < n_tiles; ++kt) {
    __syncthreads();                // previous tile fully consumed (and Q / O initialised)
    constexpr int kChunks = D / 8;  // 16-byte chunks per row
    for (int i = tid; i < kBN * kChunks; i += kThreads) {
      const int r = i / kChunks, c = (i % kChunks) * 8, j = kt * kBN + r;
      uint4 kv4 = make_uint4(0, 0, 0, 0), vv4 = make_uint4(0, 0, 0, 0);
      if (j < kv_end) {
        const int64_t blk = bt[j / a.block_size];
        const int64_t src =
            ((blk * a.num_kv_heads + kvh) * a.block_size + j % a.block_size) * D + c;
        kv4 = *reinterpret_cast<const uint4*>(a.k_cache + src);
        vv4 = *reinterpret_cast<const uint4*>(a.v_cache + src);
      }
      *reinterpret_cast<uint4*>(sK + r * L::kLdQ + c) = kv4;
      *reinterpret_cast<uint4*>(sV + r * L::kLdQ + c) = vv4;
    }
    __syncthreads();

    // S[16 rows of this warp, 64 keys] = Q K^T.
    for (int nb = 0; nb < kBN / 16; ++nb) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> s;
      wmma::fill_fragment(s, 0.0f);
      for (int kk = 0; kk < D / 16; ++kk) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> qa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> kb;
        wmma::load_matrix_sync(qa, sQ + warp * 16 * L::kLdQ + kk * 16, L::kLdQ);
        wmma::load_matrix_sync(kb, sK + nb * 16 * L::kLdQ + kk * 16, L::kLdQ);
        wmma::mma_sync(s, qa, kb, s);
      }
      wmma::store_matrix_sync(sS + warp * 16 * L::kLdS + nb * 16, s, L::kLdS, wmma::mem_row_major);
    }
    __syncwarp();

    // Online softmax of the warp's rows; lanes own columns lane and lane + 32.
    for (int rr = 0; rr < 16; ++rr) {
      const int r = warp * 16 + rr;
      const float m_old = sM[r], l_old = sL[r];
      const int pos = first_pos + r;
      float s[2];
      for (int c2 = 0; c2 < 2; ++c2) {
        const int c = lane + 32 * c2, j = kt * kBN + c;
        const bool ok = r < rows && j <= pos && j < kv_end;
        s[c2] = ok ? sS[r * L::kLdS + c] * a.scale_log2 : -INFINITY;
      }
      const float m_new = fmaxf(m_old, detail::warp_max(fmaxf(s[0], s[1])));
      float p[2], alpha = 1.0f;
      if (m_new == -INFINITY) {
        p[0] = p[1] = 0.0f;
      } else {
        p[0] = exp2f(s[0] - m_new);
        p[1] = exp2f(s[1] - m_new);
        alpha = exp2f(m_old - m_new);
      }
      const float sum = detail::warp_sum(p[0] + p[1]);
      sP[r * L::kLdP + lane] = __float2bfloat16_rn(p[0]);
      sP[r * L::kLdP + lane + 32] = __float2bfloat16_rn(p[1]);
      for (int d = lane; d < D; d += 32) sO[r * L::kLdO + d] *= alpha;
      if (lane == 0) {
        sM[r] = m_new;
        sL[r] = l_old * alpha + sum;
      }
    }
    __syncwarp();

    // O[16 rows, D] += P V.
    for (int nd = 0; nd < D / 16; ++nd) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> o;
      float* o_ptr = sO + warp * 16 * L::kLdO + nd * 16;
      wmma::load_matrix_sync(o, o_ptr, L::kLdO, wmma::mem_row_major);
      for (int kk = 0; kk < kBN / 16; ++kk) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> pa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> vb;
        wmma::load_matrix_sync(pa, sP + warp * 16 * L::kLdP + kk * 16, L::kLdP);
        wmma::load_matrix_sync(vb, sV + kk * 16 * L::kLdQ + nd * 16, L::kLdQ);
        wmma::mma_sync(o, pa, vb, o);
      }
      wmma::store_matrix_sync(o_ptr, o, L::kLdO, wmma::mem_row_major);
    }
  }
  __syncwarp();
  for (int rr = 0; rr < 16; ++rr) {
    const int r = warp * 16 + rr;
    if (r >= rows) break;
    const float inv = 1.0f / sL[r];
    for (int d = lane; d < D; d += 32) {
      a.out[((row0 + r) * a.num_heads + h) * D + d] = sO[r * L::kLdO + d] * inv;
    }
  }
}

template <int D>
cudaError_t launch(const PrefillArgs& a, int B, int max_q_len, cudaStream_t stream) {
  static const cudaError_t attr = cudaFuncSetAttribute(
      prefill_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, Layout<D>::kBytes);
  if (attr != cudaSuccess) return attr;
  const dim3 grid(static_cast<unsigned>((max_q_len + kBM - 1) / kBM),
                  static_cast<unsigned>(a.num_heads), static_cast<unsigned>(B));
  prefill_kernel<D><<<grid, kThreads, Layout<D>::kBytes, stream>>>(a);
  return cudaGetLastError();
}

}  // namespace

cudaError_t prefill_attention(const PagedKvDevice& kv, const float* q, const int32_t* query_start,
                              const int32_t* seq_lens, int B, int max_q_len, int num_heads,
                              float scale, float* out, cudaStream_t stream) {
  if (B <= 0 || max_q_len <= 0) return cudaSuccess;
  if (!attention_supports_head_dim(kv.head_dim) || kv.num_kv_heads <= 0 ||
      num_heads % kv.num_kv_heads != 0) {
    return cudaErrorInvalidValue;
  }
  const PrefillArgs a{
      kv.k_cache, kv.v_cache, kv.block_tables, kv.block_table_stride, query_start,   seq_lens, q,
      out,        num_heads,  kv.num_kv_heads, kv.block_size,         scale * kLog2e};
  return kv.head_dim == 64 ? launch<64>(a, B, max_q_len, stream)
                           : launch<128>(a, B, max_q_len, stream);
}

}  // namespace llmserve::kernels::cuda
