// Paged decode attention from a host plan (decode_plan.h). Partial kernel: one CTA per (work
// item, kv head), two warps per tile of 8 query heads of the group (more tiles, more warp pairs;
// groups past 64 heads take several passes). The first two warps stream the item's K/V rows
// through a 3-stage cp.async pipeline of XOR-swizzled shared-memory tiles (16-byte copies,
// zero-filled past the item's end), the two warps of a head tile take half of each tile's keys.
// Tensor cores with the key axis as M (m16n8k16, bf16 in, f32 out): S^T = K Q^T over 16 keys x
// 8 heads, online softmax in f32 on the accumulators, P^T back to an operand with movmatrix,
// O^T += V^T P^T. Items that are a whole request write bf16 out, the others (o, max, sum) to
// their workspace slot; the merge kernel combines a request's splits with log-sum-exp.
// 8-bit caches (int8, e4m3): the loaders stream half the bytes into plain staging tiles (with the
// rows' f16 scales); after each tile lands all threads convert it exactly to the bf16 tile the
// mma code reads, and the scales enter in f32: K's multiplies the scores, V's the softmax weights
// fed to O^T += V^T P^T (the row sum keeps the unscaled weights).
#include "cuda_common.cuh"
#include "decode_attention_internal.cuh"
#include "kv_quant.cuh"
#include "llmserve/kernels/cuda/decode_plan.h"
#include "tensor_core.cuh"

