// Varlen causal prefill attention over the paged cache, FlashAttention-2 style. A CTA owns 128
// query rows of one head, 4 warps of 32 rows each. It walks 64-key tiles of K/V gathered from the
// pages with cp.async into double-buffered, XOR-swizzled shared memory (tile t + 1 lands while
// tile t is consumed). S = QK^T and O += PV run on mma.sync m16n8k16 bf16 with f32 accumulation,
// operands read with ldmatrix; S, P and O never leave registers (the S accumulators are the P
// A-fragments once rounded to bf16). Online softmax in the log2 domain, rows reduced across each
// quad of lanes; the causal mask only on diagonal tiles, tiles past a warp's last row skipped.
// 8-bit caches (int8, e4m3): K/V bytes and their f16 scales land in double-buffered plain staging
// tiles; once a tile is in, the CTA converts it exactly to one bf16 K/V tile (the layout above)
// and the scales enter in f32: K's multiplies the scores, V's the softmax weights fed to PV (the
// row sum keeps the unscaled weights).
#include <cmath>
#include <type_traits>

#include "cuda_common.cuh"
#include "kv_quant.cuh"
#include "llmserve/kernels/cuda/prefill_attention.h"
#include "tensor_core.cuh"

namespace llmserve::kernels::cuda {
namespace {

using detail::cp_async16;
using detail::cp_async_commit;
using detail::cp_async_wait_all;
using detail::fast_exp2;
using detail::ldmatrix_x4;
using detail::ldmatrix_x4_trans;
using detail::mma_bf16;
using detail::pack_bf16x2;

constexpr int kBM = 128, kBN = 64, kWarps = 4, kThreads = kWarps * 32;
constexpr int kWarpRows = kBM / kWarps;  // 32 query rows per warp
constexpr int kMT = kWarpRows / 16;      // 16-row m-tiles per warp
constexpr int kNT = kBN / 8;             // 8-key n-tiles of S
constexpr int kMaxGridY = 65535, kMaxGridZ = 65535;
constexpr float kLog2e = 1.4426950408889634f;

// Bytes: Q tile [kBM, D] bf16, then K stages 0/1 and V stages 0/1 of [kBN, D] bf16 each. EB 1
// (8-bit caches): Q, one K and one V bf16 tile, then stages 0/1 of [K bytes, V bytes, K scales,
// V scales] of kBN keys.
template <int D, int EB = 2>
struct Smem {
  static constexpr int kRowBytes = D * 2;
  static constexpr int kTile = kBN * kRowBytes;
  static constexpr int kStages = EB == 2 ? 2 : 1;  // of the bf16 K/V tiles
  static constexpr int kQ = 0;
  static constexpr int kK = kQ + kBM * kRowBytes;
  static constexpr int kV = kK + kStages * kTile;
  static constexpr int kSrcTile = kBN * D * EB;  // 8-bit staging, per stage:
  static constexpr int kStageBytes = EB == 2 ? 0 : 2 * kSrcTile + 2 * kBN * 2;  // + scales
  static constexpr int kStage = kV + kStages * kTile;
  static constexpr int kUsed = kStage + 2 * kStageBytes;
  static constexpr int kAlign = 256;  // the base is aligned at run time: see ldmatrix addressing
  static constexpr int kBytes = kUsed + kAlign;
};

// Byte offset of 16-byte chunk c of row r in a [rows, D] bf16 tile. The chunk index is XORed
// with r % 8, so the 8 rows one ldmatrix phase reads (same logical chunk, consecutive rows) and
// the 8 chunks of a row that 8 threads write fall in 8 different bank groups.
template <int D>
__device__ __forceinline__ uint32_t swizzle(int r, int c) {
  return static_cast<uint32_t>(r * D * 2 + ((c ^ (r & 7)) << 4));
}

__device__ __forceinline__ float quad_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}

__device__ __forceinline__ float quad_sum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

template <int D, KvDtype KT>
__global__ void __launch_bounds__(kThreads, 2)
    prefill_attention_kernel(const PrefillAttentionParams p, const float scale_log2) {
  constexpr bool kQuant = KT != KvDtype::kF16;
  constexpr int EB = kQuant ? 1 : 2;
  using L = Smem<D, EB>;
  using Elem = std::conditional_t<kQuant, uint8_t, uint16_t>;
  constexpr int kChunks = D / 8;  // 16-byte chunks per row
  constexpr int kDT = D / 8;      // 8-wide n-tiles of O
  // The k-steps of S = QK^T stay a loop at head_dim 128, which keeps ptxas from hoisting the
  // operands of later steps: at 255 registers (O 128, S 64) that pipelining would spill.
  constexpr int kKsUnroll = D == 64 ? D / 16 : 1;
  extern __shared__ __align__(128) unsigned char smem[];
  const uint32_t s_raw = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const uint32_t s_base = (s_raw + L::kAlign - 1) & ~static_cast<uint32_t>(L::kAlign - 1);
  unsigned char* const s_ptr = smem + (s_base - s_raw);

  const int b = static_cast<int>(blockIdx.z), h = static_cast<int>(blockIdx.x);
  const int qt = static_cast<int>(gridDim.y - 1 - blockIdx.y);  // longest tiles first
  const int q0 = p.query_start[b];
  const int q_len = p.query_start[b + 1] - q0;
  if (qt * kBM >= q_len) return;
  const int rows = min(kBM, q_len - qt * kBM);
  const int first_pos = p.seq_lens[b] - q_len + qt * kBM;  // position of tile row 0
  const int kv_end = first_pos + rows;                     // keys [0, kv_end)
  const int n_tiles = (kv_end + kBN - 1) / kBN;
  // Sliding window W: row at position pos attends keys (pos - W, pos]. Keys below kv_lo lie
  // outside every row's window: tiles wholly below it are never loaded, and in the first tile
  // its keys are zero-filled, not read (their pages may be released: the null block).
  const int window = p.sliding_window;
  const int kv_lo = window > 0 ? max(0, first_pos - window + 1) : 0;
  const int t_first = kv_lo / kBN;
  const int kvh = h / (p.num_heads / p.kv.num_kv_heads);
  const int tid = static_cast<int>(threadIdx.x), warp = tid >> 5, lane = tid & 31;
  const int64_t row0 = static_cast<int64_t>(q0) + qt * kBM;
  const int32_t* bt = p.kv.block_tables + static_cast<int64_t>(b) * p.kv.block_table_stride;

  // Q rows -> bf16 in shared memory; rows past the request are zeros.
  for (int i = tid; i < kBM * kChunks; i += kThreads) {
    const int r = i / kChunks, c = i % kChunks;
    uint4 v = make_uint4(0, 0, 0, 0);
    if (r < rows) {
      const float4* src =
          reinterpret_cast<const float4*>(p.q + (row0 + r) * p.q_row_stride + h * D + c * 8);
      const float4 x = __ldg(src), y = __ldg(src + 1);
      v = make_uint4(pack_bf16x2(x.x, x.y), pack_bf16x2(x.z, x.w), pack_bf16x2(y.x, y.y),
                     pack_bf16x2(y.z, y.w));
    }
    *reinterpret_cast<uint4*>(s_ptr + L::kQ + swizzle<D>(r, c)) = v;
  }

  // Keys [t * kBN, t * kBN + kBN) into stage t % 2; keys past kv_end are zero-filled (their
  // scores are masked, and V must hold no NaN: 0 * NaN would reach O). Thread: 16-byte chunk
  // column c of rows r0 + kRowsPerPass * pass. bf16: kRowsPerPass <= block_size, so a step crosses
  // at most one page edge, and r % 8 == r0 % 8 (one swizzle for all passes). 8-bit: plain staging
  // rows, and threads tid < kBN / 8 copy the scales of keys 8 tid.. 8 tid + 7 (one page, since
  // block_size % 16 == 0).
  constexpr int kSrcChunks = D * EB / 16;
  constexpr int kRowsPerPass = kThreads / kSrcChunks;
  const int bs = p.kv.block_size;
  const int c_load = tid % kSrcChunks, r0_load = tid / kSrcChunks;
  const int page_elems = p.kv.num_kv_heads * bs * D;
  const int head_elems = kvh * bs * D + c_load * (16 / EB);
  const uint32_t so0 = kQuant ? static_cast<uint32_t>((r0_load * kSrcChunks + c_load) * 16)
                              : swizzle<D>(r0_load, c_load);
  const int pass_pages = kRowsPerPass / bs, pass_off = kRowsPerPass - pass_pages * bs;
  const Elem* const k_cache = static_cast<const Elem*>(p.kv.k_cache);
  const Elem* const v_cache = static_cast<const Elem*>(p.kv.v_cache);
  const auto load_tile = [&](int t) {
    uint32_t sk, sv;
    if constexpr (kQuant) {
      sk = s_base + L::kStage + (t & 1) * L::kStageBytes + so0;
      sv = sk + L::kSrcTile;
    } else {
      sk = s_base + L::kK + (t & 1) * L::kTile + so0;
      sv = s_base + L::kV + (t & 1) * L::kTile + so0;
    }
    int j = t * kBN + r0_load;
    int pi = j / bs;
    int off = j - pi * bs;
#pragma unroll
    for (int pass = 0; pass < kBN / kRowsPerPass; ++pass) {
      const bool valid = j >= kv_lo && j < kv_end;
      // Outside [kv_lo, kv_end) nothing is read; offset 0 keeps the address valid.
      const int64_t e =
          valid ? static_cast<int64_t>(__ldg(bt + pi)) * page_elems + head_elems + off * D : 0;
      const uint32_t so = pass * kRowsPerPass * D * EB;
      cp_async16(sk + so, k_cache + e, valid ? 16 : 0);
      cp_async16(sv + so, v_cache + e, valid ? 16 : 0);
      j += kRowsPerPass;
      if constexpr (kQuant) {
        pi += pass_pages;
        off += pass_off;
      } else {
        off += kRowsPerPass;
      }
      if (off >= bs) {
        off -= bs;
        ++pi;
      }
    }
    if constexpr (kQuant) {
      if (tid < kBN / 8) {
        const int key = t * kBN + 8 * tid;
        // The 8 keys share a page (block_size % 16 == 0): live when any of them is >= kv_lo.
        const bool valid = key + 7 >= kv_lo && key < kv_end;
        int64_t e = 0;
        if (valid) {
          const int pg = key / bs;
          e = (static_cast<int64_t>(__ldg(bt + pg)) * p.kv.num_kv_heads + kvh) * bs + key - pg * bs;
        }
        const uint32_t ss = s_base + L::kStage + (t & 1) * L::kStageBytes + 2 * L::kSrcTile;
        cp_async16(ss + tid * 16, p.kv.k_scales + e, valid ? 16 : 0);
        cp_async16(ss + kBN * 2 + tid * 16, p.kv.v_scales + e, valid ? 16 : 0);
      }
    }
    cp_async_commit();
  };

  const int warp_row0 = warp * kWarpRows;
  const bool warp_active = warp_row0 < rows;
  const int warp_first_pos = first_pos + warp_row0;
  const int g = lane >> 2, tq = lane & 3;
  // ldmatrix lane addressing. Q (A operand, x4) and V (B operand, x4.trans): row lane % 16,
  // chunk column lane / 16. K (B operand, x4): row lane % 8 + 8 (lane / 16), chunk column
  // (lane / 8) % 2. Each row is a multiple of 8 plus lane % 8, so its swizzled chunk 2 s + bit
  // is (2 s) ^ sw with sw = bit ^ (lane % 8): with the tile 256-byte aligned and rows a multiple
  // of 128 bytes long, the address of k-step s is (row address + 16 sw) ^ (32 s), and 16-row
  // steps (multiples of 2 KB) add on top.
  const int a_row = lane & 15, a_sw = (lane >> 4) ^ (lane & 7);
  const int k_row = (lane & 7) + ((lane >> 4) << 3), k_sw = ((lane >> 3) & 1) ^ (lane & 7);
  const uint32_t q_addr = s_base + L::kQ + (warp_row0 + a_row) * L::kRowBytes + (a_sw << 4);

  float o[kMT][kDT][4];
  float m[kMT][2], l[kMT][2];  // running max (raw score units) and partial sum per row half
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
    for (int dt = 0; dt < kDT; ++dt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) o[mt][dt][e] = 0.0f;
    }
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      m[mt][hf] = -INFINITY;
      l[mt][hf] = 0.0f;
    }
  }

  load_tile(t_first);
  for (int t = t_first; t < n_tiles; ++t) {
    cp_async_wait_all();
    __syncthreads();  // tile t (and Q) visible to all; all warps are done with tile t - 1
    if (t + 1 < n_tiles) load_tile(t + 1);
    const uint16_t* ks = nullptr;  // 8-bit: this tile's K and V scales
    const uint16_t* vs = nullptr;
    if constexpr (kQuant) {
      unsigned char* st = s_ptr + L::kStage + (t & 1) * L::kStageBytes;
      detail::convert_tile_to_bf16<KT, D>(st, s_ptr + L::kK, 2 * kBN * kSrcChunks, tid, kThreads,
                                          [](int r, int c) { return swizzle<D>(r, c); });
      auto* sc = reinterpret_cast<uint16_t*>(st + 2 * L::kSrcTile);
      if (tid < kBN && t * kBN + tid >= kv_end) sc[tid] = sc[kBN + tid] = 0;  // past a chunk's end
      ks = sc;
      vs = sc + kBN;
      __syncthreads();
    }
    // Warp-uniform: every key of the tile lies past the warp's last row.
    if (!warp_active || t * kBN > min(warp_first_pos + kWarpRows - 1, kv_end - 1)) continue;
    // Warp-uniform too: every key of the tile lies below the window of the warp's first row.
    if (window > 0 && t * kBN + kBN - 1 <= warp_first_pos - window) continue;
    const uint32_t tile_off = kQuant ? 0 : (t & 1) * L::kTile;
    const uint32_t k_addr = s_base + L::kK + tile_off + k_row * L::kRowBytes + (k_sw << 4);
    const uint32_t v_addr = s_base + L::kV + tile_off + a_row * L::kRowBytes + (a_sw << 4);

    float s[kMT][kNT][4];
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt) {
#pragma unroll
        for (int e = 0; e < 4; ++e) s[mt][nt][e] = 0.0f;
      }
    }
