// Timing helpers for the GPU benchmarks: CUDA-event timing of a callable on a stream.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdio>
#include <functional>

namespace llmserve::bench {

// Mean milliseconds of fn() over `iters` runs after `warmup` runs, timed with CUDA events.
inline float time_ms(cudaStream_t s, int warmup, int iters, const std::function<void()>& fn) {
  for (int i = 0; i < warmup; ++i) fn();
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  cudaEventRecord(a, s);
  for (int i = 0; i < iters; ++i) fn();
  cudaEventRecord(b, s);
  cudaEventSynchronize(b);
  float ms = 0;
  cudaEventElapsedTime(&ms, a, b);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) {
    std::printf("CUDA ERROR during benchmark: %s\n", cudaGetErrorString(e));
  }
  return ms / static_cast<float>(iters);
}

// Device-to-device copy bandwidth in GB/s (bytes read + written), the roofline for the tables.
double copy_bandwidth_gbs();
void run_kernel_benchmarks(double bw_gbs);
// Attention benchmarks (decode_attention_bench.cpp, prefill_attention_bench.cpp). Besides the
// Markdown rows, each prints one machine-readable line per shape for the report script:
//   BENCH {"kernel": "decode_attention", "batch": B, "ctx": L, "ms": t, "gbs": g, ...}
void run_decode_attention_benchmarks(double bw_gbs);
void run_prefill_attention_benchmarks();
// fp8: the same model with its matmul weights quantized to FP8 e4m3 with 128 x 128 block scales
// (model.quantize fp8) and kept FP8 on the device; its BENCH lines name the preset "<preset>-fp8".
int run_model_benchmarks(const char* preset, double bw_gbs, bool fp8 = false);

}  // namespace llmserve::bench
