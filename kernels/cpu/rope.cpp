#include "llmserve/kernels/rope.h"

#include <cmath>
#include <numbers>

namespace llmserve::kernels {

std::vector<float> rope_inv_freq(int rot_dim, float theta, const RopeScaling& sc) {
  std::vector<float> f(rot_dim / 2);
  for (int i = 0; i < rot_dim / 2; ++i) {
    f[i] = static_cast<float>(1.0 / std::pow(static_cast<double>(theta), 2.0 * i / rot_dim));
  }
  if (sc.kind == RopeScaling::Kind::kLinear) {
    for (float& v : f) v /= sc.factor;
  } else if (sc.kind == RopeScaling::Kind::kLlama3) {
    const float low_wavelen = sc.original_max_positions / sc.low_freq_factor;
    const float high_wavelen = sc.original_max_positions / sc.high_freq_factor;
    for (float& v : f) {
      const float wavelen = 2.0f * std::numbers::pi_v<float> / v;
      if (wavelen > low_wavelen) {
        v = v / sc.factor;
      } else if (wavelen >= high_wavelen) {
        const float smooth = (sc.original_max_positions / wavelen - sc.low_freq_factor) /
                             (sc.high_freq_factor - sc.low_freq_factor);
        v = (1.0f - smooth) * v / sc.factor + smooth * v;
      }
    }
  }
  return f;
}

void rope_table(const int32_t* positions, int64_t T, const std::vector<float>& inv_freq,
                std::vector<float>& cos_sin) {
  const int64_t half = static_cast<int64_t>(inv_freq.size());
  cos_sin.resize(static_cast<size_t>(T * 2 * half));
  for (int64_t t = 0; t < T; ++t) {
    const float pos = static_cast<float>(positions[t]);
    float* cs = cos_sin.data() + t * 2 * half;
    for (int64_t i = 0; i < half; ++i) {
      const float a = pos * inv_freq[i];
      cs[i] = std::cos(a);
      cs[half + i] = std::sin(a);
    }
  }
}

void apply_rope_table(float* x, int64_t T, int heads, int head_dim, const float* cos_sin, int half,
                      RopePairing pairing) {
  for (int64_t t = 0; t < T; ++t) {
    const float* cs = cos_sin + t * 2 * half;
    const float* sn = cs + half;
    for (int h = 0; h < heads; ++h) {
      float* v = x + (t * heads + h) * head_dim;
      for (int i = 0; i < half; ++i) {
        float* a = pairing == RopePairing::kAdjacent ? v + 2 * i : v + i;
        float* b = pairing == RopePairing::kAdjacent ? v + 2 * i + 1 : v + i + half;
        const float x0 = *a, x1 = *b;
        *a = x0 * cs[i] - x1 * sn[i];
        *b = x0 * sn[i] + x1 * cs[i];
      }
    }
  }
}

void apply_rope(float* x, int64_t T, int heads, int head_dim, const int32_t* positions,
                const std::vector<float>& inv_freq, RopePairing pairing) {
  thread_local std::vector<float> cos_sin;
  rope_table(positions, T, inv_freq, cos_sin);
  apply_rope_table(x, T, heads, head_dim, cos_sin.data(), static_cast<int>(inv_freq.size()),
                   pairing);
}

}  // namespace llmserve::kernels