#pragma unroll kKsUnroll
    for (int ks = 0; ks < D / 16; ++ks) {
      uint32_t qa[kMT][4];
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
        ldmatrix_x4((q_addr ^ (ks << 5)) + mt * 16 * L::kRowBytes, qa[mt]);
      }
#pragma unroll
      for (int np = 0; np < kNT / 2; ++np) {
        uint32_t kb[4];  // b-fragments of key n-tiles 2 np (kb[0..1]) and 2 np + 1 (kb[2..3])
        ldmatrix_x4((k_addr ^ (ks << 5)) + np * 16 * L::kRowBytes, kb);
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          mma_bf16(s[mt][2 * np], qa[mt], kb[0], kb[1]);
          mma_bf16(s[mt][2 * np + 1], qa[mt], kb[2], kb[3]);
        }
      }
    }

    if constexpr (kQuant) {  // K's scale per key (column)
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt) {
        const float2 kf = __half22float2(*reinterpret_cast<const __half2*>(ks + nt * 8 + 2 * tq));
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          s[mt][nt][0] *= kf.x;
          s[mt][nt][1] *= kf.y;
          s[mt][nt][2] *= kf.x;
          s[mt][nt][3] *= kf.y;
        }
      }
    }

    // Diagonal tile: mask keys past each row; window edge tile: keys at or below pos - window.
    const bool window_edge = window > 0 && t * kBN <= warp_first_pos + kWarpRows - 1 - window;
    if (t * kBN + kBN - 1 > warp_first_pos || window_edge) {
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int pos = warp_first_pos + mt * 16 + g + ((e >> 1) << 3);
            const int key = t * kBN + nt * 8 + tq * 2 + (e & 1);
            if (key > pos || (window > 0 && key <= pos - window)) s[mt][nt][e] = -INFINITY;
          }
        }
      }
    }

