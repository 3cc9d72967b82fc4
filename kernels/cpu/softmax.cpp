#include "llmserve/kernels/softmax.h"

#include <immintrin.h>

#include <cmath>
#include <limits>

namespace llmserve::kernels {
namespace {
float row_max(const float* x, int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}
}  // namespace

int64_t argmax_above(const float* x, int64_t n, float floor) {
  // Pass 1: the largest value (max_ps(v, m) keeps m when v is NaN). Pass 2: its first index.
  __m256 m8 = _mm256_set1_ps(floor);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) m8 = _mm256_max_ps(_mm256_loadu_ps(x + i), m8);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, m8);
  float m = floor;
  for (float v : lanes) m = v > m ? v : m;
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  if (!(m > floor)) return -1;
  const __m256 target = _mm256_set1_ps(m);
  for (i = 0; i + 8 <= n; i += 8) {
    const int mask = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), target, _CMP_EQ_OQ));
    if (mask != 0) return i + __builtin_ctz(static_cast<unsigned>(mask));
  }
  for (; i < n; ++i) {
    if (x[i] == m) return i;
  }
  return -1;
}

int64_t argmax(const float* x, int64_t n) {
  const int64_t best = argmax_above(x, n, -std::numeric_limits<float>::infinity());
  if (best >= 0) return best;
  for (int64_t i = 0; i < n; ++i) {  // nothing above -inf: the first value that is not NaN
    if (!std::isnan(x[i])) return i;
  }
  return 0;
}

void softmax(const float* x, float* out, int64_t n) {
  const float m = row_max(x, n);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    out[i] = std::exp(x[i] - m);
    sum += out[i];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) out[i] *= inv;
}

void log_softmax(const float* x, float* out, int64_t n) {
  const float m = row_max(x, n);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(x[i] - m));
  const float lse = m + static_cast<float>(std::log(sum));
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] - lse;
}

}  // namespace llmserve::kernels
