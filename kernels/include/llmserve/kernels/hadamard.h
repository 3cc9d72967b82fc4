// The normalized Walsh-Hadamard transform of head rows, in place: each head_dim row x of
// x[rows, heads, head_dim] (row r at x + r * row_stride) becomes H x / sqrt(head_dim), H the
// Sylvester Hadamard matrix. H / sqrt(d) is orthogonal and its own inverse, so q . k and
// sum_j p_j v_j survive rotating q, k and v (and the output back) while the rotation spreads a
// row's outlier channels over all of them: what int8 / fp8 KV caches quantize well.
// Precondition: head_dim is a power of two.
#pragma once

#include <cstdint>

#include "llmserve/kernels/thread_pool.h"

namespace llmserve::kernels {

inline bool hadamard_supported(int head_dim) {
  return head_dim >= 2 && (head_dim & (head_dim - 1)) == 0;
}

// Rows split over `pool` when there are many (a prefill).
void hadamard_rows(ThreadPool& pool, float* x, int64_t rows, int64_t row_stride, int heads,
                   int head_dim);

}  // namespace llmserve::kernels
