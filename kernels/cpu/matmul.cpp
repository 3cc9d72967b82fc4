#include "llmserve/kernels/matmul.h"

#include <algorithm>
#include <vector>

#include "kernels/cpu/dot_kernels.h"
#include "kernels/cpu/quantize_activations.h"

namespace llmserve::kernels {
namespace {

using cpu::ActFormat;

constexpr int64_t kTileN = 16;  // weight rows per task
constexpr int64_t kTileM = 64;  // activation rows per task when M is large

size_t act_row_bytes(ActFormat f, int64_t K) {
  switch (f) {
    case ActFormat::kQ8:
      return static_cast<size_t>(K / kQK) * sizeof(cpu::ActQ8);
    case ActFormat::kQ8K:
      return static_cast<size_t>(K / kQKK) * sizeof(BlockQ8_K);
    case ActFormat::kF32:
      break;
  }
  return static_cast<size_t>(K) * sizeof(float);
}

}  // namespace

bool matmul_supports(DType w_type) {
  return cpu::dot_kernel_for(w_type).fn != nullptr;
}

void matmul(ThreadPool& pool, const float* x, int64_t M, int64_t K, DType w_type, const void* w,
            int64_t N, float* y, ActPrecision precision) {
  if (M <= 0 || N <= 0) return;
  const cpu::DotKernel kern = cpu::dot_kernel_for(w_type);
  const size_t xs = act_row_bytes(kern.act, K);
  // As in matmul_packed: with kQ8x2, x row m becomes quantized rows 2m (main) and 2m + 1
  // (residual), whose products are summed into y row m.
  const int passes = kern.act != ActFormat::kF32 && precision == ActPrecision::kQ8x2 ? 2 : 1;
  const int64_t rows = M * passes;
  const void* xq = x;
  thread_local std::vector<uint8_t> scratch;
  thread_local std::vector<float> y2;
  if (kern.act != ActFormat::kF32) {
    const size_t need = xs * static_cast<size_t>(rows);
    if (scratch.size() < need) scratch.resize(need);
    uint8_t* base = scratch.data();
    auto quantize = [&](int64_t b, int64_t e) {
      for (int64_t m = b; m < e; ++m) {
        const float* xr = x + m * K;
        uint8_t* q = base + m * passes * xs;
        if (kern.act == ActFormat::kQ8 && passes == 2) {
          cpu::quantize_row_act_q8x2(xr, K, reinterpret_cast<cpu::ActQ8*>(q),
                                     reinterpret_cast<cpu::ActQ8*>(q + xs));
        } else if (kern.act == ActFormat::kQ8) {
          cpu::quantize_row_act_q8(xr, K, reinterpret_cast<cpu::ActQ8*>(q));
        } else if (passes == 2) {
          cpu::quantize_row_act_q8kx2(xr, K, reinterpret_cast<BlockQ8_K*>(q),
                                      reinterpret_cast<BlockQ8_K*>(q + xs));
        } else {
          cpu::quantize_row_act_q8k(xr, K, reinterpret_cast<BlockQ8_K*>(q));
        }
      }
    };
    if (M >= 8) {
      pool.parallel_for(M, quantize);
    } else {
      quantize(0, M);
    }
    xq = base;
  }
  if (passes == 2 && y2.size() < static_cast<size_t>(rows * N))
    y2.resize(static_cast<size_t>(rows * N));
  float* out = passes == 2 ? y2.data() : y;

  const size_t wr = row_bytes(w_type, K);
  const int64_t tile_m = rows <= 2 * kTileM ? rows : kTileM;  // even: pairs stay in one tile
  const int64_t m_tiles = (rows + tile_m - 1) / tile_m;
  const int64_t n_tiles = (N + kTileN - 1) / kTileN;
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* xb = static_cast<const uint8_t*>(xq);
  pool.parallel_for(n_tiles * m_tiles, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t n0 = (t / m_tiles) * kTileN, n1 = std::min(N, n0 + kTileN);
      const int64_t m0 = (t % m_tiles) * tile_m, m1 = std::min(rows, m0 + tile_m);
      // The weight tile (kTileN rows) and one group of activation rows stay in L1.
      for (int64_t m = m0; m < m1; m += cpu::kMaxRows) {
        const int R = static_cast<int>(std::min<int64_t>(cpu::kMaxRows, m1 - m));
        for (int64_t n = n0; n < n1; ++n) {
          kern.fn(wb + n * wr, xb + m * xs, xs, R, K, out + m * N + n, N);
        }
      }
      if (passes == 2) {
        cpu::sum_row_pairs(out, N, m0, m1, n0, n1, y);
      }
    }
  });
}

}  // namespace llmserve::kernels
