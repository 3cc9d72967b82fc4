#include "kernels/cpu/attention_core.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/cpu/simd_util.h"

namespace llmserve::kernels::cpu {
namespace {
constexpr int kTile = 32;

inline __m256 load8(const float* p) {
  return _mm256_loadu_ps(p);
}
inline __m256 load8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
inline __m256 load8(const int8_t* p) {
  return _mm256_cvtepi32_ps(
      _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}
inline float load1(const float* p) {
  return *p;
}
inline float load1(const uint16_t* p) {
  return _cvtsh_ss(*p);
}
inline float load1(const int8_t* p) {
  return *p;
}

// acc[0..n) = acc * c + p * v
template <typename T>
inline void scale_add(float* acc, float c, float p, const T* v, int n) {
  const __m256 vc = _mm256_set1_ps(c), vp = _mm256_set1_ps(p);
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 a = _mm256_mul_ps(_mm256_loadu_ps(acc + i), vc);
    _mm256_storeu_ps(acc + i, _mm256_fmadd_ps(vp, load8(v + i), a));
  }
  for (; i < n; ++i) acc[i] = acc[i] * c + p * load1(v + i);
}

template <typename T>
inline float dot_scalar(const float* q, const T* k, int D) {
  if constexpr (std::is_same_v<T, float>) {
    return dot_f32(q, k, D);
  } else {
    float s = 0.0f;
    for (int d = 0; d < D; ++d) s += q[d] * load1(k + d);
    return s;
  }
}

// Dots of q with 8 key rows (D % 8 == 0): lane i = q . k[i].
template <typename T>
inline __m256 dot8(const float* q, const T* const* k, int D) {
  __m256 a[8];
  for (auto& v : a) v = _mm256_setzero_ps();
  for (int d = 0; d < D; d += 8) {
    const __m256 qv = _mm256_loadu_ps(q + d);
    for (int i = 0; i < 8; ++i) a[i] = _mm256_fmadd_ps(qv, load8(k[i] + d), a[i]);
  }
  const __m256 u0 = _mm256_hadd_ps(_mm256_hadd_ps(a[0], a[1]), _mm256_hadd_ps(a[2], a[3]));
  const __m256 u1 = _mm256_hadd_ps(_mm256_hadd_ps(a[4], a[5]), _mm256_hadd_ps(a[6], a[7]));
  return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
}

// acc[D] = acc * c + sum_j p[j] * v[j] (D % 8 == 0), 64 columns of acc in registers at a time.
template <typename T>
inline void scale_add_rows(float* acc, float c, const float* p, const T* const* v, int n, int D) {
  const __m256 vc = _mm256_set1_ps(c);
  int d0 = 0;
  for (; d0 + 64 <= D; d0 += 64) {
    __m256 a[8];
    for (int i = 0; i < 8; ++i) a[i] = _mm256_mul_ps(_mm256_loadu_ps(acc + d0 + 8 * i), vc);
    for (int j = 0; j < n; ++j) {
      const __m256 pj = _mm256_broadcast_ss(p + j);
      const T* vj = v[j] + d0;
      for (int i = 0; i < 8; ++i) a[i] = _mm256_fmadd_ps(pj, load8(vj + 8 * i), a[i]);
    }
    for (int i = 0; i < 8; ++i) _mm256_storeu_ps(acc + d0 + 8 * i, a[i]);
  }
  for (int d = d0; d < D; d += 8) {
    __m256 a = _mm256_mul_ps(_mm256_loadu_ps(acc + d), vc);
    for (int j = 0; j < n; ++j) a = _mm256_fmadd_ps(_mm256_broadcast_ss(p + j), load8(v[j] + d), a);
    _mm256_storeu_ps(acc + d, a);
  }
}

// Per tile of up to 32 keys: scores (8 keys per vector when head_dim % 8 == 0), the running max,
// e^(s - max) vectorised, then acc rescaled once and accumulated. Lanes past n are zeroed after
// the exponential, so they add nothing. int8 rows: a score is scale * k_scale * (q . raw row), and
// the V scale is folded into the weight once the running sum has it.
template <typename T>
void attend_typed(const PagedKv& kv, const int32_t* table, int kv_head, const float* q, int G,
                  float scale, int64_t start, int64_t end, float* rec) {
  const int D = kv.shape.head_dim;
  const bool vec = D % 8 == 0;
  float* m = rec;
  float* l = rec + G;
  float* acc = rec + 2 * G;
  clear_record(rec, G, D);
  alignas(32) float s[kTile];
  const T* krows[kTile];
  const T* vrows[kTile];
  const __m256 vscale = _mm256_set1_ps(scale);
  constexpr bool kScaled = std::is_same_v<T, int8_t>;
  alignas(32) float ks[kTile], vs[kTile];

  for (int64_t t0 = start; t0 < end; t0 += kTile) {
    const int n = static_cast<int>(std::min<int64_t>(kTile, end - t0));
    tile_rows(kv, table, kv_head, t0, n, krows, vrows);
    if constexpr (kScaled) tile_scales(kv, table, kv_head, t0, n, ks, vs);
    for (int g = 0; g < G; ++g) {
      const float* qg = q + static_cast<int64_t>(g) * D;
      int j = 0;
      if (vec) {
        for (; j + 8 <= n; j += 8) {
          __m256 d = dot8(qg, krows + j, D);
          if constexpr (kScaled) d = _mm256_mul_ps(d, _mm256_load_ps(ks + j));
          _mm256_store_ps(s + j, _mm256_mul_ps(d, vscale));
        }
      }
      for (; j < n; ++j) {
        float d = dot_scalar(qg, krows[j], D);
        if constexpr (kScaled) d *= ks[j];
        s[j] = d * scale;
      }

      const float corr = softmax_tile(s, n, m + g, l + g);
      if constexpr (kScaled) fold_scales(s, vs, n);
      float* a = acc + static_cast<int64_t>(g) * D;
      if (vec) {
        scale_add_rows(a, corr, s, vrows, n, D);
      } else {
        scale_add(a, corr, s[0], vrows[0], D);
        for (int j = 1; j < n; ++j) scale_add(a, 1.0f, s[j], vrows[j], D);
      }
    }
  }
}

}  // namespace

void attend_partition(const PagedKv& kv, const int32_t* table, int kv_head, const float* q, int G,
                      float scale, int64_t start, int64_t end, float* rec) {
  if (kv.shape.head_dim % 16 == 0 && attention_avx512_available()) {
    attend_partition_avx512(kv, table, kv_head, q, G, scale, start, end, rec);
    return;
  }
  switch (kv.shape.dtype) {
    case KvDtype::kF16:
      attend_typed<uint16_t>(kv, table, kv_head, q, G, scale, start, end, rec);
      break;
    case KvDtype::kInt8:
      attend_typed<int8_t>(kv, table, kv_head, q, G, scale, start, end, rec);
      break;
    default:  // kF32 (kFp8 is CUDA only)
      attend_typed<float>(kv, table, kv_head, q, G, scale, start, end, rec);
      break;
  }
}

float quantize_query_int8(const float* q, int D, int8_t* out, int32_t* sum) {
  float amax = 0.0f;
  for (int i = 0; i < D; ++i) amax = std::max(amax, std::fabs(q[i]));
  const float s = amax / 127.0f;
  const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;  // a multiply per element (vectorizes)
  int32_t total = 0;
  for (int i = 0; i < D; ++i) {
    const float v = std::clamp(std::nearbyint(q[i] * inv), -127.0f, 127.0f);
    out[i] = static_cast<int8_t>(v);
    total += out[i];
  }
  *sum = total;
  return s;
}

bool attention_int8_vnni_available() {
  __builtin_cpu_init();
  const char* off = std::getenv("LLMSERVE_CPU_ATTENTION_NO_VNNI");
  return attention_avx512_available() && __builtin_cpu_supports("avx512vnni") &&
         __builtin_cpu_supports("avx512bw") && !(off != nullptr && std::strcmp(off, "1") == 0);
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
