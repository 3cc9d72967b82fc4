#include "llmserve/kernels/hadamard.h"

#include <cmath>

namespace llmserve::kernels {
namespace {

void transform(float* v, int n, float norm) {
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
}

}  // namespace

void hadamard_rows(float* x, int64_t rows, int64_t row_stride, int heads, int head_dim) {
  const float norm = 1.0f / std::sqrt(static_cast<float>(head_dim));
  for (int64_t r = 0; r < rows; ++r) {
    for (int h = 0; h < heads; ++h)
      transform(x + r * row_stride + int64_t{h} * head_dim, head_dim, norm);
  }
}

}  // namespace llmserve::kernels