namespace llmserve::kernels::cuda {
namespace {

using detail::cp_async16;
using detail::cp_async4;
using detail::cp_async_commit;
using detail::cp_async_wait;
using detail::fast_exp2;
using detail::ldmatrix_x4;
using detail::ldmatrix_x4_trans;
using detail::mma_bf16;
using detail::pack_bf16x2;
using PartialArgs = detail::DecodePartialArgs;
constexpr int kHeadTile = detail::kDecodeHeadTile;
constexpr int kMaxHeadTiles = detail::kDecodeMaxHeadTiles;

constexpr int kStages = 3;
constexpr int kTileBytes = 8192;                      // bytes of K (and of V) per stage
constexpr int kSmemBytes = kStages * 2 * kTileBytes;  // 48 KiB: no opt-in needed
constexpr int kLoaders = 64;                          // the first two warps issue the copies

// EB: bytes per cached element, 2 (bf16) or 1 (int8, e4m3). Shared memory, bf16: kStages stages
// of [K, V] bf16 tiles. 8-bit: the [K, V] bf16 tiles the mma reads, then kStages stages of
// [K, V] staging tiles of cached bytes and [K, V] f16 scales of the tile's keys.
template <int D, int EB>
struct Geometry {
  static constexpr int kChunks = D / 8;                   // 16-byte chunks in a bf16 row
  static constexpr int kTileKeys = kTileBytes / (2 * D);  // 32 or 64
  static constexpr int kTileChunks = kTileKeys * kChunks;
  static constexpr int kSrcChunks = D * EB / 16;  // 16-byte chunks in a cached row
  static constexpr int kSrcTileChunks = kTileKeys * kSrcChunks;
  static constexpr int kWarpKeys = kTileKeys / 2;  // keys per warp per tile
  static constexpr int kLoadRows = kSrcTileChunks / kLoaders;
  static constexpr int kLoadRowStride = kLoaders / kSrcChunks;
  static constexpr int kAccRegs = D / 16 * 4;           // O^T accumulators per thread
  static constexpr int kScratch = (kAccRegs + 4) * 32;  // floats per head tile after the loop
  static constexpr int kBf16Bytes = EB == 1 ? 2 * kTileChunks * 16 : 0;
  static constexpr int kScaleBytes = EB == 1 ? 2 * kTileKeys * 2 : 0;  // per stage
  static constexpr int kStageBytes = 2 * kSrcTileChunks * 16 + kScaleBytes;
  static constexpr int kSmem = kBf16Bytes + kStages * kStageBytes;
  static_assert(kWarpKeys % 16 == 0, "whole 16-key mma steps");
  static_assert(kHeadTile * (D + 4) <= kScratch, "staged output fits the scratch");
  static_assert(kMaxHeadTiles * kScratch * 4 <= kSmem, "scratch fits the tiles");
  static_assert(kSmem <= kSmemBytes, "no opt-in shared memory");
  static_assert(kTileKeys / 2 <= kLoaders, "one scale pair per loader");
};

// The transpose of an 8x8 b16 matrix held in mma fragment layout, in the same layout.
__device__ __forceinline__ uint32_t movmatrix_trans(uint32_t x) {
  uint32_t r;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(r) : "r"(x));
  return r;
}

// Shared-memory byte offset of 16-byte chunk c of row `row` in a tile: chunks XOR-swizzled by
// row % 8, so the 8 rows an ldmatrix phase reads hit 8 different bank groups.
template <int D>
__device__ __forceinline__ uint32_t chunk_offset(int row, int c) {
  return static_cast<uint32_t>((row * (D / 8) + (c ^ (row & 7))) * 16);
}

// Scale of the old state and of the new one when folding (m2, l2) into (m, l).
__device__ __forceinline__ void fold_factors(float& m, float& l, float m2, float l2, float& fa,
                                             float& fb) {
  const float mx = fmaxf(m, m2);
  const float ms = mx == -INFINITY ? 0.0f : mx;
  fa = fast_exp2(m - ms);
  fb = fast_exp2(m2 - ms);
  l = l * fa + l2 * fb;
  m = mx;
}

// 112 registers: no spills on sm_80 / sm_90, and 2 * kMaxHeadTiles warps fit an SM.
template <int D, KvDtype KT>
__global__ void __maxnreg__(112) decode_partial_kernel(PartialArgs a) {
  constexpr bool kQuant = KT != KvDtype::kF16;
  using Geo = Geometry<D, kQuant ? 1 : 2>;
  constexpr int CH = Geo::kChunks, TK = Geo::kTileKeys, TC = Geo::kTileChunks;
  constexpr int SCH = Geo::kSrcChunks, STC = Geo::kSrcTileChunks, RB = SCH * 16;
  constexpr int LR = Geo::kLoadRows, LRS = Geo::kLoadRowStride, NACC = Geo::kAccRegs;
  extern __shared__ uint4 smem[];  // bf16: [kStages][K, V][TC] swizzled 16-byte chunks

  const int per_item = a.num_kv_heads * a.passes;
  const int item = static_cast<int>(blockIdx.x) / per_item;
  if (item >= a.plan[0]) return;
  const int rest = static_cast<int>(blockIdx.x) - item * per_item;
  const int kvh = rest / a.passes, pass = rest - kvh * a.passes;
  const int32_t* it = a.plan + kDecodePlanHeaderInts + item * kDecodePlanItemInts;
  const int b = it[0], kv_end = it[2], slot = it[3];
  // Sliding window: keys below lo are outside it. The item starts at the even key at or below
  // lo when that is inside it (pairs of 8-bit scales stay in one page: block_size is even),
  // and the keys [kv_begin, lo) left are masked; an item wholly below lo has no tiles.
  const int lo = a.window > 0 ? max(0, a.seq_lens[b] - a.window) : 0;
  const int kv_begin = min(max(it[1], lo & ~1), kv_end);

  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const int ht = warp >> 1, kw = warp & 1;
  const int g = lane >> 2, tig = lane & 3;  // mma fragment row group and thread in group
  const int g0 = (pass * a.head_tiles + ht) * kHeadTile;  // first group head of the tile

  // Q^T as the B operand, per 16 dims: rows (dims) 2tig, 2tig+1 and +8, column (head) g.
  uint32_t qf[D / 16][2];
  {
    const bool valid = g0 + g < a.group;
    const float* qrow = a.q + b * a.q_stride +
                        (static_cast<int64_t>(kvh) * a.group + (valid ? g0 + g : 0)) * D + 2 * tig;
#pragma unroll
    for (int d = 0; d < D / 16; ++d) {
      float2 x = make_float2(0.0f, 0.0f), y = x;
      if (valid) {
        x = *reinterpret_cast<const float2*>(qrow + d * 16);
        y = *reinterpret_cast<const float2*>(qrow + d * 16 + 8);
      }
      qf[d][0] = pack_bf16x2(x.x * a.scale_log2, x.y * a.scale_log2);
      qf[d][1] = pack_bf16x2(y.x * a.scale_log2, y.y * a.scale_log2);
    }
  }

  // O^T accumulators: [d][0..1] dim 16d + g, heads 2tig, 2tig+1; [d][2..3] dim 16d + g + 8.
  float o[D / 16][4];
#pragma unroll
  for (int d = 0; d < D / 16; ++d) o[d][0] = o[d][1] = o[d][2] = o[d][3] = 0.0f;
  float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;  // heads 2tig, 2tig + 1

  // Loader thread tid < kLoaders copies chunk tid % SCH of rows tid / SCH + r * LRS of each tile
  // (8-bit: and loader tid < TK / 2 the scales of keys 2 tid, 2 tid + 1).
  const int32_t* bt = a.block_tables + b * a.bt_stride;
  const int num_tiles = (kv_end - kv_begin + TK - 1) / TK;
  const uint32_t smem_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const bool loader = tid < kLoaders;
  const int lrow = tid / SCH, lc = tid % SCH;
  // Rows (of D elements) in the cache of the next tile's keys, -1 past the item's end; a layer's
  // cache holds fewer than 2^31 rows. (f_page, f_off): page index and offset of this thread's
  // first row of the next tile to fetch, walked without divisions.
  int32_t src[LR];
  const int bs = a.block_size;
  int f_page = (kv_begin + lrow) / bs, f_off = kv_begin + lrow - f_page * bs;
  const int row_pages = LRS / bs, row_off = LRS - row_pages * bs;
  const int tile_pages = TK / bs, tile_off = TK - tile_pages * bs;
  // 8-bit: the scale row of this thread's key pair of the next tile, -1 past the end. Keys pair
  // up within a page: block_size and kv_begin (a block multiple) are even.
  int32_t s_src = -1;
  int s_page = 0, s_off = 0;
  if constexpr (kQuant) {
    s_page = (kv_begin + 2 * tid) / bs;
    s_off = kv_begin + 2 * tid - s_page * bs;
  }
  auto fetch = [&](int tile) {
    int page = f_page, off = f_off, t = kv_begin + tile * TK + lrow;
#pragma unroll
    for (int r = 0; r < LR; ++r) {
      src[r] = t < kv_end ? (bt[page] * a.num_kv_heads + kvh) * bs + off : -1;
      t += LRS;
      page += row_pages;
      off += row_off;
      if (off >= bs) {
        off -= bs;
        ++page;
      }
    }
    f_page += tile_pages;
    f_off += tile_off;
    if (f_off >= bs) {
      f_off -= bs;
      ++f_page;
    }
    if constexpr (kQuant) {
      const int key = kv_begin + tile * TK + 2 * tid;
      s_src = tid < TK / 2 && key < kv_end ? (bt[s_page] * a.num_kv_heads + kvh) * bs + s_off : -1;
      s_page += tile_pages;
      s_off += tile_off;
      if (s_off >= bs) {
        s_off -= bs;
        ++s_page;
      }
    }
  };
  auto issue = [&](int stage) {
    const uint32_t st = smem_base + Geo::kBf16Bytes + stage * Geo::kStageBytes;
#pragma unroll
    for (int r = 0; r < LR; ++r) {
      const int row = lrow + r * LRS;
      const uint32_t dst =
          st + (kQuant ? static_cast<uint32_t>((row * SCH + lc) * 16) : chunk_offset<D>(row, lc));
      const bool ok = src[r] >= 0;
      const int64_t e = ok ? static_cast<int64_t>(src[r]) * RB + lc * 16 : 0;
      const int bytes = ok ? 16 : 0;
      cp_async16(dst, a.k_cache + e, bytes);
      cp_async16(dst + STC * 16, a.v_cache + e, bytes);
    }
    if constexpr (kQuant) {
      if (tid < TK / 2) {
        const bool ok = s_src >= 0;
        const int64_t e = ok ? s_src : 0;
        const uint32_t dst = st + 2 * STC * 16 + tid * 4;
        cp_async4(dst, a.k_scales + e, ok ? 4 : 0);
        cp_async4(dst + TK * 2, a.v_scales + e, ok ? 4 : 0);
      }
    }
  };

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (loader && s < num_tiles) {
      fetch(s);
      issue(s);
    }
    cp_async_commit();
  }