#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        float mx = m[mt][hf];
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
          mx = fmaxf(mx, fmaxf(s[mt][nt][2 * hf], s[mt][nt][2 * hf + 1]));
        }
        mx = quad_max(mx);
        const float base = mx == -INFINITY ? 0.0f : mx * scale_log2;
        const float alpha = fast_exp2(m[mt][hf] * scale_log2 - base);
        m[mt][hf] = mx;
        float sum = 0.0f;
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
#pragma unroll
          for (int e = 2 * hf; e < 2 * hf + 2; ++e) {
            s[mt][nt][e] = fast_exp2(fmaf(s[mt][nt][e], scale_log2, -base));
            sum += s[mt][nt][e];
          }
        }
        l[mt][hf] = l[mt][hf] * alpha + sum;
#pragma unroll
        for (int dt = 0; dt < kDT; ++dt) {
          o[mt][dt][2 * hf] *= alpha;
          o[mt][dt][2 * hf + 1] *= alpha;
        }
      }
    }

#pragma unroll
    for (int kc = 0; kc < kBN / 16; ++kc) {
      uint32_t pa[kMT][4];  // A-fragment of keys [16 kc, 16 kc + 16) from S n-tiles 2 kc, 2 kc + 1
      if constexpr (kQuant) {  // V's scale per key
        const float2 va = __half22float2(*reinterpret_cast<const __half2*>(vs + kc * 16 + 2 * tq));
        const float2 vb =
            __half22float2(*reinterpret_cast<const __half2*>(vs + kc * 16 + 8 + 2 * tq));
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          pa[mt][0] = pack_bf16x2(s[mt][2 * kc][0] * va.x, s[mt][2 * kc][1] * va.y);
          pa[mt][1] = pack_bf16x2(s[mt][2 * kc][2] * va.x, s[mt][2 * kc][3] * va.y);
          pa[mt][2] = pack_bf16x2(s[mt][2 * kc + 1][0] * vb.x, s[mt][2 * kc + 1][1] * vb.y);
          pa[mt][3] = pack_bf16x2(s[mt][2 * kc + 1][2] * vb.x, s[mt][2 * kc + 1][3] * vb.y);
        }
      } else {
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          pa[mt][0] = pack_bf16x2(s[mt][2 * kc][0], s[mt][2 * kc][1]);
          pa[mt][1] = pack_bf16x2(s[mt][2 * kc][2], s[mt][2 * kc][3]);
          pa[mt][2] = pack_bf16x2(s[mt][2 * kc + 1][0], s[mt][2 * kc + 1][1]);
          pa[mt][3] = pack_bf16x2(s[mt][2 * kc + 1][2], s[mt][2 * kc + 1][3]);
        }
      }
