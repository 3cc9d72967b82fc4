#include "llmserve/kernels/activation.h"

#include <immintrin.h>

#include <cmath>

#include "kernels/cpu/simd_util.h"

namespace llmserve::kernels {

void silu_mul(const float* gate, const float* up, float* out, int64_t n) {
  int64_t i = 0;
  const __m256 one = _mm256_set1_ps(1.0f);
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_loadu_ps(gate + i);
    const __m256 e = cpu::exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), g));
    _mm256_storeu_ps(
        out + i, _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(one, e)), _mm256_loadu_ps(up + i)));
  }
  for (; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void gelu_tanh_mul(const float* gate, const float* up, float* out, int64_t n) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  for (int64_t i = 0; i < n; ++i) {
    const float z = gate[i];
    out[i] = 0.5f * z * (1.0f + std::tanh(kSqrt2OverPi * (z + 0.044715f * z * z * z))) * up[i];
  }
}

void gelu_tanh(float* x, int64_t n) {
  const __m256 c = _mm256_set1_ps(-2.0f * 0.7978845608028654f), a = _mm256_set1_ps(0.044715f);
  const __m256 one = _mm256_set1_ps(1.0f);
  auto lanes = [&](__m256 z) {
    const __m256 z3 = _mm256_mul_ps(_mm256_mul_ps(z, z), z);
    const __m256 e = cpu::exp_ps(_mm256_mul_ps(c, _mm256_fmadd_ps(a, z3, z)));
    return _mm256_div_ps(z, _mm256_add_ps(one, e));
  };
  cpu::map_lanes8(x, n, lanes);
}

void scale(float* x, int64_t n, float s) {
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

void softcap(float* x, int64_t n, float cap) {
  for (int64_t i = 0; i < n; ++i) x[i] = cap * std::tanh(x[i] / cap);
}

void add(const float* a, const float* b, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(out + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  }
  for (; i < n; ++i) out[i] = a[i] + b[i];
}

}  // namespace llmserve::kernels
