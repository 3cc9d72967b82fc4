#include "llmserve/kernels/packed_weight.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/cpu/pack_k_quants.h"
#include "kernels/cpu/packed_float.h"
#include "kernels/cpu/packed_layout.h"
#include "kernels/cpu/quantize_activations.h"
#include "llmserve/kernels/host_memory.h"
#include "llmserve/kernels/quant_blocks.h"

namespace llmserve::kernels {
namespace {

using cpu::ActQ8;
using cpu::kGroupRows;

constexpr int64_t kGroupsPerTask = 2;  // 16 output rows per task
constexpr int64_t kTileM = 64;         // activation rows per task when M is large

// Bytes of a group (8 rows) per 32 elements of K.
size_t group_block_bytes(DType t) {
  switch (t) {
    case DType::Q4_0:
      return sizeof(cpu::PackQ4_0x8);
    case DType::Q4_1:
      return sizeof(cpu::PackQ4_1x8);
    case DType::Q8_0:
      return sizeof(cpu::PackQ8_0x8);
    default:
      return cpu::k_quant_pack_bytes(t) / cpu::kSubBlocks;
  }
}

cpu::PackFormat format_of(DType t) {
  switch (t) {
    case DType::Q4_0:
      return cpu::kPackQ4_0;
    case DType::Q4_1:
      return cpu::kPackQ4_1;
    case DType::Q8_0:
      return cpu::kPackQ8_0;
    case DType::Q4_K:
      return cpu::kPackQ4_K;
    case DType::Q5_K:
      return cpu::kPackQ5_K;
    case DType::Q2_K:
      return cpu::kPackQ2_K;
    default:
      return cpu::kPackQ6_K;  // Q6_K, Q3_K
  }
}

// Weights whose kernels share one activation layout: 4-bit with a min term (pairs keep ds), Q8_0
// (pairs take the unsigned-weight correction), Q6_K-like (ds slots hold half-block sums), or f32
// activations (F16 / BF16 panels, packed_float.h).
enum class ActLayout { kQ4, kQ8_0, kQ6, kFloat };
ActLayout act_layout_of(DType t) {
  if (cpu::is_float_pack_type(t)) return ActLayout::kFloat;
  switch (format_of(t)) {
    case cpu::kPackQ8_0:
      return ActLayout::kQ8_0;
    case cpu::kPackQ6_K:
    case cpu::kPackQ2_K:
      return ActLayout::kQ6;
    default:
      return ActLayout::kQ4;
  }
}

// Interleaves `chunks` 4-byte pieces of each of the 8 source rows' quants into dst.
void interleave(const uint8_t* const* src_qs, int chunks, uint8_t* dst) {
  for (int c = 0; c < chunks; ++c) {
    for (int j = 0; j < kGroupRows; ++j) std::memcpy(dst + c * 32 + j * 4, src_qs[j] + c * 4, 4);
  }
}

template <typename Src, typename Dst>
void pack_group_block(const Src* const* rows, Dst& out) {
  const uint8_t* qs[kGroupRows];
  for (int j = 0; j < kGroupRows; ++j) {
    out.d[j] = rows[j]->d;
    if constexpr (std::is_same_v<Src, BlockQ4_1>) out.m[j] = rows[j]->m;
    qs[j] = reinterpret_cast<const uint8_t*>(rows[j]->qs);
  }
  interleave(qs, static_cast<int>(sizeof(Src::qs) / 4), reinterpret_cast<uint8_t*>(out.qs));
}

template <typename Src, typename Dst>
void pack_one_group(const Src* src, int64_t N, int64_t nb, int64_t g, const Src& zero, Dst* out) {
  for (int64_t b = 0; b < nb; ++b) {
    const Src* rows[kGroupRows];
    for (int j = 0; j < kGroupRows; ++j) {
      const int64_t n = g * kGroupRows + j;
      rows[j] = n < N ? src + n * nb + b : &zero;
    }
    pack_group_block(rows, out[g * nb + b]);
  }
}

template <typename Src, typename Dst>
void pack_all(const void* w, int64_t N, int64_t K, Dst* out, ThreadPool* pool) {
  const int64_t nb = K / kQK, groups = (N + kGroupRows - 1) / kGroupRows;
  const Src zero{};
  const auto* src = static_cast<const Src*>(w);
  auto pack_groups = [&](int64_t g0, int64_t g1) {
    for (int64_t g = g0; g < g1; ++g) pack_one_group(src, N, nb, g, zero, out);
  };
  if (pool != nullptr) {
    pool->parallel_for(groups, pack_groups);
  } else {
    pack_groups(0, groups);
  }
}

bool detect_vnni() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512bw");
}

std::atomic<PackedIsa> g_requested{PackedIsa::kAuto};

PackedIsa resolve(PackedIsa want) {
  if (want == PackedIsa::kAvx2 || !cpu_has_avx512_vnni()) return PackedIsa::kAvx2;
  return want == PackedIsa::kAvx512Vnni256 ? PackedIsa::kAvx512Vnni256 : PackedIsa::kAvx512Vnni;
}

const cpu::PackedKernels& kernels_for(PackedIsa isa) {
  static const cpu::PackedKernels avx2 = cpu::packed_kernels_avx2();
  static const cpu::PackedKernels vnni =
      cpu_has_avx512_vnni() ? cpu::packed_kernels_avx512_vnni(true) : avx2;
  static const cpu::PackedKernels vnni256 =
      cpu_has_avx512_vnni() ? cpu::packed_kernels_avx512_vnni(false) : avx2;
  return isa == PackedIsa::kAvx512Vnni ? vnni : isa == PackedIsa::kAvx512Vnni256 ? vnni256 : avx2;
}

}  // namespace