#pragma unroll
      for (int dp = 0; dp < D / 16; ++dp) {
        uint32_t vb[4];  // b-fragments of dim n-tiles 2 dp (vb[0..1]) and 2 dp + 1 (vb[2..3])
        ldmatrix_x4_trans((v_addr ^ (dp << 5)) + kc * 16 * L::kRowBytes, vb);
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          mma_bf16(o[mt][2 * dp], pa[mt], vb[0], vb[1]);
          mma_bf16(o[mt][2 * dp + 1], pa[mt], vb[2], vb[3]);
        }
      }
    }
  }

  if (!warp_active) return;
  float inv[kMT][2];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) inv[mt][hf] = 1.0f / quad_sum(l[mt][hf]);
  }
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      const int r = warp_row0 + mt * 16 + g + 8 * hf;
      if (r >= rows) continue;
      uint16_t* dst = p.out + (row0 + r) * p.out_row_stride + h * D + tq * 2;
#pragma unroll
      for (int dt = 0; dt < kDT; ++dt) {
        *reinterpret_cast<uint32_t*>(dst + dt * 8) =
            pack_bf16x2(o[mt][dt][2 * hf] * inv[mt][hf], o[mt][dt][2 * hf + 1] * inv[mt][hf]);
      }
    }
  }
}