  // ldmatrix lane roles: matrix mi = lane / 8, row lane % 8 of it.
  const int mi = lane >> 3, mr = lane & 7;
  const int k_row = (mi & 1) * 8 + mr, k_chunk = mi >> 1;  // K as A: keys +8 | dims +8
  const int v_row = (mi >> 1) * 8 + mr, v_chunk = mi & 1;  // V^T as A (trans): dims +8 | keys +8
  for (int tile = 0; tile < num_tiles; ++tile) {
    const int next = tile + kStages - 1;
    if (loader && next < num_tiles) fetch(next);
    cp_async_wait<kStages - 2>();  // this thread's copies of `tile` have landed
    __syncthreads();               // everyone's have, and stage (tile - 1) % kStages is free
    if (loader && next < num_tiles) issue(next % kStages);
    cp_async_commit();

    const int valid = kv_end - (kv_begin + tile * TK);  // rows >= valid are past the item
    uint32_t sk = smem_base + (tile % kStages) * 2 * TC * 16;
    const uint16_t* ks = nullptr;  // 8-bit: this tile's K and V scales
    const uint16_t* vs = nullptr;
    if constexpr (kQuant) {
      auto* bytes = reinterpret_cast<unsigned char*>(smem);
      unsigned char* st = bytes + Geo::kBf16Bytes + (tile % kStages) * Geo::kStageBytes;
      detail::convert_tile_to_bf16<KT, D>(st, bytes, 2 * STC, tid, static_cast<int>(blockDim.x),
                                          [](int r, int c) { return chunk_offset<D>(r, c); });
      auto* sc = reinterpret_cast<uint16_t*>(st + 2 * STC * 16);
      if (tid < TK && tid >= valid) sc[tid] = sc[TK + tid] = 0;  // a pair's half past the end
      ks = sc;
      vs = sc + TK;
      sk = smem_base;
      __syncthreads();
    }
    const uint32_t sv = sk + TC * 16;
#pragma unroll
    for (int step = 0; step < Geo::kWarpKeys / 16; ++step) {
      const int kb = kw * Geo::kWarpKeys + step * 16;  // first key row of this step
      if (kb >= valid) break;                          // warp-uniform
      float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};  // keys kb + g, kb + g + 8 x heads 2tig, 2tig + 1
#pragma unroll
      for (int d = 0; d < D / 16; ++d) {
        uint32_t ka[4];
        ldmatrix_x4(sk + chunk_offset<D>(kb + k_row, 2 * d + k_chunk), ka);
        mma_bf16(s, ka, qf[d][0], qf[d][1]);
      }
      if constexpr (kQuant) {
        const float k0 = detail::scale_to_f32(ks[kb + g]),
                    k1 = detail::scale_to_f32(ks[kb + g + 8]);
        s[0] *= k0;
        s[1] *= k0;
        s[2] *= k1;
        s[3] *= k1;
      }
      if (kb + g >= valid) s[0] = s[1] = -INFINITY;
      if (kb + g + 8 >= valid) s[2] = s[3] = -INFINITY;
      if (a.window > 0) {  // keys below the window (only the first tile of an item has them)
        const int key0 = kv_begin + tile * TK + kb + g;
        if (key0 < lo) s[0] = s[1] = -INFINITY;
        if (key0 + 8 < lo) s[2] = s[3] = -INFINITY;
      }
      float x0 = fmaxf(s[0], s[2]), x1 = fmaxf(s[1], s[3]);
#pragma unroll
      for (int off = 4; off < 32; off <<= 1) {
        x0 = fmaxf(x0, __shfl_xor_sync(0xffffffffu, x0, off));
        x1 = fmaxf(x1, __shfl_xor_sync(0xffffffffu, x1, off));
      }
      x0 = fmaxf(x0, m0);
      x1 = fmaxf(x1, m1);
      const float ms0 = x0 == -INFINITY ? 0.0f : x0, ms1 = x1 == -INFINITY ? 0.0f : x1;
      const float al0 = fast_exp2(m0 - ms0), al1 = fast_exp2(m1 - ms1);
      m0 = x0;
      m1 = x1;
      const float p0 = fast_exp2(s[0] - ms0), p1 = fast_exp2(s[1] - ms1);
      const float p2 = fast_exp2(s[2] - ms0), p3 = fast_exp2(s[3] - ms1);
      l0 = l0 * al0 + (p0 + p2);  // this lane's keys only; summed over g at the end
      l1 = l1 * al1 + (p1 + p3);
#pragma unroll
      for (int d = 0; d < D / 16; ++d) {
        o[d][0] *= al0;
        o[d][1] *= al1;
        o[d][2] *= al0;
        o[d][3] *= al1;
      }
      // P^T (keys x heads) fragments -> P^T as the B operand: rows (keys) 2tig.., column g.
      uint32_t pb0, pb1;
      if constexpr (kQuant) {
        const float v0 = detail::scale_to_f32(vs[kb + g]),
                    v1 = detail::scale_to_f32(vs[kb + g + 8]);
        pb0 = movmatrix_trans(pack_bf16x2(p0 * v0, p1 * v0));
        pb1 = movmatrix_trans(pack_bf16x2(p2 * v1, p3 * v1));
      } else {
        pb0 = movmatrix_trans(pack_bf16x2(p0, p1));
        pb1 = movmatrix_trans(pack_bf16x2(p2, p3));
      }
#pragma unroll
      for (int d = 0; d < D / 16; ++d) {
        uint32_t va[4];
        ldmatrix_x4_trans(sv + chunk_offset<D>(kb + v_row, 2 * d + v_chunk), va);
        mma_bf16(o[d], va, pb0, pb1);
      }
    }
  }
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#pragma unroll
  for (int off = 4; off < 32; off <<= 1) {
    l0 += __shfl_xor_sync(0xffffffffu, l0, off);
    l1 += __shfl_xor_sync(0xffffffffu, l1, off);
  }

  // The odd warp of each head tile hands its state to the even one through shared memory
  // (the tiles are no longer read); both hold it in the same fragment layout.
  float* scratch = reinterpret_cast<float*>(smem) + ht * Geo::kScratch;
  __syncthreads();
  if (kw == 1) {
#pragma unroll
    for (int d = 0; d < D / 16; ++d) {
#pragma unroll
      for (int i = 0; i < 4; ++i) scratch[(d * 4 + i) * 32 + lane] = o[d][i];
    }
    scratch[(NACC + 0) * 32 + lane] = m0;
    scratch[(NACC + 1) * 32 + lane] = m1;
    scratch[(NACC + 2) * 32 + lane] = l0;
    scratch[(NACC + 3) * 32 + lane] = l1;
  }
  __syncthreads();
  if (kw == 1) return;
  float fa0, fb0, fa1, fb1;
  fold_factors(m0, l0, scratch[(NACC + 0) * 32 + lane], scratch[(NACC + 2) * 32 + lane], fa0, fb0);
  fold_factors(m1, l1, scratch[(NACC + 1) * 32 + lane], scratch[(NACC + 3) * 32 + lane], fa1, fb1);
