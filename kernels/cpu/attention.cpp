#include "llmserve/kernels/attention.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/cpu/attention_core.h"

namespace llmserve::kernels {
namespace {

// Keys [lo, end) of one query: the sliding window (if any) is cut here, counted back from the
// query's own position (ctx - 1), so every partition kernel (AVX2, AVX-512, int8 VNNI) sees only
// keys inside it; end > ctx for a query inside an image that attends all of it, or for a pooling
// row of a bidirectional model (cut at the same distance forward with kv.symmetric_window).
struct QueryKeys {
  int64_t lo, end;
  int64_t first_partition() const { return cpu::first_partition(lo); }
  int64_t partitions() const { return cpu::num_partitions(lo, end); }
};

QueryKeys query_keys(const PagedKv& kv, int64_t ctx, int64_t end) {
  if (kv.symmetric_window && kv.sliding_window > 0) {
    end = std::min(end, ctx + kv.sliding_window - 1);
  }
  return {cpu::window_start(ctx, kv.sliding_window), end};
}

// Queries per prefill task: consecutive queries of one request attend the same keys, so a block
// of them walks the partitions together and each partition's K and V rows are read from memory
// once per block, then from the cache. Each query's arithmetic is the per-query path's (same
// partitions, same kernel, same merge order): outputs are bit-identical to attending alone.
constexpr int64_t kQueryBlock = 16;

// Queries [t0, t1) of request b (all of one request), heads of kv_head.
void attend_block(const PagedKv& kv, const int32_t* table, int kv_head, const float* q,
                  int num_heads, int G, float scale, int64_t t0, int64_t t1, int64_t first_ctx,
                  const int32_t* attend_end, float* out) {
  const int D = kv.shape.head_dim;
  const int64_t rec = cpu::partial_floats(G, D);
  QueryKeys keys[kQueryBlock];
  int64_t offset[kQueryBlock + 1];
  offset[0] = 0;
  int64_t p_lo = INT64_MAX, p_hi = 0;
  const int64_t n = t1 - t0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t ctx = first_ctx + i;
    keys[i] = query_keys(kv, ctx, attend_end != nullptr ? attend_end[t0 + i] : ctx);
    offset[i + 1] = offset[i] + keys[i].partitions() * rec;
    p_lo = std::min(p_lo, keys[i].first_partition());
    p_hi = std::max(p_hi, keys[i].first_partition() + keys[i].partitions());
  }
  thread_local std::vector<float> recs;
  if (recs.size() < static_cast<size_t>(offset[n])) recs.resize(static_cast<size_t>(offset[n]));
  const auto row = [&](int64_t i) { return ((t0 + i) * num_heads + int64_t{kv_head} * G) * D; };
  for (int64_t p = p_lo; p < p_hi; ++p) {
    for (int64_t i = 0; i < n; ++i) {
      const int64_t k = p - keys[i].first_partition();
      if (k < 0 || k >= keys[i].partitions()) continue;
      int64_t s = 0, e = 0;
      cpu::partition_range(keys[i].lo, keys[i].end, k, &s, &e);
      cpu::attend_partition(kv, table, kv_head, q + row(i), G, scale, s, e,
                            recs.data() + offset[i] + k * rec);
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    cpu::merge_partials(recs.data() + offset[i], static_cast<int>(keys[i].partitions()), G, D,
                        out + row(i));
  }
}

}  // namespace

void prefill_attention(ThreadPool& pool, const PagedKv& kv, const float* q,
                       const int32_t* query_start, const int32_t* seq_lens, int64_t B,
                       int num_heads, float scale, float* out, const int32_t* attend_end) {
  const int KVH = kv.shape.num_kv_heads;
  const int G = num_heads / KVH;
  // Blocks of up to kQueryBlock queries of one request: (request, first query).
  struct Block {
    int32_t b;
    int64_t t0;
  };
  thread_local std::vector<Block> blocks_tls;
  std::vector<Block>& blocks = blocks_tls;  // workers must see the caller's vector
  blocks.clear();
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = query_start[b]; t < query_start[b + 1]; t += kQueryBlock)
      blocks.push_back({static_cast<int32_t>(b), t});
  }
  const int64_t n = static_cast<int64_t>(blocks.size()) * KVH;
  pool.parallel_for(n, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      // Zig-zag order balances the causal triangle across the static ranges.
      const int64_t task = (k % 2 == 0) ? k / 2 : n - 1 - k / 2;
      const Block& blk = blocks[static_cast<size_t>(task / KVH)];
      const int h = static_cast<int>(task % KVH);
      const int64_t b = blk.b;
      const int64_t t1 = std::min<int64_t>(blk.t0 + kQueryBlock, query_start[b + 1]);
      const int64_t q_len = query_start[b + 1] - query_start[b];
      const int64_t first_ctx = seq_lens[b] - q_len + (blk.t0 - query_start[b]) + 1;
      attend_block(kv, kv.block_tables + b * kv.max_blocks_per_seq, h, q, num_heads, G, scale,
                   blk.t0, t1, first_ctx, attend_end, out);
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
