#include "llmserve/kernels/hadamard.h"

#include <immintrin.h>

#include <cmath>

namespace llmserve::kernels {
namespace {

// Butterflies of stride len < 8 inside each 8-float vector: lanes with the len bit clear get
// a + b, the others a - b, as the scalar pass (pairs (j, j + len)) computes them.
template <int kLen>
inline __m256 butterfly_in_lanes(__m256 x) {
  constexpr int kMask = kLen == 1 ? 0xAA : kLen == 2 ? 0xCC : 0xF0;
  __m256 y;
  if constexpr (kLen == 1) {
    y = _mm256_permute_ps(x, 0xB1);  // swap neighbours
  } else if constexpr (kLen == 2) {
    y = _mm256_permute_ps(x, 0x4E);  // swap pairs
  } else {
    y = _mm256_permute2f128_ps(x, x, 1);  // swap halves
  }
  // Low lane i: x_i + x_{i+len}; high lane i: x_{i-len} - x_i (y holds x_{i-len} there).
  return _mm256_blend_ps(_mm256_add_ps(x, y), _mm256_sub_ps(y, x), kMask);
}

// One row of n (a power of two) floats, in place; vectors of 8 when n >= 8.
void transform(float* v, int n, float norm) {
  if (n < 8) {
    for (int len = 1; len < n; len <<= 1) {
      for (int i = 0; i < n; i += len << 1) {
        for (int j = i; j < i + len; ++j) {
          const float a = v[j], b = v[j + len];
          v[j] = a + b;
          v[j + len] = a - b;
        }
      }
    }
    for (int i = 0; i < n; ++i) v[i] *= norm;
    return;
  }
  for (int i = 0; i < n; i += 8) {
    __m256 x = _mm256_loadu_ps(v + i);
    x = butterfly_in_lanes<1>(x);
    x = butterfly_in_lanes<2>(x);
    x = butterfly_in_lanes<4>(x);
    _mm256_storeu_ps(v + i, x);
  }
  for (int len = 8; len < n; len <<= 1) {
    for (int i = 0; i < n; i += len << 1) {
      for (int j = i; j < i + len; j += 8) {
        const __m256 a = _mm256_loadu_ps(v + j), b = _mm256_loadu_ps(v + j + len);
        _mm256_storeu_ps(v + j, _mm256_add_ps(a, b));
        _mm256_storeu_ps(v + j + len, _mm256_sub_ps(a, b));
      }
    }
  }
  const __m256 s = _mm256_set1_ps(norm);
  for (int i = 0; i < n; i += 8) _mm256_storeu_ps(v + i, _mm256_mul_ps(_mm256_loadu_ps(v + i), s));
}

}  // namespace

void hadamard_rows(ThreadPool& pool, float* x, int64_t rows, int64_t row_stride, int heads,
                   int head_dim) {
  const float norm = 1.0f / std::sqrt(static_cast<float>(head_dim));
  auto run = [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      for (int h = 0; h < heads; ++h) {
        transform(x + r * row_stride + int64_t{h} * head_dim, head_dim, norm);
      }
    }
  };
  // A decode step's few rows cost less than waking the pool.
  if (rows >= 16) {
    pool.parallel_for(rows, run);
  } else {
    run(0, rows);
  }
}

}  // namespace llmserve::kernels
