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

// An empty partition record: running max -inf, sum 0, accumulators 0.
inline void clear_record(float* rec, int G, int D) {
  std::fill(rec, rec + G, -std::numeric_limits<float>::infinity());
  std::fill(rec + G, rec + partial_floats(G, D), 0.0f);
}

// Pointers to the K and V rows of positions [t0, t0 + n) of one request and kv head: rows of one
// block are consecutive, so one table lookup per block, then steps of head_dim.
template <typename T>
inline void tile_rows(const PagedKv& kv, const int32_t* table, int kv_head, int64_t t0, int n,
                      const T** krows, const T** vrows) {
  const T* k_cache = static_cast<const T*>(kv.k_cache);
  const T* v_cache = static_cast<const T*>(kv.v_cache);
  const int bs = kv.shape.block_size;
  const int64_t D = kv.shape.head_dim;
  int64_t blk = t0 / bs;
  int off = static_cast<int>(t0 % bs);
  for (int j = 0; j < n; off = 0, ++blk) {
    const int64_t base = kv_cache_offset(kv.shape, int64_t{table[blk]} * bs, kv_head) + off * D;
    const T* k = k_cache + base;
    const T* v = v_cache + base;
    const int count = std::min(n - j, bs - off);
    for (int i = 0; i < count; ++i) {
      krows[j + i] = k + i * D;
      vrows[j + i] = v + i * D;
    }
    j += count;
  }
}

// Online softmax over one tile of n <= 32 scores s (aligned to 32 bytes, room for a multiple of
// 8): updates the running max *m and sum *l, replaces s[0..n) by e^(s - max) (zero past n) and
// returns the factor e^(old max - new max) for the accumulated values.
inline float softmax_tile(float* s, int n, float* m, float* l) {
  const int n8 = (n + 7) / 8 * 8;
  for (int j = n; j < n8; ++j) s[j] = -std::numeric_limits<float>::infinity();
  __m256 vmax = _mm256_load_ps(s);
  for (int j = 8; j < n8; j += 8) vmax = _mm256_max_ps(vmax, _mm256_load_ps(s + j));
  __m128 h = _mm_max_ps(_mm256_castps256_ps128(vmax), _mm256_extractf128_ps(vmax, 1));
  h = _mm_max_ps(h, _mm_movehl_ps(h, h));
  h = _mm_max_ss(h, _mm_movehdup_ps(h));
  const float m_new = std::max(*m, _mm_cvtss_f32(h));
  const float corr = std::exp(*m - m_new);
  const __m256 vm = _mm256_set1_ps(m_new);
  __m256 vsum = _mm256_setzero_ps();
  for (int j = 0; j < n8; j += 8) {
    __m256 e = exp_ps(_mm256_sub_ps(_mm256_load_ps(s + j), vm));
    if (j + 8 > n) {
      const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
      const __m256 keep = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(n - j), idx));
      e = _mm256_and_ps(e, keep);
    }
    _mm256_store_ps(s + j, e);
    vsum = _mm256_add_ps(vsum, e);
  }
  *l = *l * corr + hsum(vsum);
  *m = m_new;
  return corr;
}

// Merges P consecutive records (in order) into out[G][head_dim].
void merge_partials(const float* recs, int P, int G, int head_dim, float* out);

inline int64_t num_partitions(int64_t ctx) {
  return (ctx + kAttentionPartition - 1) / kAttentionPartition;
}

}  // namespace llmserve::kernels::cpu
