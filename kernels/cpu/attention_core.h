// Internal: the partition step shared by prefill and decode attention, and the log-sum-exp merge.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/cpu/simd_util.h"
#include "llmserve/kernels/attention.h"

namespace llmserve::kernels::cpu {

// Floats in one partition record for G heads: m[G], l[G], acc[G][head_dim] (unnormalised).
inline int64_t partial_floats(int G, int head_dim) {
  return static_cast<int64_t>(G) * (head_dim + 2);
}

// Attends G query heads q[G][head_dim] (all reading kv_head) over positions [start, end) of the
// request whose block ids are `table`; writes one partition record to rec. end > start.
void attend_partition(const PagedKv& kv, const int32_t* table, int kv_head, const float* q, int G,
                      float scale, int64_t start, int64_t end, float* rec);

// The same for head_dim % 16 == 0 with AVX-512 (attention_avx512.cpp): other float order, so a
// process uses one or the other for every query (prefill and decode stay bit-identical).
void attend_partition_avx512(const PagedKv& kv, const int32_t* table, int kv_head, const float* q,
                             int G, float scale, int64_t start, int64_t end, float* rec);
// True when the CPU has AVX-512F and LLMSERVE_CPU_ATTENTION_AVX2 is not set to 1.
bool attention_avx512_available();

// int8 pages on AVX-512 VNNI: q . k as integer dot products, q quantized per head by
// quantize_query_int8: q -> rint(q * 127 / max|q|), scale max|q| / 127, so the scores carry q's
// rounding too. Used by attend_partition_avx512 when this is true: the CPU has AVX-512 VNNI and
// LLMSERVE_CPU_ATTENTION_NO_VNNI is not 1.
bool attention_int8_vnni_available();
// q[D] -> out[D] in [-127, 127]; returns the scale (0 for a zero row) and sets *sum = sum(out).
float quantize_query_int8(const float* q, int D, int8_t* out, int32_t* sum);
// s[g * s_stride + j] = scale * q_scale[g] * ks[j] * (q_g . k_j), integer dot, for g < G <= 3 and
// j < n (rounded up to 8: rows past n repeat row n - 1). q holds G rows of D; D % 16 == 0.
void int8_scores_vnni(const int8_t* q, const float* q_scale, const int32_t* q_sum, int G, int D,
                      const int8_t* const* krows, int n, float scale, const float* ks, float* s,
                      int s_stride);

// An empty partition record: running max -inf, sum 0, accumulators 0.
inline void clear_record(float* rec, int G, int D) {
  std::fill(rec, rec + G, -std::numeric_limits<float>::infinity());
  std::fill(rec + G, rec + partial_floats(G, D), 0.0f);
}

// Calls fn(j, index, count) for each run [j, j + count) of positions t0 + j in [t0, t0 + n) that
// lie in one block, index being the scale index (kv_scale_offset; times head_dim the row offset)
// of the first: one table lookup per block, then consecutive rows.
template <typename Fn>
inline void for_each_block_run(const PagedKv& kv, const int32_t* table, int kv_head, int64_t t0,
                               int n, Fn&& fn) {
  const int bs = kv.shape.block_size;
  int64_t blk = t0 / bs;
  int off = static_cast<int>(t0 % bs);
  for (int j = 0; j < n; off = 0, ++blk) {
    const int count = std::min(n - j, bs - off);
    fn(j, kv_scale_offset(kv.shape, int64_t{table[blk]} * bs + off, kv_head), count);
    j += count;
  }
}

// Pointers to the K and V rows of positions [t0, t0 + n) of one request and kv head.
template <typename T>
inline void tile_rows(const PagedKv& kv, const int32_t* table, int kv_head, int64_t t0, int n,
                      const T** krows, const T** vrows) {
  const T* k_cache = static_cast<const T*>(kv.k_cache);
  const T* v_cache = static_cast<const T*>(kv.v_cache);
  const int64_t D = kv.shape.head_dim;
  for_each_block_run(kv, table, kv_head, t0, n, [&](int j, int64_t index, int count) {
    const T* k = k_cache + index * D;
    const T* v = v_cache + index * D;
    for (int i = 0; i < count; ++i) {
      krows[j + i] = k + i * D;
      vrows[j + i] = v + i * D;
    }
  });
}

// The K and V scales (int8 caches) of positions [t0, t0 + n) as floats, zero from n up to the
// next multiple of 16 (ks and vs have room for it).
inline void tile_scales(const PagedKv& kv, const int32_t* table, int kv_head, int64_t t0, int n,
                        float* ks, float* vs) {
  for_each_block_run(kv, table, kv_head, t0, n, [&](int j, int64_t index, int count) {
    for (int i = 0; i < count; ++i) {
      ks[j + i] = half_to_float(kv.k_scales[index + i]);
      vs[j + i] = half_to_float(kv.v_scales[index + i]);
    }
  });
  for (int j = n; j % 16 != 0; ++j) ks[j] = vs[j] = 0.0f;
}

// p[0..n) *= vs[0..n): folds the V scales into the softmax weights, after the running sum.
inline void fold_scales(float* p, const float* vs, int n) {
  for (int j = 0; j < n; ++j) p[j] *= vs[j];
}

// Online softmax over n scores s (aligned to the vector width V, room for a whole number of
// vectors): updates the running max *m and sum *l, replaces s[0..n) by e^(s - max) (zero past n)
// and returns the factor e^(old max - new max) for the accumulated values.
template <typename V>
inline float softmax_lanes(float* s, int n, float* m, float* l) {
  constexpr int W = V::kLanes;
  const int nw = (n + W - 1) / W * W;
  for (int j = n; j < nw; ++j) s[j] = -std::numeric_limits<float>::infinity();
  auto vmax = V::load(s);
  for (int j = W; j < nw; j += W) vmax = V::max(vmax, V::load(s + j));
  const float m_new = std::max(*m, V::reduce_max(vmax));
  const float corr = std::exp(*m - m_new);
  const auto vm = V::set1(m_new);
  auto vsum = V::set1(0.0f);
  for (int j = 0; j < nw; j += W) {
    auto e = exp_lanes<V>(V::sub(V::load(s + j), vm));
    if (j + W > n) e = V::keep_first(e, n - j);
    V::store(s + j, e);
    vsum = V::add(vsum, e);
  }
  *l = *l * corr + V::reduce_add(vsum);
  *m = m_new;
  return corr;
}

// softmax_lanes over one tile of n <= 32 scores, 8 lanes at a time.
inline float softmax_tile(float* s, int n, float* m, float* l) {
  return softmax_lanes<Avx2Floats>(s, n, m, l);
}

// Merges P consecutive records (in order) into out[G][head_dim].
void merge_partials(const float* recs, int P, int G, int head_dim, float* out);

// The first key a query of context ctx (its position + 1) attends under a sliding window
// (window 0: none): keys [window_start, ctx).
inline int64_t window_start(int64_t ctx, int64_t window) {
  return window > 0 && ctx > window ? ctx - window : 0;
}

// Keys [lo, ctx) cut at the fixed partition edges (multiples of kAttentionPartition), so a query
// splits the same way in prefill and decode: partitions first_partition(lo) onwards, in order.
inline int64_t first_partition(int64_t lo) {
  return lo / kAttentionPartition;
}
inline int64_t num_partitions(int64_t lo, int64_t ctx) {
  return (ctx + kAttentionPartition - 1) / kAttentionPartition - first_partition(lo);
}
// Keys of the p-th partition (from 0) of [lo, ctx): [*s, *e), never empty.
inline void partition_range(int64_t lo, int64_t ctx, int64_t p, int64_t* s, int64_t* e) {
  const int64_t edge = (first_partition(lo) + p) * kAttentionPartition;
  *s = std::max(lo, edge);
  *e = std::min(ctx, edge + kAttentionPartition);
}

}  // namespace llmserve::kernels::cpu
