// RMSNorm over rows: y = x / sqrt(mean(x^2) + eps) * weight.
#pragma once

#include <cstdint>

#include "llmserve/kernels/thread_pool.h"

namespace llmserve::kernels {

// x, y: [rows, dim] (y may equal x); weight[dim].
void rms_norm(ThreadPool& pool, const float* x, const float* weight, int64_t rows, int64_t dim,
              float eps, float* y);

// Fused residual: residual += x, then y = rms_norm(residual). residual, x, y: [rows, dim];
// y may equal x, not residual.
void add_rms_norm(ThreadPool& pool, float* residual, const float* x, const float* weight,
                  int64_t rows, int64_t dim, float eps, float* y);

// residual[rows, dim] += rms_norm(x) * weight; x must not alias residual.
void add_normed(ThreadPool& pool, float* residual, const float* x, const float* weight,
                int64_t rows, int64_t dim, float eps);

}  // namespace llmserve::kernels
