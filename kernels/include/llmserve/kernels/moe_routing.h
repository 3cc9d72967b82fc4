// Mixture-of-experts routing on the CPU: which experts each token goes to with which weight, and
// the token rows grouped by expert so that each expert's GEMM runs once over its tokens. The CPU
// twin of kernels/cuda/moe_routing.cu.
#pragma once

#include <cstdint>

namespace llmserve::kernels {

// For each of T tokens: p = softmax(logits[t, 0..E)) (in f32, max-subtracted), the k largest
// (the lower index first on ties, as a stable descending sort), ids[t, 0..k) in that order and
// weights[t, j] = p[ids[t, j]], divided by their sum when norm. Preconditions: 1 <= k <= E.
void moe_route(const float* logits, int64_t T, int64_t E, int64_t k, bool norm, int32_t* ids,
               float* weights);

// Groups the T x k (token, slot) pairs by expert, experts in index order and tokens ascending
// within each: offsets[E + 1] (offsets[e]..offsets[e + 1] are expert e's rows), rows[T * k] the
// pair t * k + j of each grouped row, and slot_row[T * k] the grouped row of pair t * k + j.
void moe_group(const int32_t* ids, int64_t T, int64_t k, int64_t E, int32_t* offsets, int32_t* rows,
               int32_t* slot_row);

}  // namespace llmserve::kernels
