// Internal: the FP8 e4m3 panel micro-kernels (packed_float.h), written once against the vector
// policy `I` of packed_float_kernels.h and compiled per instruction set with it. I provides, beyond
// the F16 / BF16 needs: load_e4m3(const uint8_t*) -> F (kLanes bytes widened to f32, each the
// e4m3 value times 2^-8), loadu(const float*) -> F, mul(a, b), fp8_units_for(R).
// Each output is y = fma(w[k], x[k], y) for k = 0 ... K - 1 from y = 0 with w[k] the f32 product
// (e4m3 * 2^-8) * (scale * 2^8): the weight dequantize_fp8_row gives, so every variant agrees bit
// for bit with the f32 matmul of the dequantized matrix in k order.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "kernels/cpu/packed_float.h"

namespace llmserve::kernels::cpu {
namespace {

inline constexpr int64_t kFp8PrefetchBytes = 512;  // per weight stream, ahead of the loads

// One call: R activation rows x U units of 2 vectors each (unit u: weight rows [u * 2L, u * 2L +
// 2L) of the call). unit[u] points at the unit's first byte of column 0 (32 bytes per column),
// scale[u] at its first row's scale of group 0 (32 floats per group).
template <typename I, int R, int U>
__attribute__((always_inline)) inline void fp8_tile(const uint8_t* const* unit,
                                                    const float* const* scale, int64_t K,
                                                    int64_t group, const float* x, float* y,
                                                    int64_t ldy, int64_t valid, bool prefetch) {
  using F = typename I::F;
  constexpr int L = I::kLanes, NV = 2 * U;
  F acc[R][NV];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) acc[r][v] = I::zero();
  }
  for (int64_t k0 = 0, g = 0; k0 < K; k0 += group, ++g) {
    const int64_t k1 = std::min(K, k0 + group);
    F s[NV];
#pragma GCC unroll 16
    for (int u = 0; u < U; ++u) {
      const float* sp = scale[u] + g * kFloatPanelRows;
      s[2 * u] = I::loadu(sp);
      s[2 * u + 1] = I::loadu(sp + L);
    }
    for (int64_t k = k0; k < k1; ++k, x += R) {
      F w[NV];
#pragma GCC unroll 16
      for (int u = 0; u < U; ++u) {
        const uint8_t* q = unit[u] + k * kFloatPanelRows;
        w[2 * u] = I::mul(I::load_e4m3(q), s[2 * u]);
        w[2 * u + 1] = I::mul(I::load_e4m3(q + L), s[2 * u + 1]);
        if (prefetch && (k & 1) == 0) {
          _mm_prefetch(reinterpret_cast<const char*>(q) + kFp8PrefetchBytes, _MM_HINT_T0);
        }
      }
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
        const F b = I::bcast(x + r);
#pragma GCC unroll 16
        for (int v = 0; v < NV; ++v) acc[r][v] = I::fma(w[v], b, acc[r][v]);
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

// Rows [0, R) against the call's weight rows [0, valid), in calls of I::fp8_units_for(R) units.
template <typename I, int R>
void fp8_rows(const uint8_t* w, int64_t panel_bytes, int64_t K, int64_t group, const float* x,
              float* y, int64_t ldy, int64_t valid, bool prefetch) {
  constexpr int64_t unit_rows = 2 * I::kLanes;
  constexpr int U = I::fp8_units_for(R);
  static_assert(kFloatPanelRows % unit_rows == 0);
  const int64_t units = (valid + unit_rows - 1) / unit_rows;
  const int64_t weight_bytes = (K * kFloatPanelRows + 63) / 64 * 64;
  auto unit_ptr = [&](int64_t u) {
    const int64_t row = u * unit_rows;
    return w + row / kFloatPanelRows * panel_bytes + row % kFloatPanelRows;
  };
  auto scale_ptr = [&](int64_t u) {
    const int64_t row = u * unit_rows;
    return reinterpret_cast<const float*>(w + row / kFloatPanelRows * panel_bytes + weight_bytes) +
           row % kFloatPanelRows;
  };
  int64_t u = 0;
  for (; u + U <= units; u += U) {
    const uint8_t* p[U];
    const float* s[U];
    for (int i = 0; i < U; ++i) {
      p[i] = unit_ptr(u + i);
      s[i] = scale_ptr(u + i);
    }
    fp8_tile<I, R, U>(p, s, K, group, x, y + u * unit_rows, ldy, valid - u * unit_rows, prefetch);
  }
  for (; u < units; ++u) {
    const uint8_t* p[1] = {unit_ptr(u)};
    const float* s[1] = {scale_ptr(u)};
    fp8_tile<I, R, 1>(p, s, K, group, x, y + u * unit_rows, ldy, valid - u * unit_rows, prefetch);
  }
}

template <typename I, int... Rs>
void fp8_rows_for(int R, const uint8_t* w, int64_t panel_bytes, int64_t K, int64_t group,
                  const float* x, float* y, int64_t ldy, int64_t valid, bool prefetch,
                  std::integer_sequence<int, Rs...>) {
  ((R == Rs + 1 ? fp8_rows<I, Rs + 1>(w, panel_bytes, K, group, x, y, ldy, valid, prefetch)
                : void()),
   ...);
}

// A FloatTileFn for I's FP8 panels (R <= I::kMaxRows).
template <typename I>
void fp8_tile_fn(const uint8_t* w, int64_t panel_bytes, int64_t panels, int64_t K, int64_t group,
                 const float* x, int R, float* y, int64_t ldy, int64_t valid, bool prefetch) {
  valid = std::min<int64_t>(valid, panels * kFloatPanelRows);
  fp8_rows_for<I>(R, w, panel_bytes, K, group, x, y, ldy, valid, prefetch,
                  std::make_integer_sequence<int, I::kMaxRows>());
}

}  // namespace
}  // namespace llmserve::kernels::cpu
