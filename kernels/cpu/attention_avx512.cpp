// attend_partition with AVX-512 for head_dim % 16 == 0: each K and V row is loaded (and for an f16
// or int8 cache converted) once for all the query heads that share it, scores of 8 keys come out of
// one transposing reduction, and values accumulate 16 lanes per FMA. int8 rows are used raw: the 8
// scores are multiplied by their keys' scales after the reduction, and each V scale is folded into
// its softmax weight after the running sum. Built with AVX-512 flags (set on this file alone in
// kernels/CMakeLists.txt); called only when the CPU has AVX-512F.
#include "kernels/cpu/avx512_intrinsics.h"

#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/cpu/attention_core.h"
#include "kernels/cpu/avx512_reduce.h"
#include "llmserve/kernels/cpu_isa.h"

namespace llmserve::kernels::cpu {
namespace {

// Keys per pass: a whole partition (kAttentionPartition), so the accumulators are rescaled and
// written back once per partition, and the softmax runs over 256 scores at a time.
constexpr int kTile = 256;
constexpr int kHeadsPerPass = 3;  // 8 keys x 3 heads of score accumulators: 24 of 32 registers

inline __m512 load16(const float* p) {
  return _mm512_loadu_ps(p);
}
inline __m512 load16(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
inline __m512 load16(const int8_t* p) {
  return _mm512_cvtepi32_ps(
      _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}

// s[g][j] = scale * q_g . k_j for g < Gc, j < n (8 keys at a time; rows past n repeat row n - 1);
// times ks[j] for int8 rows.
template <typename T, int Gc>
void scores(const float* q, int D, const T* const* krows, int n, float scale, const float* ks,
            float (*s)[kTile]) {
  const __m256 vscale = _mm256_set1_ps(scale);
  for (int j0 = 0; j0 < n; j0 += 8) {
    const T* k[8];
    for (int j = 0; j < 8; ++j) k[j] = krows[j0 + j < n ? j0 + j : n - 1];
    __m512 acc[Gc][8];
    for (int g = 0; g < Gc; ++g) {
      for (int j = 0; j < 8; ++j) acc[g][j] = _mm512_setzero_ps();
    }
    for (int d = 0; d < D; d += 16) {
      __m512 qv[Gc];
      for (int g = 0; g < Gc; ++g) qv[g] = _mm512_loadu_ps(q + static_cast<int64_t>(g) * D + d);
      for (int j = 0; j < 8; ++j) {
        const __m512 kv = load16(k[j] + d);
        for (int g = 0; g < Gc; ++g) acc[g][j] = _mm512_fmadd_ps(qv[g], kv, acc[g][j]);
      }
    }
    for (int g = 0; g < Gc; ++g) {
      __m256 d = reduce8(acc[g]);
      if constexpr (std::is_same_v<T, int8_t>) d = _mm256_mul_ps(d, _mm256_load_ps(ks + j0));
      _mm256_store_ps(s[g] + j0, _mm256_mul_ps(d, vscale));
    }
  }
}

// Columns [d0, d0 + 16 NV) of acc_g = acc_g * corr[g] + sum_j p[g][j] * v_j for g < Gc.
template <typename T, int Gc, int NV>
void accumulate_cols(float* acc, int D, int d0, const float* corr, const T* const* vrows, int n,
                     const float (*p)[kTile]) {
  __m512 a[Gc][NV];
  for (int g = 0; g < Gc; ++g) {
    const __m512 c = _mm512_set1_ps(corr[g]);
    for (int v = 0; v < NV; ++v)
      a[g][v] = _mm512_mul_ps(_mm512_loadu_ps(acc + static_cast<int64_t>(g) * D + d0 + 16 * v), c);
  }
  for (int j = 0; j < n; ++j) {
    __m512 x[NV];
    for (int v = 0; v < NV; ++v) x[v] = load16(vrows[j] + d0 + 16 * v);
    for (int g = 0; g < Gc; ++g) {
      const __m512 pj = _mm512_set1_ps(p[g][j]);
      for (int v = 0; v < NV; ++v) a[g][v] = _mm512_fmadd_ps(pj, x[v], a[g][v]);
    }
  }
  for (int g = 0; g < Gc; ++g) {
    for (int v = 0; v < NV; ++v)
      _mm512_storeu_ps(acc + static_cast<int64_t>(g) * D + d0 + 16 * v, a[g][v]);
  }
}

// acc_g[0..D) = acc_g * corr[g] + sum_j p[g][j] * v_j for g < Gc, 64 columns at a time.
template <typename T, int Gc>
void accumulate(float* acc, int D, const float* corr, const T* const* vrows, int n,
                const float (*p)[kTile]) {
  int d0 = 0;
  for (; d0 + 64 <= D; d0 += 64) accumulate_cols<T, Gc, 4>(acc, D, d0, corr, vrows, n, p);
  switch ((D - d0) / 16) {
    case 1:
      accumulate_cols<T, Gc, 1>(acc, D, d0, corr, vrows, n, p);
      break;
    case 2:
      accumulate_cols<T, Gc, 2>(acc, D, d0, corr, vrows, n, p);
      break;
    case 3:
      accumulate_cols<T, Gc, 3>(acc, D, d0, corr, vrows, n, p);
      break;
    default:
      break;
  }
}

// The AVX-512 twin of Avx2Floats (simd_util.h).
struct Avx512Floats {
  using F = __m512;
  static constexpr int kLanes = 16;
  static F load(const float* p) { return _mm512_load_ps(p); }
  static void store(float* p, F v) { _mm512_store_ps(p, v); }
  static F set1(float v) { return _mm512_set1_ps(v); }
  static F add(F a, F b) { return _mm512_add_ps(a, b); }
  static F sub(F a, F b) { return _mm512_sub_ps(a, b); }
  static F min(F a, F b) { return _mm512_min_ps(a, b); }
  static F max(F a, F b) { return _mm512_max_ps(a, b); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F round_nearest(F a) {
    return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  static F fmadd(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static F fnmadd(F a, F b, F c) { return _mm512_fnmadd_ps(a, b, c); }
  static F pow2(F n) {
    return _mm512_castsi512_ps(
        _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23));
  }
  static F keep_first(F a, int count) {
    return _mm512_maskz_mov_ps(static_cast<__mmask16>((1u << count) - 1), a);
  }
  static float reduce_max(F v) { return _mm512_reduce_max_ps(v); }
  static float reduce_add(F v) { return _mm512_reduce_add_ps(v); }
};

// The pass's query heads quantized for int8_scores_vnni (q: Gc rows of head_dim).
struct Int8Query {
  const int8_t* q;
  const float* scale;
  const int32_t* sum;
};

// ks / vs: the int8 K and V scales of the n rows (unused otherwise); iq: set for int8 rows on
// VNNI.
template <typename T, int Gc>
void tile_pass(const float* q, int D, const T* const* krows, const T* const* vrows, int n,
               float scale, const float* ks, const float* vs, const Int8Query* iq, float* m,
               float* l, float* acc) {
  alignas(64) float s[Gc][kTile];
  if constexpr (std::is_same_v<T, int8_t>) {
    if (iq != nullptr) {
      int8_scores_vnni(iq->q, iq->scale, iq->sum, Gc, D, krows, n, scale, ks, &s[0][0], kTile);
    } else {
      scores<T, Gc>(q, D, krows, n, scale, ks, s);
    }
  } else {
    scores<T, Gc>(q, D, krows, n, scale, ks, s);
  }
  float corr[Gc];
  for (int g = 0; g < Gc; ++g) {
    corr[g] = softmax_lanes<Avx512Floats>(s[g], n, m + g, l + g);
    if constexpr (std::is_same_v<T, int8_t>) fold_scales(s[g], vs, n);
  }
  accumulate<T, Gc>(acc, D, corr, vrows, n, s);
}

template <typename T>
void attend(const PagedKv& kv, const int32_t* table, int kv_head, const float* q, int G,
            float scale, int64_t start, int64_t end, float* rec) {
  const int D = kv.shape.head_dim;
  float* m = rec;
  float* l = rec + G;
  float* acc = rec + 2 * G;
  clear_record(rec, G, D);
  const T* krows[kTile];
  const T* vrows[kTile];
  alignas(32) float ks[kTile], vs[kTile];
  // int8 on VNNI: every query head quantized once per partition.
  thread_local std::vector<int8_t> q8;
  thread_local std::vector<float> q8_scale;
  thread_local std::vector<int32_t> q8_sum;
  static const bool vnni = attention_int8_vnni_available();
  const bool use_vnni = std::is_same_v<T, int8_t> && vnni;
  if (use_vnni) {
    q8.resize(static_cast<size_t>(G) * D);
    q8_scale.resize(static_cast<size_t>(G));
    q8_sum.resize(static_cast<size_t>(G));
    for (int g = 0; g < G; ++g) {
      q8_scale[g] = quantize_query_int8(q + static_cast<int64_t>(g) * D, D,
                                        q8.data() + static_cast<int64_t>(g) * D, &q8_sum[g]);
    }
  }
  for (int64_t t0 = start; t0 < end; t0 += kTile) {
    const int n = static_cast<int>(std::min<int64_t>(kTile, end - t0));
    tile_rows(kv, table, kv_head, t0, n, krows, vrows);
    if constexpr (std::is_same_v<T, int8_t>) tile_scales(kv, table, kv_head, t0, n, ks, vs);
    for (int g0 = 0; g0 < G; g0 += kHeadsPerPass) {
      const float* qg = q + static_cast<int64_t>(g0) * D;
      float* ag = acc + static_cast<int64_t>(g0) * D;
      Int8Query iq{};
      if (use_vnni) {
        iq = {q8.data() + static_cast<int64_t>(g0) * D, q8_scale.data() + g0, q8_sum.data() + g0};
      }
      const Int8Query* iqp = use_vnni ? &iq : nullptr;
      switch (std::min(kHeadsPerPass, G - g0)) {
        case 1:
          tile_pass<T, 1>(qg, D, krows, vrows, n, scale, ks, vs, iqp, m + g0, l + g0, ag);
          break;
        case 2:
          tile_pass<T, 2>(qg, D, krows, vrows, n, scale, ks, vs, iqp, m + g0, l + g0, ag);
          break;
        default:
          tile_pass<T, 3>(qg, D, krows, vrows, n, scale, ks, vs, iqp, m + g0, l + g0, ag);
          break;
      }
    }
  }
}

}  // namespace

void attend_partition_avx512(const PagedKv& kv, const int32_t* table, int kv_head, const float* q,
                             int G, float scale, int64_t start, int64_t end, float* rec) {
  switch (kv.shape.dtype) {
    case KvDtype::kF16:
      attend<uint16_t>(kv, table, kv_head, q, G, scale, start, end, rec);
      break;
    case KvDtype::kInt8:
      attend<int8_t>(kv, table, kv_head, q, G, scale, start, end, rec);
      break;
    default:  // kF32 (kFp8 is CUDA only)
      attend<float>(kv, table, kv_head, q, G, scale, start, end, rec);
      break;
  }
}

bool attention_avx512_available() {
  static const bool forced_off = [] {
    const char* off = std::getenv("LLMSERVE_CPU_ATTENTION_AVX2");
    return off != nullptr && std::strcmp(off, "1") == 0;
  }();
  return active_cpu_isa() == CpuIsa::kAvx512 && !forced_off;
}

}  // namespace llmserve::kernels::cpu
