#include "llmserve/kernels/encoder.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/simd_util.h"

namespace llmserve::kernels {
namespace {

constexpr int64_t kParallelElems = 1 << 13;

// erf for 8 floats: Abramowitz & Stegun 7.1.26 (absolute error under 1.5e-7), odd in x.
__m256 erf_ps(__m256 x) {
  const __m256 sign = _mm256_and_ps(x, _mm256_set1_ps(-0.0f));
  const __m256 a = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 t = _mm256_div_ps(one, _mm256_fmadd_ps(_mm256_set1_ps(0.3275911f), a, one));
  __m256 poly = _mm256_set1_ps(1.061405429f);
  poly = _mm256_fmadd_ps(poly, t, _mm256_set1_ps(-1.453152027f));
  poly = _mm256_fmadd_ps(poly, t, _mm256_set1_ps(1.421413741f));
  poly = _mm256_fmadd_ps(poly, t, _mm256_set1_ps(-0.284496736f));
  poly = _mm256_fmadd_ps(poly, t, _mm256_set1_ps(0.254829592f));
  poly = _mm256_mul_ps(poly, t);
  const __m256 g = cpu::exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), _mm256_mul_ps(a, a)));
  return _mm256_or_ps(_mm256_fnmadd_ps(poly, g, one), sign);
}

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
      // The same lanes for every element, tail included: a row's values do not depend on
      // where the batch puts it.
      auto gelu8 = [](const __m256 v) {
        const __m256 e = erf_ps(_mm256_mul_ps(v, _mm256_set1_ps(0.70710678118654752f)));
        const __m256 half_v = _mm256_mul_ps(v, _mm256_set1_ps(0.5f));
        return _mm256_fmadd_ps(half_v, e, half_v);
      };
      cpu::map_lanes8(x + lo, hi - lo, gelu8);
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
  // One task per (request, head): the head's keys transposed once (kt[d][j], j padded to 8), so
  // each query's scores come 32 keys per step in four FMA chains; softmax 8 lanes at a time; p.v
  // 32 head lanes per step.
  pool.parallel_for(num_requests * num_heads, [&](int64_t begin, int64_t end) {
    thread_local std::vector<float> kt, p;
    for (int64_t task = begin; task < end; ++task) {
      const int64_t r = task / num_heads;
      const int h = static_cast<int>(task % num_heads);
      const int kvh = h / group;
      const int64_t s = query_start[r], n = query_start[r + 1] - s;
      if (n <= 0) continue;
      const int64_t np = (n + 7) / 8 * 8;
      kt.assign(static_cast<size_t>(np * head_dim), 0.0f);
      p.resize(static_cast<size_t>(np));
      for (int64_t j = 0; j < n; ++j) {
        const float* kj = k + (s + j) * kv_stride + int64_t{kvh} * head_dim;
        for (int d = 0; d < head_dim; ++d) kt[static_cast<size_t>(d * np + j)] = kj[d];
      }
      const __m256 vscale = _mm256_set1_ps(scale);
      for (int64_t i = 0; i < n; ++i) {
        const float* qi = q + (s + i) * q_stride + int64_t{h} * head_dim;
        __m256 vmax = _mm256_set1_ps(-INFINITY);
        auto finish = [&](int64_t j, __m256 acc) {
          acc = _mm256_mul_ps(acc, vscale);
          if (j + 8 > n) {  // lanes past the last key take no weight
            alignas(32) float t[8];
            _mm256_store_ps(t, acc);
            for (int64_t l = n - j; l < 8; ++l) t[l] = -INFINITY;
            acc = _mm256_load_ps(t);
          }
          _mm256_storeu_ps(p.data() + j, acc);
          vmax = _mm256_max_ps(vmax, acc);
        };
        int64_t j = 0;
        for (; j + 32 <= np; j += 32) {  // four independent FMA chains
          __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
          for (int d = 0; d < head_dim; ++d) {
            const __m256 b = _mm256_set1_ps(qi[d]);
            const float* c = kt.data() + d * np + j;
            a0 = _mm256_fmadd_ps(b, _mm256_loadu_ps(c), a0);
            a1 = _mm256_fmadd_ps(b, _mm256_loadu_ps(c + 8), a1);
            a2 = _mm256_fmadd_ps(b, _mm256_loadu_ps(c + 16), a2);
            a3 = _mm256_fmadd_ps(b, _mm256_loadu_ps(c + 24), a3);
          }
          finish(j, a0);
          finish(j + 8, a1);
          finish(j + 16, a2);
          finish(j + 24, a3);
        }
        for (; j < np; j += 8) {
          __m256 acc = _mm256_setzero_ps();
          for (int d = 0; d < head_dim; ++d) {
            acc = _mm256_fmadd_ps(_mm256_set1_ps(qi[d]), _mm256_loadu_ps(kt.data() + d * np + j),
                                  acc);
          }
          finish(j, acc);
        }
        const __m256 mx = _mm256_set1_ps(cpu::Avx2Floats::reduce_max(vmax));
        __m256 vsum = _mm256_setzero_ps();
        for (int64_t jj = 0; jj < np; jj += 8) {
          const __m256 e = cpu::exp_ps(_mm256_sub_ps(_mm256_loadu_ps(p.data() + jj), mx));
          _mm256_storeu_ps(p.data() + jj, e);
          vsum = _mm256_add_ps(vsum, e);
        }
        const float inv = 1.0f / cpu::hsum(vsum);
        float* o = out + (s + i) * q_stride + int64_t{h} * head_dim;
        const float* vh = v + s * kv_stride + int64_t{kvh} * head_dim;
        const __m256 vinv = _mm256_set1_ps(inv);
        int d = 0;
        for (; d + 32 <= head_dim; d += 32) {
          __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
          for (int64_t jj = 0; jj < n; ++jj) {
            const __m256 b = _mm256_set1_ps(p[static_cast<size_t>(jj)]);
            const float* vr = vh + jj * kv_stride + d;
            a0 = _mm256_fmadd_ps(b, _mm256_loadu_ps(vr), a0);
            a1 = _mm256_fmadd_ps(b, _mm256_loadu_ps(vr + 8), a1);
            a2 = _mm256_fmadd_ps(b, _mm256_loadu_ps(vr + 16), a2);
            a3 = _mm256_fmadd_ps(b, _mm256_loadu_ps(vr + 24), a3);
          }
          _mm256_storeu_ps(o + d, _mm256_mul_ps(a0, vinv));
          _mm256_storeu_ps(o + d + 8, _mm256_mul_ps(a1, vinv));
          _mm256_storeu_ps(o + d + 16, _mm256_mul_ps(a2, vinv));
          _mm256_storeu_ps(o + d + 24, _mm256_mul_ps(a3, vinv));
        }
        for (; d + 8 <= head_dim; d += 8) {
          __m256 acc = _mm256_setzero_ps();
          for (int64_t jj = 0; jj < n; ++jj) {
            acc = _mm256_fmadd_ps(_mm256_set1_ps(p[static_cast<size_t>(jj)]),
                                  _mm256_loadu_ps(vh + jj * kv_stride + d), acc);
          }
          _mm256_storeu_ps(o + d, _mm256_mul_ps(acc, vinv));
        }
        for (; d < head_dim; ++d) {
          float acc = 0.0f;
          for (int64_t jj = 0; jj < n; ++jj) {
            acc += p[static_cast<size_t>(jj)] * vh[jj * kv_stride + d];
          }
          o[d] = acc * inv;
        }
      }
    }
  });
}

}  // namespace llmserve::kernels
