// Block-wide building blocks of the sampling kernel (sampling.cu): one CTA of kThreads threads
// owns one row. Each warp walks its own contiguous segment of the row 32 ids at a time, so a
// pass is coalesced and ordered scans (ties by id, the draw) need one carry per warp.
// Every helper is called by all threads of the block (it synchronises).
#pragma once

#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

#include "llmserve/kernels/cuda/sampling_rows.h"

namespace llmserve::kernels::cuda::sampling_detail {

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;
constexpr unsigned kFull = 0xffffffffu;

struct Smem {
  unsigned long long hist[256];
  unsigned long long scratch[kWarps][32];  // per-warp staging for aggregated histogram adds
  unsigned long long top[kMaxTopLogprobs];
  double red_d[kWarps], prefix_d[kWarps];
  float red_f[kWarps];
  int red_i[kWarps], red_i2[kWarps];
  double b_d, sel_limit, draw_target;
  float b_f;
  int b_i;
  unsigned long long sel_above, sel_bin;
  uint32_t sel_prefix;
  int sel_all, sel_need, sel_ties, sel_warp, sel_rank, sel_id;
  int top_count, draw_id, draw_last;
};

__device__ __forceinline__ int lane_id() {
  return static_cast<int>(threadIdx.x & 31u);
}
__device__ __forceinline__ int warp_id() {
  return static_cast<int>(threadIdx.x >> 5);
}

struct Segment {
  int begin, end;
};

// This warp's ids: [begin, end), a multiple of 32 long except at the end of the row.
__device__ __forceinline__ Segment warp_segment(int n) {
  const int per = ((n + kWarps - 1) / kWarps + 31) & ~31;
  const int b = min(n, warp_id() * per);
  return {b, min(n, b + per)};
}

// Order-preserving float -> uint32 (larger value, larger key); -0 and +0 share a key.
__device__ __forceinline__ uint32_t order_key(float x) {
  uint32_t b = __float_as_uint(x);
  if ((b << 1) == 0u) b = 0u;
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

__device__ __forceinline__ float key_value(uint32_t k) {
  return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}

// Rank order is value descending, then id ascending; an element is within a threshold when it
// ranks at or above (key, id).
struct Threshold {
  uint32_t key;
  int id;
};
constexpr Threshold kKeepAll{0u, INT_MAX};

__device__ __forceinline__ bool within(const Threshold& t, uint32_t k, int i) {
  return k > t.key || (k == t.key && i <= t.id);
}

template <class T, class Op>
__device__ __forceinline__ T warp_allreduce(T v, Op op) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(kFull, v, o));
  return v;
}

template <class T>
__device__ __forceinline__ T warp_inclusive_sum(T v) {
  for (int o = 1; o < 32; o <<= 1) {
    const T t = __shfl_up_sync(kFull, v, o);
    if (lane_id() >= o) v += t;
  }
  return v;
}

// Deterministic: a fixed tree per warp, then warp 0 over the warps' partials.
template <class T, class Op>
__device__ T block_allreduce(T v, Op op, T* partial, T* result) {
  v = warp_allreduce(v, op);
  if (lane_id() == 0) partial[warp_id()] = v;
  __syncthreads();
  if (warp_id() == 0) {
    const T x = warp_allreduce(partial[lane_id()], op);
    if (lane_id() == 0) *result = x;
  }
  __syncthreads();
  return *result;
}

// The first id holding the largest value above -inf (NaN ignored); -1 when there is none.
__device__ int block_argmax(const float* x, int n, Smem& sm) {
  const Segment seg = warp_segment(n);
  float best = -INFINITY;
  int id = -1;
  for (int i = seg.begin + lane_id(); i < seg.end; i += 32) {
    const float v = x[i];
    if (v > best) best = v, id = i;
  }
  auto merge = [&] {
    for (int o = 16; o > 0; o >>= 1) {
      const float ov = __shfl_xor_sync(kFull, best, o);
      const int oi = __shfl_xor_sync(kFull, id, o);
      if (oi >= 0 && (id < 0 || ov > best || (ov == best && oi < id))) best = ov, id = oi;
    }
  };
  merge();
  if (lane_id() == 0) sm.red_f[warp_id()] = best, sm.red_i[warp_id()] = id;
  __syncthreads();
  if (warp_id() == 0) {
    best = sm.red_f[lane_id()];
    id = sm.red_i[lane_id()];
    merge();
    if (lane_id() == 0) sm.b_i = id;
  }
  __syncthreads();
  return sm.b_i;
}

// hist[bin] += w for the active lanes, one shared atomic per distinct bin in the warp (rows
// cluster in a few bins, so plain atomics would serialise). All 32 lanes call it.
template <bool kUnit>
__device__ __forceinline__ void hist_add(Smem& sm, bool active, uint32_t bin,
                                         unsigned long long w) {
  if (__ballot_sync(kFull, active) == 0u) return;
  const unsigned peers = __match_any_sync(kFull, active ? bin : 0xffffffffu);
  const bool leader = active && lane_id() == __ffs(peers) - 1;
  if constexpr (kUnit) {
    if (leader) atomicAdd(&sm.hist[bin], static_cast<unsigned long long>(__popc(peers)));
  } else {
    unsigned long long* s = sm.scratch[warp_id()];
    s[lane_id()] = w;
    __syncwarp();
    if (leader) {
      unsigned long long sum = 0;
      for (unsigned m = peers; m != 0u; m &= m - 1u) sum += s[__ffs(m) - 1];
      atomicAdd(&sm.hist[bin], sum);
    }
    __syncwarp();
  }
}

