#include "engine/vision/vision_ops.h"

#include <algorithm>
#include <cmath>

#include "llmserve/kernels/matmul.h"
#include "llmserve/kernels/softmax.h"

namespace llmserve::vision {

void linear(kernels::ThreadPool& pool, const float* x, int64_t rows, const Linear& l, float* y) {
  kernels::matmul(pool, x, rows, l.in, l.type, l.weight, l.out, y);
  if (l.bias.empty()) return;
  pool.parallel_for(rows, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      float* row = y + r * l.out;
      for (int64_t i = 0; i < l.out; ++i) row[i] += l.bias[static_cast<size_t>(i)];
    }
  });
}

void gelu_tanh(kernels::ThreadPool& pool, float* x, int64_t n) {
  constexpr int64_t kChunk = 4096;
  pool.parallel_for((n + kChunk - 1) / kChunk, [&](int64_t begin, int64_t end) {
    const float c = std::sqrt(2.0f / 3.14159265358979323846f);
    for (int64_t i = begin * kChunk; i < std::min(n, end * kChunk); ++i) {
      const float z = x[i];
      x[i] = 0.5f * z * (1.0f + std::tanh(c * (z + 0.044715f * z * z * z)));
    }
  });
}

void full_attention(kernels::ThreadPool& pool, const float* q, const float* k, const float* v,
                    int64_t n, int64_t heads, int64_t head_dim, float scale, float* out,
                    std::vector<float>& scratch) {
  const int64_t width = heads * head_dim;
  scratch.resize(static_cast<size_t>(n * n + 4 * n * head_dim));
  float* scores = scratch.data();
  float* qh = scores + n * n;
  float* kh = qh + n * head_dim;
  float* vt = kh + n * head_dim;  // v of the head transposed: [head_dim, n]
  float* oh = vt + n * head_dim;
  for (int64_t h = 0; h < heads; ++h) {
    const int64_t col = h * head_dim;
    pool.parallel_for(n, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        for (int64_t d = 0; d < head_dim; ++d) {
          qh[r * head_dim + d] = q[r * width + col + d] * scale;
          kh[r * head_dim + d] = k[r * width + col + d];
          vt[d * n + r] = v[r * width + col + d];
        }
      }
    });
    kernels::matmul(pool, qh, n, head_dim, kernels::DType::F32, kh, n, scores);
    pool.parallel_for(n, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) kernels::softmax(scores + r * n, scores + r * n, n);
    });
    kernels::matmul(pool, scores, n, n, kernels::DType::F32, vt, head_dim, oh);
    pool.parallel_for(n, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        std::copy_n(oh + r * head_dim, head_dim, out + r * width + col);
      }
    });
  }
}

}  // namespace llmserve::vision
