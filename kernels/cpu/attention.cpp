#include "llmserve/kernels/attention.h"

#include <algorithm>
#include <vector>

#include "kernels/cpu/attention_core.h"

namespace llmserve::kernels {
namespace {

// Attends every partition of one query group in order, then merges: the shared per-query path.
// Keys [window_start, end): the sliding window (if any) is cut here, counted back from the
// query's own position (ctx - 1), so every partition kernel (AVX2, AVX-512, int8 VNNI) sees only
// keys inside it; end > ctx for a query inside an image that attends all of it, or for a pooling
// row of a bidirectional model (cut at the same distance forward with kv.symmetric_window).
void attend_query(const PagedKv& kv, const int32_t* table, int kv_head, const float* q, int G,
                  float scale, int64_t ctx, int64_t end, float* out) {
  const int D = kv.shape.head_dim;
  const int64_t lo = cpu::window_start(ctx, kv.sliding_window);
  if (kv.symmetric_window && kv.sliding_window > 0) {
    end = std::min(end, ctx + kv.sliding_window - 1);
  }
  ctx = end;
  const int64_t P = cpu::num_partitions(lo, ctx);
  const int64_t rec = cpu::partial_floats(G, D);
  thread_local std::vector<float> recs;
  if (recs.size() < static_cast<size_t>(P * rec)) recs.resize(P * rec);
  for (int64_t p = 0; p < P; ++p) {
    int64_t s = 0, e = 0;
    cpu::partition_range(lo, ctx, p, &s, &e);
    cpu::attend_partition(kv, table, kv_head, q, G, scale, s, e, recs.data() + p * rec);
  }
  cpu::merge_partials(recs.data(), static_cast<int>(P), G, D, out);
}

}  // namespace

void prefill_attention(ThreadPool& pool, const PagedKv& kv, const float* q,
                       const int32_t* query_start, const int32_t* seq_lens, int64_t B,
                       int num_heads, float scale, float* out, const int32_t* attend_end) {
  const int KVH = kv.shape.num_kv_heads, D = kv.shape.head_dim;
  const int G = num_heads / KVH;
  const int64_t T = query_start[B];
  // Request of each token, so tasks can be (token, kv head).
  thread_local std::vector<int32_t> owner_tls;
  std::vector<int32_t>& owner = owner_tls;  // workers must see the caller's vector
  owner.resize(T);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = query_start[b]; t < query_start[b + 1]; ++t)
      owner[t] = static_cast<int32_t>(b);
  }
  const int64_t n = T * KVH;
  pool.parallel_for(n, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      // Zig-zag order balances the causal triangle across the static ranges.
      const int64_t task = (k % 2 == 0) ? k / 2 : n - 1 - k / 2;
      const int64_t t = task / KVH;
      const int h = static_cast<int>(task % KVH);
      const int64_t b = owner[t];
      const int64_t q_len = query_start[b + 1] - query_start[b];
      const int64_t ctx = seq_lens[b] - q_len + (t - query_start[b]) + 1;
      const int64_t row = (t * num_heads + static_cast<int64_t>(h) * G) * D;
      const int64_t end = attend_end != nullptr ? attend_end[t] : ctx;
      attend_query(kv, kv.block_tables + b * kv.max_blocks_per_seq, h, q + row, G, scale, ctx, end,
                   out + row);
    }
  });
}

void decode_attention(ThreadPool& pool, const PagedKv& kv, const float* q, const int32_t* seq_lens,
                      int64_t B, int num_heads, float scale, float* out) {
  const int KVH = kv.shape.num_kv_heads, D = kv.shape.head_dim;
  const int G = num_heads / KVH;
  const int64_t rec = cpu::partial_floats(G, D);
  // Task list: (request, partition); each task covers all kv heads of one partition.
  thread_local std::vector<int64_t> first_part_tls;
  thread_local std::vector<float> recs_tls;
  std::vector<int64_t>& first_part = first_part_tls;  // workers must see the caller's vectors
  std::vector<float>& recs = recs_tls;
  first_part.resize(B + 1);
  first_part[0] = 0;
  for (int64_t b = 0; b < B; ++b)
    first_part[b + 1] =
        first_part[b] +
        cpu::num_partitions(cpu::window_start(seq_lens[b], kv.sliding_window), seq_lens[b]);
  const int64_t total = first_part[B];
  if (recs.size() < static_cast<size_t>(total * KVH * rec)) recs.resize(total * KVH * rec);
  const int64_t n = total * KVH;
  pool.parallel_for(n, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      const int64_t part = k / KVH;
      const int h = static_cast<int>(k % KVH);
      const int64_t b = std::upper_bound(first_part.begin(), first_part.begin() + B + 1, part) -
                        first_part.begin() - 1;
      const int64_t p = part - first_part[b];
      const int64_t ctx = seq_lens[b];
      int64_t s = 0, e = 0;
      cpu::partition_range(cpu::window_start(ctx, kv.sliding_window), ctx, p, &s, &e);
      // Records of one (request, head) are contiguous over partitions for the merge.
      float* r =
          recs.data() + ((first_part[b] * KVH) + h * (first_part[b + 1] - first_part[b]) + p) * rec;
      const int64_t row = (b * num_heads + static_cast<int64_t>(h) * G) * D;
      cpu::attend_partition(kv, kv.block_tables + b * kv.max_blocks_per_seq, h, q + row, G, scale,
                            s, e, r);
      // A request of one partition is finished here, by the same merge as the others.
      if (first_part[b + 1] - first_part[b] == 1) cpu::merge_partials(r, 1, G, D, out + row);
    }
  });
  if (total == B) return;
  pool.parallel_for(B * KVH, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      const int64_t b = k / KVH;
      const int h = static_cast<int>(k % KVH);
      const int64_t P = first_part[b + 1] - first_part[b];
      if (P == 1) continue;
      const float* r = recs.data() + (first_part[b] * KVH + h * P) * rec;
      cpu::merge_partials(r, static_cast<int>(P), G, D,
                          out + (b * num_heads + static_cast<int64_t>(h) * G) * D);
    }
  });
}

}  // namespace llmserve::kernels