#pragma unroll
  for (int d = 0; d < D / 16; ++d) {
    o[d][0] = o[d][0] * fa0 + scratch[(d * 4 + 0) * 32 + lane] * fb0;
    o[d][1] = o[d][1] * fa1 + scratch[(d * 4 + 1) * 32 + lane] * fb1;
    o[d][2] = o[d][2] * fa0 + scratch[(d * 4 + 2) * 32 + lane] * fb0;
    o[d][3] = o[d][3] * fa1 + scratch[(d * 4 + 3) * 32 + lane] * fb1;
  }
  __syncwarp();

  // Normalised rows to [head][D + 4] in the same scratch, then 16-byte stores per (head, chunk).
  const float inv0 = l0 > 0.0f ? 1.0f / l0 : 0.0f, inv1 = l1 > 0.0f ? 1.0f / l1 : 0.0f;
  constexpr int RS = D + 4;
#pragma unroll
  for (int d = 0; d < D / 16; ++d) {
    scratch[(2 * tig) * RS + d * 16 + g] = o[d][0] * inv0;
    scratch[(2 * tig + 1) * RS + d * 16 + g] = o[d][1] * inv1;
    scratch[(2 * tig) * RS + d * 16 + g + 8] = o[d][2] * inv0;
    scratch[(2 * tig + 1) * RS + d * 16 + g + 8] = o[d][3] * inv1;
  }
  __syncwarp();
