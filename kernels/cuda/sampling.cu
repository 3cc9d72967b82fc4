#include <cuda_runtime.h>

#include "llmserve/kernels/cuda/sampling.h"
#include "sampling_block.cuh"

namespace llmserve::kernels::cuda {
namespace {

using namespace sampling_detail;

__device__ __forceinline__ uint64_t splitmix_finalize(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// RequestRng::next_uniform() at `counter` (engine/runner/request_rng.h), bit for bit.
__device__ __forceinline__ double counter_uniform(uint64_t key, uint64_t counter) {
  uint64_t z = splitmix_finalize(key + counter * 0x9E3779B97F4A7C15ull);
  z = splitmix_finalize(z ^ (key >> 17 | key << 47));
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

__device__ __forceinline__ bool finite_above(float v) {
  return v > -INFINITY;
}

// The CPU processors' edits (logits_processor.cpp) on the row's copy, in their order, with the
// same f32 operations (no contraction).
__device__ void process_row(const float* raw, float* work, int n, const SamplingRow& r,
                            const SamplingLaunch& p) {
  const Segment seg = warp_segment(n);
  const uint32_t* allowed = r.grammar_mask >= 0
                                ? p.grammar_masks + static_cast<size_t>(r.grammar_mask) *
                                                        static_cast<size_t>(p.mask_words)
                                : nullptr;
  for (int i = seg.begin + lane_id(); i < seg.end; i += 32) {
    work[i] = allowed == nullptr || ((allowed[i >> 5] >> (i & 31)) & 1u) ? raw[i] : -INFINITY;
  }
  __syncthreads();
  for (int j = static_cast<int>(threadIdx.x); j < r.bias_count; j += kThreads) {
    const LogitBias b = p.biases[r.bias_offset + j];
    if (b.id >= 0 && b.id < n) work[b.id] = __fadd_rn(work[b.id], b.value);
  }
  __syncthreads();
  for (int j = static_cast<int>(threadIdx.x); j < r.mask_count; j += kThreads) {
    const int id = p.masked[r.mask_offset + j];
    if (id >= 0 && id < n) work[id] = -INFINITY;
  }
  __syncthreads();
  const bool repetition = r.repetition_penalty != 1.0f;
  const bool presence = r.presence_penalty != 0.0f || r.frequency_penalty != 0.0f;
  for (int j = static_cast<int>(threadIdx.x); j < r.penalty_count; j += kThreads) {
    const PenaltyToken t = p.penalties[r.penalty_offset + j];
    if (t.id < 0 || t.id >= n) continue;
    float v = work[t.id];
    if (repetition && (t.in_prompt != 0 || t.output_count > 0)) {
      v = v > 0.0f ? __fdiv_rn(v, r.repetition_penalty) : __fmul_rn(v, r.repetition_penalty);
    }
    if (presence && t.output_count > 0) {
      const float c = static_cast<float>(t.output_count);
      v = __fsub_rn(v, __fadd_rn(r.presence_penalty, __fmul_rn(r.frequency_penalty, c)));
    }
    work[t.id] = v;
  }
  __syncthreads();
}

// log(sum exp(raw - max)) + max over the values above -inf, as Sampler::logprobs.
__device__ double log_normalizer(const float* raw, int n, Smem& sm) {
  const Segment seg = warp_segment(n);
  float mx = -INFINITY;
  for (int i = seg.begin + lane_id(); i < seg.end; i += 32) mx = fmaxf(mx, raw[i]);
  mx = block_allreduce(
      mx, [](float a, float b) { return fmaxf(a, b); }, sm.red_f, &sm.b_f);
  double z = 0.0;
  for (int i = seg.begin + lane_id(); i < seg.end; i += 32) {
    const float v = raw[i];
    if (finite_above(v)) z += static_cast<double>(expf(__fsub_rn(v, mx)));
  }
  z = block_allreduce(
      z, [](double a, double b) { return a + b; }, sm.red_d, &sm.b_d);
  return static_cast<double>(mx) + log(z);
}

// The top `count` raw logits (value desc, id asc) with their logprobs; returns how many.
__device__ int write_top(const float* raw, int n, int count, double log_z, int32_t* ids,
                         float* logprobs, Smem& sm) {
  const Threshold t = select_prefix<true>(
      raw, n, [](int, float v) { return finite_above(v); }, [](float) { return 1ull; },
      static_cast<double>(count), false, sm);
  if (threadIdx.x == 0) sm.top_count = 0;
  __syncthreads();
  const Segment seg = warp_segment(n);
  for (int i = seg.begin + lane_id(); i < seg.end; i += 32) {
    const float v = raw[i];
    if (!finite_above(v)) continue;
    const uint32_t k = order_key(v);
    if (!within(t, k, i)) continue;
    const int slot = atomicAdd(&sm.top_count, 1);
    if (slot < kMaxTopLogprobs) {
      sm.top[slot] = (static_cast<unsigned long long>(k) << 32) | ~static_cast<uint32_t>(i);
    }
  }
  __syncthreads();
  const int m = min(sm.top_count, count);
  for (int j = static_cast<int>(threadIdx.x); j < m; j += kThreads) {
    const unsigned long long c = sm.top[j];
    int rank = 0;
    for (int q = 0; q < m; ++q) rank += sm.top[q] > c ? 1 : 0;
    if (rank >= m) continue;
    const int id = static_cast<int>(~static_cast<uint32_t>(c & 0xffffffffull));
    ids[rank] = id;
    logprobs[rank] = static_cast<float>(static_cast<double>(raw[id]) - log_z);
  }
  return m;
}

// Sampler::draw on the processed row: -1 when no logit is above -inf.
__device__ int draw_token(const float* x, int n, const SamplingRow& r, Smem& sm) {
  const Segment seg = warp_segment(n);
  int finite = 0;
  float mx = -INFINITY;
  for (int i = seg.begin + lane_id(); i < seg.end; i += 32) {
    const float v = x[i];
    if (finite_above(v)) ++finite, mx = fmaxf(mx, v);
  }
  finite = block_allreduce(
      finite, [](int a, int b) { return a + b; }, sm.red_i, &sm.b_i);
  mx = block_allreduce(
      mx, [](float a, float b) { return fmaxf(a, b); }, sm.red_f, &sm.b_f);
  if (finite == 0) return -1;
  if (isinf(mx)) return block_argmax(x, n, sm);

  auto finite_pred = [](int, float v) { return finite_above(v); };
  auto unit = [](float) { return 1ull; };
  Threshold tk = kKeepAll;
  int candidates = finite;
  if (r.top_k > 0 && r.top_k < finite) {
    tk = select_prefix<true>(x, n, finite_pred, unit, static_cast<double>(r.top_k), false, sm);
    candidates = r.top_k;
  }
  const float inv_t = r.inv_temperature;
  auto weight_of = [=](float v) { return expf(__fmul_rn(__fsub_rn(v, mx), inv_t)); };
  auto cand = [=](int i, float v) { return finite_above(v) && within(tk, order_key(v), i); };
  Threshold tp = kKeepAll;
  if (r.top_p <= 0.0f) {
    tp = select_prefix<true>(x, n, cand, unit, 1.0, false, sm);
  } else if (r.top_p < 1.0f) {
    // Weights in fixed point with 62 bits for the candidates' total.
    const double scale = ldexp(1.0, 62 - (32 - __clz(candidates)));
    auto fixed = [=](float v) {
      return __double2ull_rz(static_cast<double>(weight_of(v)) * scale);
    };
    tp = select_prefix<false>(x, n, cand, fixed, static_cast<double>(r.top_p), true, sm);
  }
  const float min_p = r.min_p;
  auto kept = [=](int i, float v, float& w) {
    if (!finite_above(v)) return false;
    const uint32_t k = order_key(v);
    if (!within(tk, k, i) || !within(tp, k, i)) return false;
    w = weight_of(v);
    return !(w < min_p);
  };

  // Inverse CDF over the kept ids in ascending order: per-warp sums, prefixes in warp order,
  // then the warp whose range passes the target finds the first id whose cumulative exceeds it.
  double lane_sum = 0.0;
  int lane_last = -1;
  for (int i = seg.begin + lane_id(); i < seg.end; i += 32) {
    float w = 0.0f;
    if (kept(i, x[i], w)) lane_sum += static_cast<double>(w), lane_last = i;
  }
  const double warp_sum = warp_allreduce(lane_sum, [](double a, double b) { return a + b; });
  const int warp_last = warp_allreduce(lane_last, [](int a, int b) { return max(a, b); });
  if (lane_id() == 0) sm.red_d[warp_id()] = warp_sum, sm.red_i[warp_id()] = warp_last;
  __syncthreads();
  if (threadIdx.x == 0) {
    double run = 0.0;
    int last = -1;
    for (int w = 0; w < kWarps; ++w) {
      sm.prefix_d[w] = run;
      run += sm.red_d[w];
      last = max(last, sm.red_i[w]);
    }
    sm.draw_target = counter_uniform(r.rng_key, r.rng_counter) * run;
    sm.draw_last = last;
    sm.draw_id = INT_MAX;
  }
  __syncthreads();
  const double target = sm.draw_target;
  double run = sm.prefix_d[warp_id()];
  if (run + sm.red_d[warp_id()] > target) {
    for (int base = seg.begin; base < seg.end; base += 32) {
      const int i = base + lane_id();
      float w = 0.0f;
      const bool k = i < seg.end && kept(i, x[i], w);
      const double incl = warp_inclusive_sum(k ? static_cast<double>(w) : 0.0);
      const unsigned hit = __ballot_sync(kFull, k && run + incl > target);
      if (hit != 0u) {
        if (lane_id() == 0) atomicMin(&sm.draw_id, base + __ffs(hit) - 1);
        break;
      }
      run += __shfl_sync(kFull, incl, 31);
    }
  }
  __syncthreads();
  return sm.draw_id != INT_MAX ? sm.draw_id : sm.draw_last;
}

__global__ void __launch_bounds__(kThreads, 1) sample_rows_kernel(SamplingLaunch p) {
  __shared__ Smem sm;
  const int row = static_cast<int>(blockIdx.x);
  const int n = p.vocab_size;
  const SamplingRow r = p.rows[row];
  const float* raw = p.logits + static_cast<size_t>(row) * n;
  float* work = p.work + static_cast<size_t>(row) * n;
  process_row(raw, work, n, r, p);

  double log_z = 0.0;
  int num_top = 0;
  if (r.num_logprobs >= 0) {
    log_z = log_normalizer(raw, n, sm);
    const int want = min(r.num_logprobs, p.top_stride);
    if (want > 0) {
      const size_t at = static_cast<size_t>(row) * p.top_stride;
      num_top = write_top(raw, n, want, log_z, p.top_ids + at, p.top_logprobs + at, sm);
    }
  }
  int token = r.greedy ? block_argmax(work, n, sm) : draw_token(work, n, r, sm);
  if (token < 0 && r.grammar_mask >= 0) {  // the grammar's choices beat min_tokens masking
    const uint32_t* allowed =
        p.grammar_masks + static_cast<size_t>(r.grammar_mask) * static_cast<size_t>(p.mask_words);
    const Segment seg = warp_segment(n);
    for (int i = seg.begin + lane_id(); i < seg.end; i += 32) {
      work[i] = ((allowed[i >> 5] >> (i & 31)) & 1u) ? raw[i] : -INFINITY;
    }
    __syncthreads();
    token = block_argmax(work, n, sm);
  }
  if (token < 0) token = block_argmax(raw, n, sm);  // everything masked: the raw argmax
  if (token < 0) token = 0;
  if (threadIdx.x == 0) {
    SampledToken o;
    o.token_id = token;
    o.logprob =
        r.num_logprobs >= 0 ? static_cast<float>(static_cast<double>(raw[token]) - log_z) : 0.0f;
    o.num_top = num_top;
    o.reserved = 0;
    p.out[row] = o;
  }
}

__global__ void uniforms_kernel(const uint64_t* keys, const uint64_t* counters, int32_t n,
                                double* out) {
  for (int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); i < n;
       i += static_cast<int>(gridDim.x * blockDim.x)) {
    out[i] = counter_uniform(keys[i], counters[i]);
  }
}

}  // namespace

cudaError_t sample_rows(const SamplingLaunch& p, cudaStream_t stream) {
  if (p.num_rows < 0 || p.vocab_size < 1 || p.vocab_size > kMaxSamplingVocab || p.top_stride < 0 ||
      p.top_stride > kMaxTopLogprobs) {
    return cudaErrorInvalidValue;
  }
  if (p.num_rows == 0) return cudaSuccess;
  sample_rows_kernel<<<static_cast<unsigned>(p.num_rows), kThreads, 0, stream>>>(p);
  return cudaGetLastError();
}

cudaError_t sampling_uniforms(const uint64_t* keys, const uint64_t* counters, int32_t n,
                              double* out, cudaStream_t stream) {
  if (n < 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  const int threads = 256;
  const unsigned blocks = static_cast<unsigned>(min((n + threads - 1) / threads, 4096));
  uniforms_kernel<<<blocks, threads, 0, stream>>>(keys, counters, n, out);
  return cudaGetLastError();
}

}  // namespace llmserve::kernels::cuda
