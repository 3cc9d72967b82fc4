// Reductions over one row of n f32 values (n >= 1).
#pragma once

#include <cstdint>

namespace llmserve::kernels {

// Index of the largest value; the first one on ties. NaNs are ignored unless all are NaN (0).
int64_t argmax(const float* x, int64_t n);

// Index of the first largest value above `floor` (NaNs ignored); -1 when no value is above it.
int64_t argmax_above(const float* x, int64_t n, float floor);

// out = softmax(x) (max-subtracted); out may equal x.
void softmax(const float* x, float* out, int64_t n);

// out = x - logsumexp(x); out may equal x.
void log_softmax(const float* x, float* out, int64_t n);

}  // namespace llmserve::kernels
