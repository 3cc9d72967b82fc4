#include "llmserve/kernels/encoder.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/simd_util.h"

namespace llmserve::kernels {
namespace {

constexpr int64_t kParallelElems = 1 << 13;

template <typename Fn>
void for_rows(ThreadPool& pool, int64_t rows, int64_t dim, Fn&& fn) {
  if (rows > 1 && rows * dim >= kParallelElems) {
    pool.parallel_for(rows, fn);
  } else {
    fn(0, rows);
  }
}

void layer_norm_row(const float* x, const float* w, const float* b, int64_t dim, float eps,
                    float* y) {
  double sum = 0;
  for (int64_t i = 0; i < dim; ++i) sum += x[i];
  const double mean = sum / static_cast<double>(dim);
  double var = 0;
  for (int64_t i = 0; i < dim; ++i) {
    const double d = x[i] - mean;
    var += d * d;
  }
  var /= static_cast<double>(dim);
  const auto inv = static_cast<float>(1.0 / std::sqrt(var + static_cast<double>(eps)));
  const auto m = static_cast<float>(mean);
  for (int64_t i = 0; i < dim; ++i) y[i] = (x[i] - m) * inv * w[i] + b[i];
}

}  // namespace

void layer_norm(ThreadPool& pool, const float* x, const float* w, const float* b, int64_t rows,
                int64_t dim, float eps, float* y) {
  for_rows(pool, rows, dim, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) layer_norm_row(x + r * dim, w, b, dim, eps, y + r * dim);
  });
}

void add_layer_norm(ThreadPool& pool, float* residual, const float* x, const float* w,
                    const float* b, int64_t rows, int64_t dim, float eps) {
  for_rows(pool, rows, dim, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      float* res = residual + r * dim;
      const float* xr = x + r * dim;
      for (int64_t i = 0; i < dim; ++i) res[i] += xr[i];
      layer_norm_row(res, w, b, dim, eps, res);
    }
  });
}

void gelu_erf(ThreadPool& pool, float* x, int64_t n) {
  constexpr int64_t kChunk = 4096;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  auto run = [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const int64_t lo = c * kChunk, hi = std::min(n, lo + kChunk);
      for (int64_t i = lo; i < hi; ++i) {
        x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * 0.70710678118654752f));
      }
    }
  };
  if (n >= kParallelElems) {
    pool.parallel_for(chunks, run);
  } else {
    run(0, chunks);
  }
}

void bidirectional_attention(ThreadPool& pool, const float* q, const float* k, const float* v,
                             const int32_t* query_start, int64_t num_requests, int num_heads,
                             int num_kv_heads, int head_dim, float scale, float* out) {
  const int group = num_heads / num_kv_heads;
  const int64_t q_stride = int64_t{num_heads} * head_dim;
  const int64_t kv_stride = int64_t{num_kv_heads} * head_dim;
  // One task per (request, head): its queries one after another, keys in row order.
  pool.parallel_for(num_requests * num_heads, [&](int64_t begin, int64_t end) {
    thread_local std::vector<float> p;
    for (int64_t task = begin; task < end; ++task) {
      const int64_t r = task / num_heads;
      const int h = static_cast<int>(task % num_heads);
      const int kvh = h / group;
      const int64_t s = query_start[r], n = query_start[r + 1] - s;
      if (n <= 0) continue;
      p.resize(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        const float* qi = q + (s + i) * q_stride + int64_t{h} * head_dim;
        float mx = -INFINITY;
        for (int64_t j = 0; j < n; ++j) {
          const float* kj = k + (s + j) * kv_stride + int64_t{kvh} * head_dim;
          const float sc = cpu::dot_f32(qi, kj, head_dim) * scale;
          p[static_cast<size_t>(j)] = sc;
          mx = std::max(mx, sc);
        }
        float sum = 0.0f;
        for (int64_t j = 0; j < n; ++j) {
          const float e = std::exp(p[static_cast<size_t>(j)] - mx);
          p[static_cast<size_t>(j)] = e;
          sum += e;
        }
        const float inv = 1.0f / sum;
        float* o = out + (s + i) * q_stride + int64_t{h} * head_dim;
        std::fill(o, o + head_dim, 0.0f);
        for (int64_t j = 0; j < n; ++j) {
          const float* vj = v + (s + j) * kv_stride + int64_t{kvh} * head_dim;
          const float pj = p[static_cast<size_t>(j)] * inv;
          for (int d = 0; d < head_dim; ++d) o[d] += pj * vj[d];
        }
      }
    }
  });
}

}  // namespace llmserve::kernels
