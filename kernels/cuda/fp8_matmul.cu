// FP8 e4m3 weight matmuls (fp8_matmul.h): the decode GEMV and the dequantized bf16 copy.
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "kernels/cuda/cuda_common.cuh"
#include "llmserve/kernels/cuda/fp8_matmul.h"

namespace llmserve::kernels::cuda {
namespace {

constexpr int kWarpsPerBlock = 4;

// Two e4m3 values (the low and high byte of `pair`) as floats.
__device__ __forceinline__ float2 e4m3x2_to_float2(unsigned short pair) {
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(pair, __NV_E4M3);
  return __half22float2(__half2(h));
}

// One warp per output row n; lane l reads the 16-byte chunks l, l + 32, ... of the row.
template <int M>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    fp8_gemv_kernel(const uint16_t* __restrict__ x, int64_t ldx, Fp8Matrix m,
                    const float* __restrict__ bias, float* __restrict__ y, int64_t ldy) {
  const int lane = threadIdx.x & 31;
  const int64_t n = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  if (n >= m.N) return;
  const auto* row = reinterpret_cast<const uint4*>(m.w + n * m.K);
  const int64_t chunks = m.K / 16;
  // This row's scales; chunk c is in scale column c / per (a shift for 128-column blocks), all in
  // column 0 when one scale covers the row.
  const int64_t gc = (m.K + m.block_cols - 1) / m.block_cols;
  const float* srow = m.scales + (n / m.block_rows) * gc;
  const auto per = static_cast<uint32_t>(m.block_cols >= m.K ? chunks : m.block_cols / 16);
  const int shift = (per & (per - 1)) == 0 ? __ffs(static_cast<int>(per)) - 1 : -1;
  float acc[M];
#pragma unroll
  for (int r = 0; r < M; ++r) acc[r] = 0.0f;
#pragma unroll 4
  for (int64_t c = lane; c < chunks; c += 32) {
    const uint4 q = __ldg(row + c);
    const auto cc = static_cast<uint32_t>(c);
    const float s = srow[shift >= 0 ? cc >> shift : cc / per];
    float w[16];
    const uint32_t words[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 lo = e4m3x2_to_float2(static_cast<unsigned short>(words[i] & 0xffffu));
      const float2 hi = e4m3x2_to_float2(static_cast<unsigned short>(words[i] >> 16));
      w[4 * i] = lo.x;
      w[4 * i + 1] = lo.y;
      w[4 * i + 2] = hi.x;
      w[4 * i + 3] = hi.y;
    }
#pragma unroll
    for (int r = 0; r < M; ++r) {
      const auto* xr = reinterpret_cast<const uint4*>(x + r * ldx + c * 16);
      const uint4 a = __ldg(xr), b = __ldg(xr + 1);
      const uint32_t xs[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
      float part = 0.0f;
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        part = fmaf(w[2 * i], __uint_as_float(xs[i] << 16), part);
        part = fmaf(w[2 * i + 1], __uint_as_float(xs[i] & 0xffff0000u), part);
      }
      acc[r] = fmaf(part, s, acc[r]);
    }
  }
#pragma unroll
  for (int r = 0; r < M; ++r) {
    const float v = detail::warp_sum(acc[r]);
    if (lane == 0) y[r * ldy + n] = v + (bias != nullptr ? bias[n] : 0.0f);
  }
}

// Block (x, y): columns [x * 256, x * 256 + 256) of rows y, y + gridDim.y, ... (no division per
// element; each warp writes 64 contiguous bytes).
__global__ void fp8_dequantize_kernel(Fp8Matrix m, __nv_bfloat16* out) {
  const int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k >= m.K) return;
  const int64_t gc = (m.K + m.block_cols - 1) / m.block_cols, kb = k / m.block_cols;
  for (int64_t n = blockIdx.y; n < m.N; n += gridDim.y) {
    const __half_raw h = __nv_cvt_fp8_to_halfraw(m.w[n * m.K + k], __NV_E4M3);
    out[n * m.K + k] =
        __float2bfloat16_rn(__half2float(__half(h)) *
                            m.scales[static_cast<uint32_t>(n) /
                                         static_cast<uint32_t>(m.block_rows) * gc +
                                     kb]);
  }
}

template <int M>
cudaError_t launch_gemv(const uint16_t* x, int64_t ldx, const Fp8Matrix& m, const float* bias,
                        float* y, int64_t ldy, cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>((m.N + kWarpsPerBlock - 1) / kWarpsPerBlock);
  fp8_gemv_kernel<M><<<blocks, kWarpsPerBlock * 32, 0, stream>>>(x, ldx, m, bias, y, ldy);
  return cudaGetLastError();
}

}  // namespace

bool fp8_gemv_supports(const Fp8Matrix& m) {
  return m.K > 0 && m.K % 16 == 0 && m.block_rows > 0 &&
         (m.block_cols % 16 == 0 || m.block_cols >= m.K) &&
         reinterpret_cast<uintptr_t>(m.w) % 16 == 0;
}

cudaError_t fp8_gemv(const uint16_t* x, int64_t ldx, int M, const Fp8Matrix& m, const float* bias,
                     float* y, int64_t ldy, cudaStream_t stream) {
  if (M <= 0 || m.N <= 0) return cudaSuccess;
  if (M > kFp8GemvMaxRows || !fp8_gemv_supports(m) || ldx % 8 != 0 ||
      reinterpret_cast<uintptr_t>(x) % 16 != 0) {
    return cudaErrorInvalidValue;
  }
  switch (M) {
    case 1: return launch_gemv<1>(x, ldx, m, bias, y, ldy, stream);
    case 2: return launch_gemv<2>(x, ldx, m, bias, y, ldy, stream);
    case 3: return launch_gemv<3>(x, ldx, m, bias, y, ldy, stream);
    case 4: return launch_gemv<4>(x, ldx, m, bias, y, ldy, stream);
    case 5: return launch_gemv<5>(x, ldx, m, bias, y, ldy, stream);
    case 6: return launch_gemv<6>(x, ldx, m, bias, y, ldy, stream);
    case 7: return launch_gemv<7>(x, ldx, m, bias, y, ldy, stream);
    default: return launch_gemv<8>(x, ldx, m, bias, y, ldy, stream);
  }
}

cudaError_t fp8_dequantize_bf16(const Fp8Matrix& m, uint16_t* out, cudaStream_t stream) {
  if (m.N <= 0 || m.K <= 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>((m.K + 255) / 256),
                  static_cast<unsigned>(m.N < 65535 ? m.N : 65535));
  fp8_dequantize_kernel<<<grid, 256, 0, stream>>>(m, reinterpret_cast<__nv_bfloat16*>(out));
  return cudaGetLastError();
}

}  // namespace llmserve::kernels::cuda