// The need-th (1-based) id in ascending order with match(i); INT_MAX when there are fewer.
template <class Match>
__device__ int nth_match(int n, Match match, int need, Smem& sm) {
  const Segment seg = warp_segment(n);
  int count = 0;
  for (int base = seg.begin; base < seg.end; base += 32) {
    const int i = base + lane_id();
    count += __popc(__ballot_sync(kFull, i < seg.end && match(i)));
  }
  if (lane_id() == 0) sm.red_i2[warp_id()] = count;
  __syncthreads();
  if (warp_id() == 0) {
    const int c = sm.red_i2[lane_id()];
    const int incl = warp_inclusive_sum(c);
    const unsigned here = __ballot_sync(kFull, incl - c < need && need <= incl);
    if (lane_id() == 0) sm.sel_warp = -1, sm.sel_id = INT_MAX;
    __syncwarp();
    if (here != 0u && lane_id() == __ffs(here) - 1) {
      sm.sel_warp = lane_id();
      sm.sel_rank = need - (incl - c);
    }
  }
  __syncthreads();
  if (warp_id() == sm.sel_warp) {
    int r = sm.sel_rank;
    for (int base = seg.begin; base < seg.end; base += 32) {
      const int i = base + lane_id();
      unsigned b = __ballot_sync(kFull, i < seg.end && match(i));
      const int c = __popc(b);
      if (r <= c) {
        for (int k = 1; k < r; ++k) b &= b - 1u;
        if (lane_id() == 0) sm.sel_id = base + __ffs(b) - 1;
        break;
      }
      r -= c;
    }
  }
  __syncthreads();
  return sm.sel_id;
}

// Over the elements with pred(i, v), in rank order: the shortest prefix whose integer weight
// sum reaches `limit` (when limit_is_fraction, limit * the total weight), by radix select on
// 8-bit digits of the order keys and then ids among the boundary key's ties. kKeepAll when the
// total stays below the limit. weight(v) must be equal for equal keys (kUnit: every weight is
// 1); limit > 0. Integer sums keep it deterministic.
template <bool kUnit, class Pred, class Weight>
__device__ Threshold select_prefix(const float* x, int n, Pred pred, Weight weight, double limit,
                                   bool limit_is_fraction, Smem& sm) {
  const Segment seg = warp_segment(n);
  const int lane = lane_id();
  uint32_t prefix = 0u, mask = 0u;
  unsigned long long above = 0;
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int b = static_cast<int>(threadIdx.x); b < 256; b += kThreads) sm.hist[b] = 0;
    __syncthreads();
    for (int base = seg.begin; base < seg.end; base += 32) {
      const int i = base + lane;
      bool active = false;
      uint32_t k = 0u;
      unsigned long long w = 0;
      if (i < seg.end) {
        const float v = x[i];
        if (pred(i, v)) {
          k = order_key(v);
          active = (k & mask) == prefix;
          if (!kUnit && active) w = weight(v);
        }
      }
      hist_add<kUnit>(sm, active, (k >> shift) & 255u, w);
    }
    __syncthreads();
    if (warp_id() == 0) {
      unsigned long long lane_sum = 0;
      for (int j = 0; j < 8; ++j) lane_sum += sm.hist[255 - 8 * lane - j];
      const unsigned long long incl = warp_inclusive_sum(lane_sum);
      double lim = limit;
      if (shift == 24 && limit_is_fraction) {
        lim = limit * static_cast<double>(__shfl_sync(kFull, incl, 31));
      }
      const unsigned cross = __ballot_sync(kFull, static_cast<double>(above + incl) >= lim);
      if (lane == 0) sm.sel_all = cross == 0u, sm.sel_limit = lim;
      if (cross != 0u && lane == __ffs(cross) - 1) {
        unsigned long long a = above + incl - lane_sum;
        int d = 255 - 8 * lane - 7;
        for (int j = 0; j < 8; ++j) {
          const int bin = 255 - 8 * lane - j;
          if (static_cast<double>(a + sm.hist[bin]) >= lim) {
            d = bin;
            break;
          }
          a += sm.hist[bin];
        }
        sm.sel_prefix = prefix | (static_cast<uint32_t>(d) << shift);
        sm.sel_above = a;
        sm.sel_bin = sm.hist[d];
      }
    }
    __syncthreads();
    if (sm.sel_all) return kKeepAll;
    prefix = sm.sel_prefix;
    above = sm.sel_above;
    limit = sm.sel_limit;
    mask |= 255u << shift;
  }
  // Ties of the boundary key share one weight: keep the fewest of them (lowest ids first).
  if (threadIdx.x == 0) {
    const unsigned long long wk = kUnit ? 1ull : weight(key_value(prefix));
    long long ties = 0, m = 0;
    if (wk != 0) {
      ties = static_cast<long long>(sm.sel_bin / wk);
      m = static_cast<long long>(
          ceil((limit - static_cast<double>(above)) / static_cast<double>(wk)));
      m = max(1ll, min(m, ties));
      auto reaches = [&](long long c) {
        return static_cast<double>(above + static_cast<unsigned long long>(c) * wk) >= limit;
      };
      while (m > 1 && reaches(m - 1)) --m;
      while (m < ties && !reaches(m)) ++m;
    }
    sm.sel_need = static_cast<int>(m);
    sm.sel_ties = static_cast<int>(ties);
  }
  __syncthreads();
  const int need = sm.sel_need, ties = sm.sel_ties;
  if (need >= ties) return {prefix, INT_MAX};
  const uint32_t key = prefix;
  const int id = nth_match(
      n,
      [&](int i) {
        const float v = x[i];
        return pred(i, v) && order_key(v) == key;
      },
      need, sm);
  return {key, id};
}

}  // namespace llmserve::kernels::cuda::sampling_detail
