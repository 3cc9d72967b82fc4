// Internal: the F16 / BF16 panel micro-kernels (packed_float.h), written once against a vector
// policy `I` and compiled per instruction set by packed_float_avx2.cpp / packed_float_avx512.cpp
// (hence the unnamed namespace: each includer gets its own copy, built with its target flags).
// I provides: F (vector of kLanes floats), zero(), bcast(const float*), fma(a, b, c),
// load_f16(const uint16_t*) -> F, load_bf16_pairs(const uint16_t*, F& even, F& odd),
// store(float*, F, int valid), and units_for(R): weight units (2 vectors each) per call; for the
// FP8 panels (packed_fp8_kernels.h) also load_e4m3, loadu, mul and fp8_units_for(R).
// Every variant computes each output as the same f32 FMA chain over k, so all agree bit for bit.
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

// One call: R activation rows x U units of 2 vectors each (unit u: weight rows [u * 2L, u * 2L +
// 2L) of the call). unit[u] points at the unit's first column; `step` bytes per column (F16) or
// column pair (BF16); esz: bytes per row within a step (2 for F16, 4 for a BF16 pair).
template <typename I, bool kBf16, int R, int U>
__attribute__((always_inline)) inline void float_tile(const uint8_t* const* unit, int64_t K,
                                                      const float* x, float* y, int64_t ldy,
                                                      int64_t valid, bool prefetch) {
  using F = typename I::F;
  constexpr int L = I::kLanes, NV = 2 * U;
  constexpr int64_t step = kBf16 ? 4 * kFloatPanelRows : 2 * kFloatPanelRows;
  F acc[R][NV];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) acc[r][v] = I::zero();
  }
  const uint8_t* p[U];
#pragma GCC unroll 16
  for (int u = 0; u < U; ++u) p[u] = unit[u];
  if constexpr (!kBf16) {
    for (int64_t k = 0; k < K; ++k, x += R) {
      F w[NV];
#pragma GCC unroll 16
      for (int u = 0; u < U; ++u) {
        const auto* h = reinterpret_cast<const uint16_t*>(p[u]);
        w[2 * u] = I::load_f16(h);
        w[2 * u + 1] = I::load_f16(h + L);
        if (prefetch)
          _mm_prefetch(reinterpret_cast<const char*>(p[u]) + kFloatPrefetchBytes, _MM_HINT_T0);
        p[u] += step;
      }
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
        const F b = I::bcast(x + r);
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
      if (n0 < valid) I::store(y + r * ldy + n0, acc[r][v], static_cast<int>(valid - n0));
    }
  }
}

// Rows [0, R) against the call's weight rows [0, valid) (whole units of 2 * kLanes rows, in
// calls of I::units_for(R) units, then single units).
template <typename I, bool kBf16, int R>
void float_rows(const uint8_t* w, int64_t panel_bytes, int64_t K, const float* x, float* y,
                int64_t ldy, int64_t valid, bool prefetch) {
  constexpr int64_t unit_rows = 2 * I::kLanes, esz = kBf16 ? 4 : 2;
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
    float_tile<I, kBf16, R, U>(p, K, x, y + u * unit_rows, ldy, valid - u * unit_rows, prefetch);
  }
  for (; u < units; ++u) {
    const uint8_t* p[1] = {unit_ptr(u)};
    float_tile<I, kBf16, R, 1>(p, K, x, y + u * unit_rows, ldy, valid - u * unit_rows, prefetch);
  }
}

template <typename I, bool kBf16, int... Rs>
void float_rows_for(int R, const uint8_t* w, int64_t panel_bytes, int64_t K, const float* x,
                    float* y, int64_t ldy, int64_t valid, bool prefetch,
                    std::integer_sequence<int, Rs...>) {
  ((R == Rs + 1 ? float_rows<I, kBf16, Rs + 1>(w, panel_bytes, K, x, y, ldy, valid, prefetch)
                : void()),
   ...);
}

// A FloatTileFn for I (R <= I::kMaxRows).
template <typename I, bool kBf16>
void float_tile_fn(const uint8_t* w, int64_t panel_bytes, int64_t panels, int64_t K,
                   int64_t /*group*/, const float* x, int R, float* y, int64_t ldy, int64_t valid,
                   bool prefetch) {
  valid = std::min<int64_t>(valid, panels * kFloatPanelRows);
  float_rows_for<I, kBf16>(R, w, panel_bytes, K, x, y, ldy, valid, prefetch,
                           std::make_integer_sequence<int, I::kMaxRows>());
}

template <typename I>
FloatKernels make_float_kernels() {
  FloatKernels k;
  k.f16 = float_tile_fn<I, false>;
  k.bf16 = float_tile_fn<I, true>;
  k.fp8 = fp8_tile_fn<I>;
  k.max_rows = I::kMaxRows;
  return k;
}

}  // namespace
}  // namespace llmserve::kernels::cpu