template <int D, KvDtype KT>
cudaError_t launch(const PrefillAttentionParams& p, cudaStream_t stream) {
  // Set on every launch: the attribute belongs to the current device's context, and setting it
  // is cheap and allowed during stream capture.
  constexpr int kElemBytes = KT == KvDtype::kF16 ? 2 : 1;
  constexpr int kSmem = Smem<D, kElemBytes>::kBytes;
  const auto kernel = prefill_attention_kernel<D, KT>;
  if (const cudaError_t e =
          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
      e != cudaSuccess) {
    return e;
  }
  if (const cudaError_t e = cudaFuncSetAttribute(
          kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared);
      e != cudaSuccess) {
    return e;
  }
  const dim3 grid(static_cast<unsigned>(p.num_heads),
                  static_cast<unsigned>((p.max_q_len + kBM - 1) / kBM),
                  static_cast<unsigned>(p.num_seqs));
  kernel<<<grid, kThreads, kSmem, stream>>>(p, p.scale * kLog2e);
  return cudaGetLastError();
}

template <int D>
cudaError_t launch(const PrefillAttentionParams& p, cudaStream_t stream) {
  switch (p.kv.dtype) {
    case KvDtype::kInt8:
      return launch<D, KvDtype::kInt8>(p, stream);
    case KvDtype::kFp8:
      return launch<D, KvDtype::kFp8>(p, stream);
    default:
      return launch<D, KvDtype::kF16>(p, stream);
  }
}

