#include "kernels/cpu/attention_core.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/simd_util.h"

namespace llmserve::kernels::cpu {
namespace {
constexpr int kTile = 32;

// acc[0..n) = acc * c + p * v
inline void scale_add(float* acc, float c, float p, const float* v, int n) {
  const __m256 vc = _mm256_set1_ps(c), vp = _mm256_set1_ps(p);
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 a = _mm256_mul_ps(_mm256_loadu_ps(acc + i), vc);
    _mm256_storeu_ps(acc + i, _mm256_fmadd_ps(vp, _mm256_loadu_ps(v + i), a));
  }
  for (; i < n; ++i) acc[i] = acc[i] * c + p * v[i];
}
}  // namespace

void attend_partition(const PagedKv& kv, const int32_t* table, int kv_head, const float* q, int G,
                      float scale, int64_t start, int64_t end, float* rec) {
  const int D = kv.shape.head_dim;
  const int bs = kv.shape.block_size;
  float* m = rec;
  float* l = rec + G;
  float* acc = rec + 2 * G;
  std::fill(m, m + G, -std::numeric_limits<float>::infinity());
  std::fill(l, l + G, 0.0f);
  std::fill(acc, acc + static_cast<int64_t>(G) * D, 0.0f);
  thread_local std::vector<float> scores;
  thread_local std::vector<const float*> vrows;
  if (scores.size() < static_cast<size_t>(G) * kTile) scores.resize(static_cast<size_t>(G) * kTile);
  vrows.resize(kTile);

  for (int64_t t0 = start; t0 < end; t0 += kTile) {
    const int n = static_cast<int>(std::min<int64_t>(kTile, end - t0));
    for (int j = 0; j < n; ++j) {
      const int64_t pos = t0 + j;
      const int64_t slot = static_cast<int64_t>(table[pos / bs]) * bs + pos % bs;
      const int64_t off = kv_cache_offset(kv.shape, slot, kv_head);
      const float* krow = kv.k_cache + off;
      vrows[j] = kv.v_cache + off;
      for (int g = 0; g < G; ++g) scores[g * kTile + j] = dot_f32(q + g * D, krow, D) * scale;
    }
    for (int g = 0; g < G; ++g) {
      float* s = scores.data() + g * kTile;
      float tmax = s[0];
      for (int j = 1; j < n; ++j) tmax = std::max(tmax, s[j]);
      const float m_new = std::max(m[g], tmax);
      const float corr = std::exp(m[g] - m_new);
      float sum = 0.0f;
      for (int j = 0; j < n; ++j) {
        s[j] = std::exp(s[j] - m_new);
        sum += s[j];
      }
      l[g] = l[g] * corr + sum;
      m[g] = m_new;
      float* a = acc + static_cast<int64_t>(g) * D;
      scale_add(a, corr, s[0], vrows[0], D);
      for (int j = 1; j < n; ++j) scale_add(a, 1.0f, s[j], vrows[j], D);
    }
  }
}

void merge_partials(const float* recs, int P, int G, int head_dim, float* out) {
  const int64_t rec = partial_floats(G, head_dim);
  for (int g = 0; g < G; ++g) {
    float mx = -std::numeric_limits<float>::infinity();
    for (int p = 0; p < P; ++p) mx = std::max(mx, recs[p * rec + g]);
    float L = 0.0f;
    float* o = out + static_cast<int64_t>(g) * head_dim;
    std::fill(o, o + head_dim, 0.0f);
    for (int p = 0; p < P; ++p) {
      const float* r = recs + p * rec;
      const float w = std::exp(r[g] - mx);
      L += r[G + g] * w;
      scale_add(o, 1.0f, w, r + 2 * G + static_cast<int64_t>(g) * head_dim, head_dim);
    }
    const float inv = 1.0f / L;
    for (int i = 0; i < head_dim; ++i) o[i] *= inv;
  }
}

}  // namespace llmserve::kernels::cpu
