#include "llmserve/kernels/norm.h"

#include <cmath>

#include "kernels/cpu/simd_util.h"

namespace llmserve::kernels {
namespace {

constexpr int64_t kParallelElems = 1 << 13;  // a 16-token decode step of a 576-wide model

void norm_row(const float* x, const float* w, int64_t dim, float eps, float* y) {
  const float ss = cpu::dot_f32(x, x, dim);
  const float inv = 1.0f / std::sqrt(ss / static_cast<float>(dim) + eps);
  const __m256 vi = _mm256_set1_ps(inv);
  int64_t i = 0;
  for (; i + 8 <= dim; i += 8) {
    const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), vi);
    _mm256_storeu_ps(y + i, _mm256_mul_ps(v, _mm256_loadu_ps(w + i)));
  }
  for (; i < dim; ++i) y[i] = (x[i] * inv) * w[i];
}

template <typename Fn>
void for_rows(ThreadPool& pool, int64_t rows, int64_t dim, Fn&& fn) {
  if (rows > 1 && rows * dim >= kParallelElems) {
    pool.parallel_for(rows, fn);
  } else {
    fn(0, rows);
  }
}

}  // namespace

void rms_norm(ThreadPool& pool, const float* x, const float* weight, int64_t rows, int64_t dim,
              float eps, float* y) {
  for_rows(pool, rows, dim, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) norm_row(x + r * dim, weight, dim, eps, y + r * dim);
  });
}

void add_rms_norm(ThreadPool& pool, float* residual, const float* x, const float* weight,
                  int64_t rows, int64_t dim, float eps, float* y) {
  for_rows(pool, rows, dim, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      float* res = residual + r * dim;
      const float* xr = x + r * dim;
      for (int64_t i = 0; i < dim; ++i) res[i] += xr[i];
      norm_row(res, weight, dim, eps, y + r * dim);
    }
  });
}

void add_normed(ThreadPool& pool, float* residual, const float* x, const float* weight,
                int64_t rows, int64_t dim, float eps) {
  for_rows(pool, rows, dim, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const float* xr = x + r * dim;
      const float inv = 1.0f / std::sqrt(cpu::dot_f32(xr, xr, dim) / static_cast<float>(dim) + eps);
      float* res = residual + r * dim;
      for (int64_t i = 0; i < dim; ++i) res[i] += (xr[i] * inv) * weight[i];
    }
  });
}

}  // namespace llmserve::kernels