bool aligned(const void* ptr, uintptr_t bytes) {
  return reinterpret_cast<uintptr_t>(ptr) % bytes == 0;
}

}  // namespace

int prefill_attention_smem_bytes(int head_dim, KvDtype dtype) {
  const int eb = kv_device_elem_bytes(dtype);
  if (eb == 0) return 0;
  if (head_dim == 64) return eb == 2 ? Smem<64>::kBytes : Smem<64, 1>::kBytes;
  if (head_dim == 128) return eb == 2 ? Smem<128>::kBytes : Smem<128, 1>::kBytes;
  return 0;
}

cudaError_t prefill_attention_check(const PrefillAttentionParams& p) {
  const PagedKvDevice& kv = p.kv;
  const int64_t row = static_cast<int64_t>(p.num_heads) * kv.head_dim;
  const bool ok =
      (kv.head_dim == 64 || kv.head_dim == 128) && kv.num_kv_heads > 0 && p.num_heads > 0 &&
      p.num_heads % kv.num_kv_heads == 0 && kv.block_size > 0 && kv.block_size % 16 == 0 &&
      static_cast<int64_t>(kv.num_kv_heads) * kv.block_size * kv.head_dim <= INT32_MAX &&
      kv.block_table_stride >= 0 && kv.k_cache != nullptr && kv.v_cache != nullptr &&
      kv.block_tables != nullptr && aligned(kv.k_cache, 16) && aligned(kv.v_cache, 16) &&
      p.q != nullptr && aligned(p.q, 16) && p.q_row_stride % 4 == 0 && p.q_row_stride >= row &&
      p.query_start != nullptr && p.seq_lens != nullptr && p.num_seqs >= 0 &&
      p.num_seqs <= kMaxGridZ && p.max_q_len >= 0 &&
      (static_cast<int64_t>(p.max_q_len) + kBM - 1) / kBM <= kMaxGridY && p.scale > 0.0f &&
      std::isfinite(p.scale) && p.out != nullptr && aligned(p.out, 4) &&
      p.out_row_stride % 2 == 0 && p.out_row_stride >= row && kv_device_elem_bytes(kv.dtype) != 0 &&
      p.sliding_window >= 0;
  const bool scales_ok =
      kv_device_elem_bytes(kv.dtype) != 1 || (kv.k_scales != nullptr && kv.v_scales != nullptr &&
                                              aligned(kv.k_scales, 16) && aligned(kv.v_scales, 16));
  return ok && scales_ok ? cudaSuccess : cudaErrorInvalidValue;
}

cudaError_t prefill_attention(const PrefillAttentionParams& p, cudaStream_t stream) {
  if (p.num_seqs == 0 || p.max_q_len == 0) return cudaSuccess;
  if (const cudaError_t e = prefill_attention_check(p); e != cudaSuccess) return e;
  return p.kv.head_dim == 64 ? launch<64>(p, stream) : launch<128>(p, stream);
}

}  // namespace llmserve::kernels::cuda
