// Element-wise activation and arithmetic helpers over contiguous f32 arrays of n elements.
#pragma once

#include <cstdint>

namespace llmserve::kernels {

// out[i] = silu(gate[i]) * up[i], silu(z) = z / (1 + exp(-z)). out may alias gate or up.
void silu_mul(const float* gate, const float* up, float* out, int64_t n);

// out[i] = gelu_tanh(gate[i]) * up[i], gelu_tanh(z) = 0.5 z (1 + tanh(sqrt(2 / pi) (z +
// 0.044715 z^3))) (GeGLU). out may alias gate or up.
void gelu_tanh_mul(const float* gate, const float* up, float* out, int64_t n);

// x[i] = gelu_tanh(x[i]) in place, as z / (1 + e^(-2 sqrt(2 / pi) (z + 0.044715 z^3))) (the same
// function: 0.5 (1 + tanh(u)) = 1 / (1 + e^(-2u))), 8 lanes at a time through a vector e^x;
// the tail goes through the same lanes, so an element's result does not depend on its position.
void gelu_tanh(float* x, int64_t n);

// x[i] *= s.
void scale(float* x, int64_t n, float s);

// x[i] = cap * tanh(x[i] / cap), cap > 0.
void softcap(float* x, int64_t n, float cap);

// out[i] = a[i] + b[i]; out may alias a or b.
void add(const float* a, const float* b, float* out, int64_t n);

}  // namespace llmserve::kernels