#pragma unroll
  for (int i = 0; i < kHeadTile * CH / 32; ++i) {
    const int idx = i * 32 + lane, n = idx / CH, c = idx % CH;
    if (g0 + n >= a.group) continue;
    const int head = kvh * a.group + g0 + n;
    const float4 x = *reinterpret_cast<const float4*>(scratch + n * RS + c * 8);
    const float4 y = *reinterpret_cast<const float4*>(scratch + n * RS + c * 8 + 4);
    if (slot < 0) {
      *reinterpret_cast<uint4*>(a.out + b * a.out_stride + head * D + c * 8) =
          make_uint4(pack_bf16x2(x.x, x.y), pack_bf16x2(x.z, x.w), pack_bf16x2(y.x, y.y),
                     pack_bf16x2(y.z, y.w));
    } else {
      float* dst = a.ws_o + (static_cast<int64_t>(slot) * a.num_heads + head) * D + c * 8;
      *reinterpret_cast<float4*>(dst) = x;
      *reinterpret_cast<float4*>(dst + 4) = y;
    }
  }
  if (slot >= 0 && g == 0) {  // lanes 0..3 hold (m, l) of heads 2tig, 2tig + 1
    const int64_t row = static_cast<int64_t>(slot) * a.num_heads + kvh * a.group + g0 + 2 * tig;
    if (g0 + 2 * tig < a.group) {
      *reinterpret_cast<float2*>(a.ws_ml + row * 2) = make_float2(m0, l0);
    }
    if (g0 + 2 * tig + 1 < a.group) {
      *reinterpret_cast<float2*>(a.ws_ml + (row + 1) * 2) = make_float2(m1, l1);
    }
  }
}

template <int D>
void* partial_kernel(KvDtype dtype, int* smem) {
  switch (dtype) {
    case KvDtype::kInt8:
      *smem = Geometry<D, 1>::kSmem;
      return reinterpret_cast<void*>(&decode_partial_kernel<D, KvDtype::kInt8>);
    case KvDtype::kFp8:
      *smem = Geometry<D, 1>::kSmem;
      return reinterpret_cast<void*>(&decode_partial_kernel<D, KvDtype::kFp8>);
    default:
      *smem = Geometry<D, 2>::kSmem;
      return reinterpret_cast<void*>(&decode_partial_kernel<D, KvDtype::kF16>);
  }
}

}  // namespace

void* detail::decode_partial_kernel_for(int head_dim, KvDtype dtype, int* smem) {
  return head_dim == 64 ? partial_kernel<64>(dtype, smem) : partial_kernel<128>(dtype, smem);
}

}  // namespace llmserve::kernels::cuda