void PackedWeight::Free::operator()(void* p) const {
  host_free(p);
}

bool cpu_has_avx512_vnni() {
  static const bool has = detect_vnni();
  return has;
}

void set_packed_isa(PackedIsa isa) {
  g_requested.store(isa);
}
PackedIsa active_packed_isa() {
  return resolve(g_requested.load());
}

bool can_pack_weight(DType type, int64_t N, int64_t K) {
  if (cpu::is_float_pack_type(type)) return cpu::can_pack_float(type, N, K);
  const int64_t block = cpu::k_quant_pack_bytes(type) != 0 ? kQKK : kQK;
  return group_block_bytes(type) != 0 && N > 0 && K > 0 && K % block == 0;
}

PackedWeight pack_weight(DType type, const void* w, int64_t N, int64_t K, ThreadPool* pool) {
  PackedWeight p;
  if (!can_pack_weight(type, N, K)) return p;
  const int64_t groups = (N + kGroupRows - 1) / kGroupRows;
  const size_t bytes = cpu::is_float_pack_type(type)
                           ? cpu::packed_float_bytes(type, N, K)
                           : static_cast<size_t>(groups * (K / kQK)) * group_block_bytes(type);
  void* mem = host_alloc((bytes + 63) / 64 * 64);
  if (mem == nullptr) return p;
  switch (type) {
    case DType::Q4_0:
      pack_all<BlockQ4_0>(w, N, K, static_cast<cpu::PackQ4_0x8*>(mem), pool);
      break;
    case DType::Q4_1:
      pack_all<BlockQ4_1>(w, N, K, static_cast<cpu::PackQ4_1x8*>(mem), pool);
      break;
    case DType::Q8_0:
      pack_all<BlockQ8_0>(w, N, K, static_cast<cpu::PackQ8_0x8*>(mem), pool);
      break;
    case DType::F16:
    case DType::BF16:
      cpu::pack_float(type, w, N, K, mem, pool);
      break;
    default:
      cpu::pack_k_quants(type, w, N, K, mem, pool);
      break;
  }
  p.data_.reset(static_cast<uint8_t*>(mem));
  p.bytes_ = bytes;
  p.type_ = type;
  p.rows_ = N;
  p.cols_ = K;
  return p;
}

namespace {
// The two rows (main, residual) of a q8x2 token, quantized at src (nb blocks each, not yet
// pair-laid), paired into rows row and row + 1 of a tile in the wide layout. For Q4 weights
// (!q8_0_correction) the main pairs' ds become main.ds + res.ds, the sum the Q4 wide kernels add;
// for Q8_0 those slots hold the corrections instead.
void pair_token_to_wide_layout(const ActQ8* src, int64_t nb, ActQ8* tile, int64_t tile_rows,
                               int64_t row, bool q8_0_correction) {
  auto* to = reinterpret_cast<cpu::ActQ8Pair*>(tile);
  cpu::pair_act_row_to(src, nb, to + row, tile_rows, q8_0_correction);
  cpu::pair_act_row_to(src + nb, nb, to + row + 1, tile_rows, q8_0_correction);
  if (!q8_0_correction) {
    for (int64_t p = 0; p < nb / 2; ++p) {
      cpu::ActQ8Pair& m = to[p * tile_rows + row];
      const cpu::ActQ8Pair& r = to[p * tile_rows + row + 1];
      for (int i = 0; i < 2; ++i) m.ds[i] += r.ds[i];
    }
  }
  if (nb % 2 != 0) {
    for (int64_t r = 0; r < 2; ++r)
      tile[cpu::wide_odd_block_index(nb, tile_rows, row + r)] = src[r * nb + nb - 1];
  }
}
}  // namespace

