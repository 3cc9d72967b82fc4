// Internal: the partition step shared by prefill and decode attention, and the log-sum-exp merge.
#pragma once

#include <cstdint>

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

// Merges P consecutive records (in order) into out[G][head_dim].
void merge_partials(const float* recs, int P, int G, int head_dim, float* out);

inline int64_t num_partitions(int64_t ctx) {
  return (ctx + kAttentionPartition - 1) / kAttentionPartition;
}

}  // namespace llmserve::kernels::cpu
