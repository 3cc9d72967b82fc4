#include "llmserve/kernels/softmax.h"

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

int64_t argmax(const float* x, int64_t n) {
  int64_t best = 0;
  float bv = -std::numeric_limits<float>::infinity();
  bool found = false;
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(x[i])) continue;
    if (!found || x[i] > bv) {
      best = i;
      bv = x[i];
      found = true;
    }
  }
  return best;
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