void matmul_packed(ThreadPool& pool, const float* x, int64_t M, const PackedWeight& w, float* y,
                   ActPrecision precision) {
  const PackedWeight* ws[] = {&w};
  float* ys[] = {y};
  matmul_packed_multi(pool, x, M, ws, ys, precision);
}

void matmul_packed_multi(ThreadPool& pool, const float* x, int64_t M,
                         std::span<const PackedWeight* const> ws, std::span<float* const> ys,
                         ActPrecision precision) {
  constexpr size_t kMaxWeights = 8;
  const size_t nw = std::min({ws.size(), ys.size(), kMaxWeights});
  if (M <= 0 || nw == 0) return;
  // Weights that want different activation layouts go in separate calls.
  const ActLayout layout = act_layout_of(ws[0]->type());
  for (size_t i = 1; i < nw; ++i) {
    if (act_layout_of(ws[i]->type()) == layout) continue;
    const PackedWeight* same_w[kMaxWeights];
    const PackedWeight* other_w[kMaxWeights];
    float* same_y[kMaxWeights];
    float* other_y[kMaxWeights];
    size_t ns = 0, no = 0;
    for (size_t k = 0; k < nw; ++k) {
      if (act_layout_of(ws[k]->type()) == layout) {
        same_w[ns] = ws[k];
        same_y[ns++] = ys[k];
      } else {
        other_w[no] = ws[k];
        other_y[no++] = ys[k];
      }
    }
    matmul_packed_multi(pool, x, M, {same_w, ns}, {same_y, ns}, precision);
    matmul_packed_multi(pool, x, M, {other_w, no}, {other_y, no}, precision);
    return;
  }
  if (layout == ActLayout::kFloat) {
    cpu::matmul_packed_float_multi(pool, x, M, ws.first(nw), ys.first(nw), precision);
    return;
  }
  const int64_t K = ws[0]->cols();
  const cpu::PackedKernels& ks = kernels_for(active_packed_isa());
  const int64_t nb = K / kQK;
  // With kQ8x2 each x row becomes two quantized rows (2m: main, 2m + 1: residual) whose products
  // the kernels add into y row m (kSumRowPairs; every call starts at an even row and takes an even
  // count).
  const int passes = precision == ActPrecision::kQ8x2 ? 2 : 1;
  const int64_t rows = M * passes;
  const int64_t tile_m = rows <= 2 * kTileM ? rows : kTileM;  // even: pairs stay in one tile
  const int64_t m_tiles = (rows + tile_m - 1) / tile_m;

  struct Job {
    cpu::GroupGemmFn fn;
    cpu::WideGemmFn wide;
    const uint8_t* w;
    size_t gbytes;
    int64_t N, groups, first_task;
    float* y;
  };
  Job jobs[kMaxWeights];
  // The pair kernels read re-laid activations, which every weight of the call then takes (the
  // Q8_0 ones with the unsigned-weight correction in the ds slots). A single activation row does
  // not amortise the weights' re-lay (measured 0.87x at M = 1).
  bool pairs = rows >= 2;
  bool wide_kernels = passes == 2;
  for (size_t i = 0; i < nw; ++i) {
    pairs = pairs && ks.pairs[format_of(ws[i]->type())] != nullptr;
    wide_kernels = wide_kernels && ks.wide[format_of(ws[i]->type())] != nullptr;
  }
  wide_kernels = wide_kernels && pairs && layout != ActLayout::kQ6;  // Q6: ds holds half sums
  const bool pairs_q8_0 = pairs && layout == ActLayout::kQ8_0;
  const bool half_sums = layout == ActLayout::kQ6;
  int64_t tasks = 0;
  for (size_t i = 0; i < nw; ++i) {
    const PackedWeight& w = *ws[i];
    Job& j = jobs[i];
    const cpu::PackFormat f = format_of(w.type());
    j.fn = pairs ? ks.pairs[f] : ks.rows[f];
    j.wide = wide_kernels ? ks.wide[f] : nullptr;
    j.w = static_cast<const uint8_t*>(w.data());
    j.gbytes = static_cast<size_t>(nb) * group_block_bytes(w.type());
    j.N = w.rows();
    j.groups = (j.N + kGroupRows - 1) / kGroupRows;
    j.first_task = tasks;
    j.y = ys[i];
    tasks += (j.groups + kGroupsPerTask - 1) / kGroupsPerTask * m_tiles;
  }

  // Tiles of at least min_tokens_wide q8x2 tokens go to the wide kernels, which read a copy of
  // their activations in the wide layout.
  auto tile_end = [&](int64_t m0) { return std::min(rows, m0 + tile_m); };
  auto is_wide = [&](int64_t m0) {
    return wide_kernels && (tile_end(m0) - m0) / passes >= ks.min_tokens_wide;
  };
  thread_local std::vector<ActQ8> scratch, wide_scratch;
  if (scratch.size() < static_cast<size_t>(rows * nb))
    scratch.resize(static_cast<size_t>(rows * nb));
  if (wide_kernels && wide_scratch.size() < static_cast<size_t>(rows * nb))
    wide_scratch.resize(static_cast<size_t>(rows * nb));
  ActQ8* xq = scratch.data();
  ActQ8* xw = wide_scratch.data();
  auto quantize = [&](int64_t b, int64_t e) {
    for (int64_t m = b; m < e; ++m) {
      if (passes == 2) {
        cpu::quantize_row_act_q8x2(x + m * K, K, xq + 2 * m * nb, xq + (2 * m + 1) * nb);
        if (half_sums) cpu::store_half_sums(xq + 2 * m * nb, 2 * nb);
        const int64_t m0 = 2 * m / tile_m * tile_m;
        if (is_wide(m0)) {
          pair_token_to_wide_layout(xq + 2 * m * nb, nb, xw + m0 * nb, tile_end(m0) - m0,
                                    2 * m - m0, pairs_q8_0);
        } else if (pairs) {
          cpu::pair_act_blocks(xq + 2 * m * nb, 2, nb, pairs_q8_0);
        }
      } else {
        cpu::quantize_row_act_q8(x + m * K, K, xq + m * nb);
        if (half_sums) cpu::store_half_sums(xq + m * nb, nb);
        if (pairs) cpu::pair_act_blocks(xq + m * nb, 1, nb, pairs_q8_0);
      }
    }
  };
  if (M >= 8) {
    pool.parallel_for(M, quantize);
  } else {
    quantize(0, M);
  }

  const int max_rows = pairs ? ks.max_rows_pairs : ks.max_rows;
  // Two groups per call pay off once the call is compute-bound; with one or two rows (single-stream
  // decode) the weights' streaming dominates and one group per call keeps it sequential.
  const int64_t groups_per_call = pairs && tile_m >= 4 ? ks.pair_groups : 1;
  const unsigned sum_pairs = passes == 2 ? cpu::kSumRowPairs : 0;
  // Units: rows, or q8x2 tokens (row pairs).
  const int64_t max_units = passes == 1 ? max_rows
                            : pairs     ? ks.max_tokens_x2_pairs
                                        : ks.max_tokens_x2;
  pool.parallel_for(tasks, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      size_t i = nw - 1;
      while (jobs[i].first_task > t) --i;
      const Job& j = jobs[i];
      const int64_t lt = t - j.first_task;
      const int64_t g0 = (lt / m_tiles) * kGroupsPerTask;
      const int64_t g1 = std::min(j.groups, g0 + kGroupsPerTask);
      const int64_t m0 = (lt % m_tiles) * tile_m, m1 = std::min(rows, m0 + tile_m);
      // The tile's units in calls of near-equal size (each of at least min_tokens_wide when wide).
      const int64_t units = (m1 - m0) / passes;
      const bool wide = is_wide(m0);
      const int64_t unit_cap = wide ? ks.max_tokens_wide : max_units;
      const int64_t group_step = wide ? 1 : groups_per_call;
      const int64_t calls = (units + unit_cap - 1) / unit_cap;
      for (int64_t g = g0; g < g1; g += group_step) {
        const int64_t span = std::min<int64_t>(group_step, g1 - g) * kGroupRows;
        const int valid = static_cast<int>(std::min<int64_t>(span, j.N - g * kGroupRows));
        for (int64_t c = 0, m = m0; c < calls; ++c) {
          const int R = static_cast<int>((units / calls + (c < units % calls)) * passes);
          const unsigned flags = sum_pairs | (m == m0 ? cpu::kPrefetchWeights : 0);
          float* y = j.y + m / passes * j.N + g * kGroupRows;
          if (wide) {
            j.wide(j.w + g * j.gbytes, xw + m0 * nb, m1 - m0, m - m0, nb, R, y, j.N, valid, flags);
          } else {
            j.fn(j.w + g * j.gbytes, xq + m * nb, nb, R, y, j.N, valid, flags);
          }
          m += R;
        }
      }
    }
  });
}

}  // namespace llmserve::kernels
