// Element-wise activation and arithmetic helpers over contiguous f32 arrays of n elements.
#pragma once

#include <cstdint>

namespace llmserve::kernels {

// out[i] = silu(gate[i]) * up[i], silu(z) = z / (1 + exp(-z)). out may alias gate or up.
void silu_mul(const float* gate, const float* up, float* out, int64_t n);

// out[i] = a[i] + b[i]; out may alias a or b.
void add(const float* a, const float* b, float* out, int64_t n);

}  // namespace llmserve::kernels
