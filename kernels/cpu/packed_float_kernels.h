// Internal: the F16 / BF16 / F32 panel micro-kernels (packed_float.h), written once against a
// vector policy `I` and compiled per instruction set by packed_float_avx2.cpp /
// packed_float_avx512.cpp (hence the unnamed namespace: each includer gets its own copy, built with
// its target flags). I provides: F (vector of kLanes floats), zero(), bcast(const float*), fma(a,
// b, c), load_f16(const uint16_t*) -> F, loadu(const float*) -> F, add(a, b), load_partial(const
// float*, int valid) -> F (lanes past valid zero), load_bf16_pairs(const uint16_t*, F& even, F&
// odd), store(float*, F, int valid), and units_for(R): weight units (2 vectors each) per call; for
// the FP8 panels (packed_fp8_kernels.h) also load_e4m3, loadu, mul and fp8_units_for(R). Every
// variant computes each output as the same f32 FMA chain over k, so all agree bit for bit (with
// accumulate, one chain per call's chunk of k, added to y).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "kernels/cpu/packed_float.h"
#include "kernels/cpu/packed_fp8_kernels.h"

namespace llmserve::kernels::cpu {
namespace {

inline constexpr int64_t kFloatPrefetchBytes = 1024;  // per weight stream, ahead of the loads

// The panels' element: F16 (2 bytes per row and column), BF16 pairs (4 bytes per row and column
// pair), F32 (4 bytes per row and column).
enum class PanelElem { kF16, kBf16, kF32 };

template <PanelElem E>
inline constexpr int64_t kPanelStep = (E == PanelElem::kF16 ? 2 : 4) * kFloatPanelRows;
template <PanelElem E>
inline constexpr int64_t kPanelElemBytes = E == PanelElem::kF16 ? 2 : 4;

// One call: R activation rows x U units of 2 vectors each (unit u: weight rows [u * 2L, u * 2L +
// 2L) of the call). unit[u] points at the unit's first column; kPanelStep bytes per column (F16,
// F32) or column pair (BF16). x: interleaved (x[k * R + r]), or with kRowMajorX (F16 / F32 only)
// row r at x + r * ldx; accumulate (kRowMajorX only): y += the products instead of y =.
template <typename I, PanelElem E, int R, int U, bool kRowMajorX = false>
__attribute__((always_inline)) inline void float_tile(const uint8_t* const* unit, int64_t K,
                                                      const float* x, float* y, int64_t ldy,
                                                      int64_t valid, bool prefetch, int64_t ldx = 0,
                                                      bool accumulate = false) {
  static_assert(!kRowMajorX || E != PanelElem::kBf16);
  using F = typename I::F;
  constexpr int L = I::kLanes, NV = 2 * U;
  constexpr int64_t step = kPanelStep<E>;
  F acc[R][NV];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) acc[r][v] = I::zero();
  }
  const uint8_t* p[U];
#pragma GCC unroll 16
  for (int u = 0; u < U; ++u) p[u] = unit[u];
  if constexpr (E != PanelElem::kBf16) {
    for (int64_t k = 0; k < K; ++k, x += kRowMajorX ? 1 : R) {
      F w[NV];
#pragma GCC unroll 16
      for (int u = 0; u < U; ++u) {
        if constexpr (E == PanelElem::kF32) {
          const auto* f = reinterpret_cast<const float*>(p[u]);
          w[2 * u] = I::loadu(f);
          w[2 * u + 1] = I::loadu(f + L);
        } else {
          const auto* h = reinterpret_cast<const uint16_t*>(p[u]);
          w[2 * u] = I::load_f16(h);
          w[2 * u + 1] = I::load_f16(h + L);
        }
        if (prefetch)
          _mm_prefetch(reinterpret_cast<const char*>(p[u]) + kFloatPrefetchBytes, _MM_HINT_T0);
        p[u] += step;
      }
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
        const F b = I::bcast(kRowMajorX ? x + r * ldx : x + r);
#pragma GCC unroll 16
        for (int v = 0; v < NV; ++v) acc[r][v] = I::fma(w[v], b, acc[r][v]);
      }
    }
  } else {
    const int64_t pairs = K / 2;
    for (int64_t kk = 0; kk < pairs; ++kk, x += 2 * R) {
      F even[NV], odd[NV];
#pragma GCC unroll 16
      for (int u = 0; u < U; ++u) {
        const auto* h = reinterpret_cast<const uint16_t*>(p[u]);
        I::load_bf16_pairs(h, even[2 * u], odd[2 * u]);
        I::load_bf16_pairs(h + 2 * L, even[2 * u + 1], odd[2 * u + 1]);
        if (prefetch) {
          const char* c = reinterpret_cast<const char*>(p[u]) + kFloatPrefetchBytes;
          _mm_prefetch(c, _MM_HINT_T0);
          _mm_prefetch(c + 64, _MM_HINT_T0);
        }
        p[u] += step;
      }
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
        const F b0 = I::bcast(x + r), b1 = I::bcast(x + R + r);
#pragma GCC unroll 16
        for (int v = 0; v < NV; ++v) {
          acc[r][v] = I::fma(even[v], b0, acc[r][v]);
          acc[r][v] = I::fma(odd[v], b1, acc[r][v]);
        }
      }
    }
    if (K % 2 != 0) {  // the last column: its pair's odd half is padding
      F even[NV], odd;
#pragma GCC unroll 16
      for (int u = 0; u < U; ++u) {
        const auto* h = reinterpret_cast<const uint16_t*>(p[u]);
        I::load_bf16_pairs(h, even[2 * u], odd);
        I::load_bf16_pairs(h + 2 * L, even[2 * u + 1], odd);
      }
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
        const F b0 = I::bcast(x + r);
#pragma GCC unroll 16
        for (int v = 0; v < NV; ++v) acc[r][v] = I::fma(even[v], b0, acc[r][v]);
      }
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) {
      const int64_t n0 = static_cast<int64_t>(v) * L;
      if (n0 >= valid) continue;
      float* out = y + r * ldy + n0;
      if constexpr (kRowMajorX) {
        if (accumulate) {
          I::store(out, I::add(acc[r][v], I::load_partial(out, static_cast<int>(valid - n0))),
                   static_cast<int>(valid - n0));
          continue;
        }
      }
      I::store(out, acc[r][v], static_cast<int>(valid - n0));
    }
  }
}

