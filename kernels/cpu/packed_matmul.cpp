// The matmul over packed weights: activations quantized once per call, then one parallel_for over
// (weight, 16 output rows, activation tile) tasks, each calling the micro-kernels of the active
// instruction set (packed_layout.h) on one group of 8 rows at a time.
#include <algorithm>
#include <vector>

#include "kernels/cpu/packed_float.h"
#include "kernels/cpu/packed_formats.h"
#include "kernels/cpu/packed_layout.h"
#include "kernels/cpu/quantize_activations.h"
#include "llmserve/kernels/packed_weight.h"
#include "llmserve/kernels/quant_blocks.h"

namespace llmserve::kernels {
namespace {

using cpu::ActLayout;
using cpu::ActQ8;
using cpu::kGroupRows;

constexpr int64_t kGroupsPerTask = 2;  // 16 output rows per task
constexpr int64_t kTileM = 64;         // activation rows per task when M is large

// The two rows (main, residual) of a q8x2 token, quantized at src (nb blocks each, not yet
// pair-laid), paired into rows row and row + 1 of a tile in the wide layout. For Q4 weights
// the main pairs' ds become main.ds + res.ds, the sum the Q4 wide kernels add; for Q8_0 those
// slots hold the corrections instead, and for Q6_K each row's own half sums.
void pair_token_to_wide_layout(const ActQ8* src, int64_t nb, ActQ8* tile, int64_t tile_rows,
                               int64_t row, ActLayout layout) {
  if (layout == ActLayout::kQ6) {
    cpu::q6_token_to_wide(src, src + nb, nb, reinterpret_cast<cpu::ActQ6WidePair*>(tile) + row,
                          tile_rows);
    return;
  }
  const bool q8_0_correction = layout == ActLayout::kQ8_0;
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

// One single-pass row, quantized at src (nb blocks, not pair-laid), as row `row` of a tile in the
// wide layout, its ds its own.
void row_to_wide_layout(const ActQ8* src, int64_t nb, ActQ8* tile, int64_t tile_rows, int64_t row,
                        ActLayout layout) {
  if (layout == ActLayout::kQ6) {
    cpu::q6_row_to_wide(src, nb, reinterpret_cast<cpu::ActQ6WidePair*>(tile) + row, tile_rows);
    return;
  }
  cpu::pair_act_row_to(src, nb, reinterpret_cast<cpu::ActQ8Pair*>(tile) + row, tile_rows,
                       layout == ActLayout::kQ8_0);
  if (nb % 2 != 0) tile[cpu::wide_odd_block_index(nb, tile_rows, row)] = src[nb - 1];
}

// A segment's quantized rows [q0, q0 + rows) (two per token with q8x2) in tiles of tile_m rows
// from q0; pairs: its activations are pair-laid (two rows or more).
struct Segment {
  int64_t begin, q0, rows, tile_m, m_tiles;
  bool pairs;
  int64_t tile_end(int64_t m0) const { return std::min(q0 + rows, m0 + tile_m); }
  int64_t tile_of(int64_t q) const { return q0 + (q - q0) / tile_m * tile_m; }
};

struct Job {
  cpu::GroupGemmFn fn;
  cpu::GroupGemmFn fn_many;  // for calls of more than PackedKernels::max_rows rows
  cpu::WideGemmFn wide;
  const uint8_t* w;
  size_t gbytes;
  int64_t N, groups, first_task, seg;
  int max_rows;  // rows per call of fn
  float* y;      // the output row of the segment's first x row
};

// Every weight takes first's activation layout, not kFloat, and has its K.
void run_segments(ThreadPool& pool, const float* x, std::span<const PackedSegment> segments,
                  const PackedWeight& first, ActPrecision precision) {
  const cpu::PackedKernels& ks = cpu::packed_kernels_for(active_packed_isa());
  const ActLayout layout = cpu::act_layout_of(first.type());
  const int64_t K = first.cols();
  const int64_t nb = K / kQK;
  // With kQ8x2 each x row becomes two quantized rows (2m: main, 2m + 1: residual) whose products
  // the kernels add into y row m (kSumRowPairs; every call starts at an even row and takes an even
  // count).
  const int passes = precision == ActPrecision::kQ8x2 ? 2 : 1;
  const cpu::WideGemmFn* wide_table = passes == 2 ? ks.wide : ks.wide_x1;
  bool pairs_available = true, wide_kernels = true;
  int64_t end_row = 0;
  for (const PackedSegment& s : segments) {
    end_row = std::max(end_row, s.end);
    for (const PackedWeight* w : s.ws) {
      pairs_available = pairs_available && ks.pairs[cpu::format_of(w->type())] != nullptr;
      wide_kernels = wide_kernels && wide_table[cpu::format_of(w->type())] != nullptr;
    }
  }
  // The pair kernels read re-laid activations, which every weight of the segment then takes (the
  // Q8_0 ones with the unsigned-weight correction in the ds slots). A single activation row does
  // not amortise the weights' re-lay (measured 0.87x at M = 1).
  wide_kernels = wide_kernels && pairs_available;
  const bool pairs_q8_0 = layout == ActLayout::kQ8_0;
  const bool half_sums = layout == ActLayout::kQ6;

  // Reused across calls on this thread (every matmul of a step comes here): no allocation once
  // warm. The lambdas below reach them through these references, i.e. the caller's copies.
  thread_local std::vector<Segment> tl_segs;
  thread_local std::vector<int64_t> tl_first_token;
  thread_local std::vector<Job> tl_jobs;
  std::vector<Segment>& segs = tl_segs;
  std::vector<int64_t>& first_token = tl_first_token;  // per segment, its first token (flat)
  std::vector<Job>& jobs = tl_jobs;
  segs.clear();
  first_token.clear();
  jobs.clear();
  int64_t tokens = 0, tasks = 0;
  for (const PackedSegment& in : segments) {
    const int64_t n = in.end - in.begin;
    if (n <= 0 || in.ws.empty()) continue;
    const int64_t rows = n * passes;
    const int64_t tile_m = rows <= 2 * kTileM ? rows : kTileM;  // even: pairs stay in one tile
    const bool pairs = pairs_available && rows >= 2;
    const int64_t seg = static_cast<int64_t>(segs.size());
    segs.push_back(
        {in.begin, in.begin * passes, rows, tile_m, (rows + tile_m - 1) / tile_m, pairs});
    first_token.push_back(tokens);
    tokens += n;
    for (size_t i = 0; i < in.ws.size() && i < in.ys.size(); ++i) {
      const PackedWeight& w = *in.ws[i];
      const cpu::PackFormat f = cpu::format_of(w.type());
      Job j{};
      j.fn = pairs ? ks.pairs[f] : ks.rows[f];
      j.fn_many = !pairs && passes == 1 ? ks.rows_many[f] : nullptr;
      j.max_rows = pairs ? ks.max_rows_pairs : j.fn_many ? ks.max_rows_many : ks.max_rows;
      j.wide = wide_kernels ? wide_table[f] : nullptr;
      j.w = static_cast<const uint8_t*>(w.data());
      j.gbytes = static_cast<size_t>(nb) * cpu::group_block_bytes(w.type());
      j.N = w.rows();
      j.groups = (j.N + kGroupRows - 1) / kGroupRows;
      j.first_task = tasks;
      j.seg = seg;
      j.y = in.ys[i];
      jobs.push_back(j);
      tasks += (j.groups + kGroupsPerTask - 1) / kGroupsPerTask * segs.back().m_tiles;
    }
  }
  if (tasks == 0) return;

  // Tiles of at least min_tokens_wide tokens go to the wide kernels, which read a copy of
  // their activations in the wide layout.
  auto is_wide = [&](const Segment& s, int64_t m0) {
    return wide_kernels && s.pairs && (s.tile_end(m0) - m0) / passes >= ks.min_tokens_wide;
  };
  const int64_t q_rows = end_row * passes;
  thread_local std::vector<ActQ8> scratch, wide_scratch;
  if (scratch.size() < static_cast<size_t>(q_rows * nb))
    scratch.resize(static_cast<size_t>(q_rows * nb));
  // A tile row of the wide layout: ActQ8Pair pairs (and an odd last block), or for Q6_K
  // ActQ6WidePair pairs (nb even).
  const size_t wide_row_bytes = half_sums ? static_cast<size_t>(nb / 2) * sizeof(cpu::ActQ6WidePair)
                                          : static_cast<size_t>(nb) * sizeof(ActQ8);
  const size_t wide_blocks =
      (static_cast<size_t>(q_rows) * wide_row_bytes + sizeof(ActQ8) - 1) / sizeof(ActQ8);
  if (wide_kernels && wide_scratch.size() < wide_blocks) wide_scratch.resize(wide_blocks);
  ActQ8* xq = scratch.data();
  char* const wide_base = reinterpret_cast<char*>(wide_scratch.data());
  auto wide_tile = [&](int64_t m0) {
    return reinterpret_cast<ActQ8*>(wide_base + static_cast<size_t>(m0) * wide_row_bytes);
  };
  auto quantize = [&](int64_t b, int64_t e) {
    for (int64_t f = b; f < e; ++f) {
      const auto at = std::upper_bound(first_token.begin(), first_token.end(), f) - 1;
      const Segment& s = segs[static_cast<size_t>(at - first_token.begin())];
      const int64_t m = s.begin + (f - *at);
      if (passes == 2) {
        cpu::quantize_row_act_q8x2(x + m * K, K, xq + 2 * m * nb, xq + (2 * m + 1) * nb);
        if (half_sums) cpu::store_half_sums(xq + 2 * m * nb, 2 * nb);
        const int64_t m0 = s.tile_of(2 * m);
        if (is_wide(s, m0)) {
          pair_token_to_wide_layout(xq + 2 * m * nb, nb, wide_tile(m0), s.tile_end(m0) - m0,
                                    2 * m - m0, layout);
        } else if (s.pairs) {
          cpu::pair_act_blocks(xq + 2 * m * nb, 2, nb, pairs_q8_0);
        }
      } else {
        cpu::quantize_row_act_q8(x + m * K, K, xq + m * nb);
        if (half_sums) cpu::store_half_sums(xq + m * nb, nb);
        const int64_t m0 = s.tile_of(m);
        if (is_wide(s, m0)) {
          row_to_wide_layout(xq + m * nb, nb, wide_tile(m0), s.tile_end(m0) - m0, m - m0, layout);
        } else if (s.pairs) {
          cpu::pair_act_blocks(xq + m * nb, 1, nb, pairs_q8_0);
        }
      }
    }
  };
  if (tokens >= 8) {
    pool.parallel_for(tokens, quantize);
  } else {
    quantize(0, tokens);
  }

  const unsigned sum_pairs = passes == 2 ? cpu::kSumRowPairs : 0;
  pool.parallel_for(tasks, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const auto it = std::upper_bound(jobs.begin(), jobs.end(), t,
                                       [](int64_t v, const Job& j) { return v < j.first_task; });
      const Job& j = *(it - 1);
      const Segment& s = segs[static_cast<size_t>(j.seg)];
      const int64_t lt = t - j.first_task;
      const int64_t g0 = (lt / s.m_tiles) * kGroupsPerTask;
      const int64_t g1 = std::min(j.groups, g0 + kGroupsPerTask);
      const int64_t m0 = s.q0 + (lt % s.m_tiles) * s.tile_m, m1 = s.tile_end(m0);
      // Two groups per call pay off once the call is compute-bound; with one or two rows
      // (single-stream decode) the weights' streaming dominates and one group per call keeps it
      // sequential.
      const int64_t groups_per_call = s.pairs && s.tile_m >= 4 ? ks.pair_groups : 1;
      // Units: rows, or q8x2 tokens (row pairs).
      const int64_t max_units = passes == 1 ? j.max_rows
                                : s.pairs   ? ks.max_tokens_x2_pairs
                                            : ks.max_tokens_x2;
      // The tile's units in calls of near-equal size (each of at least min_tokens_wide when wide).
      const int64_t units = (m1 - m0) / passes;
      const bool wide = is_wide(s, m0);
      const int64_t unit_cap = wide ? ks.max_tokens_wide : max_units;
      const int64_t group_step = wide ? 1 : groups_per_call;
      const int64_t calls = (units + unit_cap - 1) / unit_cap;
      for (int64_t g = g0; g < g1; g += group_step) {
        const int64_t span = std::min<int64_t>(group_step, g1 - g) * kGroupRows;
        const int valid = static_cast<int>(std::min<int64_t>(span, j.N - g * kGroupRows));
        for (int64_t c = 0, m = m0; c < calls; ++c) {
          const int R = static_cast<int>((units / calls + (c < units % calls)) * passes);
          const unsigned flags = sum_pairs | (m == m0 ? cpu::kPrefetchWeights : 0);
          float* y = j.y + (m / passes - s.begin) * j.N + g * kGroupRows;
          if (wide) {
            j.wide(j.w + g * j.gbytes, wide_tile(m0), m1 - m0, m - m0, nb, R, y, j.N, valid, flags);
          } else {
            const cpu::GroupGemmFn fn = R > ks.max_rows && j.fn_many ? j.fn_many : j.fn;
            fn(j.w + g * j.gbytes, xq + m * nb, nb, R, y, j.N, valid, flags);
          }
          m += R;
        }
      }
    }
  });
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
  const ActLayout layout = cpu::act_layout_of(ws[0]->type());
  for (size_t i = 1; i < nw; ++i) {
    if (cpu::act_layout_of(ws[i]->type()) == layout) continue;
    const PackedWeight* same_w[kMaxWeights];
    const PackedWeight* other_w[kMaxWeights];
    float* same_y[kMaxWeights];
    float* other_y[kMaxWeights];
    size_t ns = 0, no = 0;
    for (size_t k = 0; k < nw; ++k) {
      if (cpu::act_layout_of(ws[k]->type()) == layout) {
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
  const PackedSegment one[] = {{0, M, ws.first(nw), ys.first(nw)}};
  run_segments(pool, x, one, *ws[0], precision);
}

void matmul_packed_grouped(ThreadPool& pool, const float* x,
                           std::span<const PackedSegment> segments, ActPrecision precision) {
  const PackedWeight* first = nullptr;
  bool one_layout = true;
  for (const PackedSegment& s : segments) {
    for (const PackedWeight* w : s.ws) {
      if (first == nullptr) first = w;
      one_layout = one_layout && cpu::act_layout_of(w->type()) == cpu::act_layout_of(first->type());
    }
  }
  if (first == nullptr) return;
  if (one_layout && cpu::act_layout_of(first->type()) != ActLayout::kFloat) {
    run_segments(pool, x, segments, *first, precision);
    return;
  }
  const int64_t K = first->cols();
  for (const PackedSegment& s : segments) {
    if (s.end > s.begin) {
      matmul_packed_multi(pool, x + s.begin * K, s.end - s.begin, s.ws, s.ys, precision);
    }
  }
}

}  // namespace llmserve::kernels
