#include "engine/vision/vision_ops.h"

#include <algorithm>
#include <cmath>

#include "llmserve/kernels/activation.h"
#include "llmserve/kernels/encoder.h"
#include "llmserve/kernels/matmul.h"

namespace llmserve::vision {

void pack_linear(Linear& l) {
  if (!kernels::can_pack_weight(l.type, l.out, l.in)) return;
  l.packed = kernels::pack_weight(l.type, l.weight, l.out, l.in);
}

namespace {

void add_bias(kernels::ThreadPool& pool, int64_t rows, const Linear& l, float* y) {
  if (l.bias.empty()) return;
  pool.parallel_for(rows, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      float* row = y + r * l.out;
      for (int64_t i = 0; i < l.out; ++i) row[i] += l.bias[static_cast<size_t>(i)];
    }
  });
}

}  // namespace

void linear(kernels::ThreadPool& pool, const float* x, int64_t rows, const Linear& l, float* y) {
  if (!l.packed.empty()) {
    kernels::matmul_packed(pool, x, rows, l.packed, y);
  } else {
    kernels::matmul(pool, x, rows, l.in, l.type, l.weight, l.out, y);
  }
  add_bias(pool, rows, l, y);
}

void linears(kernels::ThreadPool& pool, const float* x, int64_t rows,
             std::span<const Linear* const> ls, std::span<float* const> ys) {
  constexpr size_t kMax = 8;
  const size_t n = std::min({ls.size(), ys.size(), kMax});
  const kernels::PackedWeight* ws[kMax];
  bool all_packed = n > 0;
  for (size_t i = 0; i < n; ++i) {
    all_packed = all_packed && !ls[i]->packed.empty() && ls[i]->in == ls[0]->in;
    ws[i] = &ls[i]->packed;
  }
  if (!all_packed) {
    for (size_t i = 0; i < n; ++i) linear(pool, x, rows, *ls[i], ys[i]);
    return;
  }
  kernels::matmul_packed_multi(pool, x, rows, {ws, n}, ys.first(n));
  for (size_t i = 0; i < n; ++i) add_bias(pool, rows, *ls[i], ys[i]);
}

void gelu_tanh(kernels::ThreadPool& pool, float* x, int64_t n) {
  constexpr int64_t kChunk = 4096;
  pool.parallel_for((n + kChunk - 1) / kChunk, [&](int64_t begin, int64_t end) {
    const int64_t first = begin * kChunk, last = std::min(n, end * kChunk);
    kernels::gelu_tanh(x + first, last - first);
  });
}

void full_attention(kernels::ThreadPool& pool, const float* q, const float* k, const float* v,
                    int64_t n, int64_t heads, int64_t head_dim, float scale, float* out) {
  kernels::dense_attention(pool, q, k, v, n, static_cast<int>(heads), static_cast<int>(head_dim),
                           scale, out);
}

}  // namespace llmserve::vision