// Rows [0, R) against the call's weight rows [0, valid) (whole units of 2 * kLanes rows, in
// calls of I::units_for(R) units, then single units).
template <typename I, PanelElem E, int R, bool kRowMajorX = false>
void float_rows(const uint8_t* w, int64_t panel_bytes, int64_t K, const float* x, float* y,
                int64_t ldy, int64_t valid, bool prefetch, int64_t ldx = 0,
                bool accumulate = false) {
  constexpr int64_t unit_rows = 2 * I::kLanes, esz = kPanelElemBytes<E>;
  constexpr int U = I::units_for(R);
  static_assert(kFloatPanelRows % unit_rows == 0);
  const int64_t units = (valid + unit_rows - 1) / unit_rows;
  auto unit_ptr = [&](int64_t u) {
    const int64_t row = u * unit_rows;
    return w + row / kFloatPanelRows * panel_bytes + row % kFloatPanelRows * esz;
  };
  int64_t u = 0;
  for (; u + U <= units; u += U) {
    const uint8_t* p[U];
    for (int i = 0; i < U; ++i) p[i] = unit_ptr(u + i);
    float_tile<I, E, R, U, kRowMajorX>(p, K, x, y + u * unit_rows, ldy, valid - u * unit_rows,
                                       prefetch, ldx, accumulate);
  }
  for (; u < units; ++u) {
    const uint8_t* p[1] = {unit_ptr(u)};
    float_tile<I, E, R, 1, kRowMajorX>(p, K, x, y + u * unit_rows, ldy, valid - u * unit_rows,
                                       prefetch, ldx, accumulate);
  }
}

template <typename I, PanelElem E, int... Rs>
void float_rows_for(int R, const uint8_t* w, int64_t panel_bytes, int64_t K, const float* x,
                    float* y, int64_t ldy, int64_t valid, bool prefetch,
                    std::integer_sequence<int, Rs...>) {
  ((R == Rs + 1 ? float_rows<I, E, Rs + 1>(w, panel_bytes, K, x, y, ldy, valid, prefetch) : void()),
   ...);
}

// A FloatTileFn for I (R <= I::kMaxRows).
template <typename I, PanelElem E>
void float_tile_fn(const uint8_t* w, int64_t panel_bytes, int64_t panels, int64_t K,
                   int64_t /*group*/, const float* x, int R, float* y, int64_t ldy, int64_t valid,
                   bool prefetch) {
  valid = std::min<int64_t>(valid, panels * kFloatPanelRows);
  float_rows_for<I, E>(R, w, panel_bytes, K, x, y, ldy, valid, prefetch,
                       std::make_integer_sequence<int, I::kMaxRows>());
}

template <typename I, int... Rs>
void f32_row_major_for(int R, const uint8_t* w, int64_t panel_bytes, int64_t K, const float* x,
                       int64_t ldx, float* y, int64_t ldy, int64_t valid, bool accumulate,
                       std::integer_sequence<int, Rs...>) {
  ((R == Rs + 1 ? float_rows<I, PanelElem::kF32, Rs + 1, true>(w, panel_bytes, K, x, y, ldy, valid,
                                                               false, ldx, accumulate)
                : void()),
   ...);
}

// An F32RowMajorFn for I (R <= I::kMaxRows).
template <typename I>
void f32_row_major_fn(const uint8_t* w, int64_t panel_bytes, int64_t panels, int64_t K,
                      const float* x, int64_t ldx, int R, float* y, int64_t ldy, int64_t valid,
                      bool accumulate) {
  valid = std::min<int64_t>(valid, panels * kFloatPanelRows);
  f32_row_major_for<I>(R, w, panel_bytes, K, x, ldx, y, ldy, valid, accumulate,
                       std::make_integer_sequence<int, I::kMaxRows>());
}

template <typename I>
FloatKernels make_float_kernels() {
  FloatKernels k;
  k.f16 = float_tile_fn<I, PanelElem::kF16>;
  k.bf16 = float_tile_fn<I, PanelElem::kBf16>;
  k.f32 = float_tile_fn<I, PanelElem::kF32>;
  k.f32_row_major = f32_row_major_fn<I>;
  k.fp8 = fp8_tile_fn<I>;
  k.max_rows = I::kMaxRows;
  return k;
}

}  // namespace
}  // namespace llmserve::kernels::cpu
