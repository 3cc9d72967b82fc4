// F32 / F16 / BF16 weights against f32 activations, and the dequantize-a-row fallback.
#include <vector>

#include "kernels/cpu/dot_kernels.h"
#include "kernels/cpu/simd_util.h"
#include "llmserve/kernels/dequantize.h"

namespace llmserve::kernels::cpu {
namespace {

inline const float* act_row(const void* x, size_t stride, int r) {
  return reinterpret_cast<const float*>(static_cast<const uint8_t*>(x) + r * stride);
}

struct LoadF32 {
  static __m256 load8(const void* w, int64_t i) {
    return _mm256_loadu_ps(static_cast<const float*>(w) + i);
  }
  static float load1(const void* w, int64_t i) { return static_cast<const float*>(w)[i]; }
};
struct LoadF16 {
  static __m256 load8(const void* w, int64_t i) {
    return _mm256_cvtph_ps(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(w) + i)));
  }
  static float load1(const void* w, int64_t i) {
    return half_to_float(static_cast<const uint16_t*>(w)[i]);
  }
};
struct LoadBF16 {
  static __m256 load8(const void* w, int64_t i) {
    const __m128i h =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(w) + i));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  static float load1(const void* w, int64_t i) {
    return bf16_to_fp32(static_cast<const uint16_t*>(w)[i]);
  }
};

template <typename L, int R>
void float_rows(const void* w, const void* x, size_t xs, int64_t K, float* out, int64_t os) {
  __m256 acc[R];
  const float* xr[R];
  for (int r = 0; r < R; ++r) {
    acc[r] = _mm256_setzero_ps();
    xr[r] = act_row(x, xs, r);
  }
  int64_t i = 0;
  for (; i + 8 <= K; i += 8) {
    const __m256 wv = L::load8(w, i);
    for (int r = 0; r < R; ++r) acc[r] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(xr[r] + i), acc[r]);
  }
  for (int r = 0; r < R; ++r) {
    float s = hsum(acc[r]);
    for (int64_t j = i; j < K; ++j) s += L::load1(w, j) * xr[r][j];
    out[r * os] = s;
  }
}

template <typename L>
void float_dispatch(const void* w, const void* x, size_t xs, int R, int64_t K, float* out,
                    int64_t os) {
  switch (R) {
    case 1:
      float_rows<L, 1>(w, x, xs, K, out, os);
      break;
    case 2:
      float_rows<L, 2>(w, x, xs, K, out, os);
      break;
    case 3:
      float_rows<L, 3>(w, x, xs, K, out, os);
      break;
    default:
      float_rows<L, 4>(w, x, xs, K, out, os);
      break;
  }
}

}  // namespace

void dot_rows_f32(const void* w, const void* x, size_t xs, int R, int64_t K, float* out,
                  int64_t os) {
  float_dispatch<LoadF32>(w, x, xs, R, K, out, os);
}
void dot_rows_f16(const void* w, const void* x, size_t xs, int R, int64_t K, float* out,
                  int64_t os) {
  float_dispatch<LoadF16>(w, x, xs, R, K, out, os);
}
void dot_rows_bf16(const void* w, const void* x, size_t xs, int R, int64_t K, float* out,
                   int64_t os) {
  float_dispatch<LoadBF16>(w, x, xs, R, K, out, os);
}

template <DType T>
void dot_rows_dequant(const void* w, const void* x, size_t xs, int R, int64_t K, float* out,
                      int64_t os) {
  thread_local std::vector<float> row;
  if (static_cast<int64_t>(row.size()) < K) row.resize(K);
  dequantize_row(T, w, row.data(), K);
  float_dispatch<LoadF32>(row.data(), x, xs, R, K, out, os);
}

template void dot_rows_dequant<DType::Q5_0>(const void*, const void*, size_t, int, int64_t, float*,
                                            int64_t);
template void dot_rows_dequant<DType::Q5_1>(const void*, const void*, size_t, int, int64_t, float*,
                                            int64_t);
template void dot_rows_dequant<DType::Q2_K>(const void*, const void*, size_t, int, int64_t, float*,
                                            int64_t);
template void dot_rows_dequant<DType::Q3_K>(const void*, const void*, size_t, int, int64_t, float*,
                                            int64_t);

DotKernel dot_kernel_for(DType t) {
  switch (t) {
    case DType::F32:
      return {ActFormat::kF32, dot_rows_f32};
    case DType::F16:
      return {ActFormat::kF32, dot_rows_f16};
    case DType::BF16:
      return {ActFormat::kF32, dot_rows_bf16};
    case DType::Q4_0:
      return {ActFormat::kQ8, dot_rows_q4_0};
    case DType::Q4_1:
      return {ActFormat::kQ8, dot_rows_q4_1};
    case DType::Q8_0:
      return {ActFormat::kQ8, dot_rows_q8_0};
    case DType::Q4_K:
      return {ActFormat::kQ8K, dot_rows_q4_k};
    case DType::Q6_K:
      return {ActFormat::kQ8K, dot_rows_q6_k};
    case DType::Q5_0:
      return {ActFormat::kF32, dot_rows_dequant<DType::Q5_0>};
    case DType::Q5_1:
      return {ActFormat::kF32, dot_rows_dequant<DType::Q5_1>};
    case DType::Q2_K:
      return {ActFormat::kF32, dot_rows_dequant<DType::Q2_K>};
    case DType::Q3_K:
      return {ActFormat::kF32, dot_rows_dequant<DType::Q3_K>};
    case DType::Q5_K:
      return {ActFormat::kQ8K, dot_rows_q5_k};
    default:
      return {ActFormat::kF32, nullptr};
  }
}

}  // namespace llmserve::kernels::cpu
