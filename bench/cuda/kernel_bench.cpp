// Kernel times: element-wise ops and cuBLAS BF16 GEMM TFLOP/s (attention: *_attention_bench.cpp).
#include <cuda_runtime_api.h>

#include <array>
#include <cstdio>
#include <vector>

#include "bench/cuda/bench_util.h"
#include "engine/runner/cuda/cublas_loader.h"
#include "llmserve/kernels/cuda/elementwise.h"
#include "llmserve/kernels/cuda/norm.h"
#include "llmserve/kernels/cuda/rope.h"

namespace llmserve::bench {
namespace {

namespace kc = kernels::cuda;

void* dalloc(size_t bytes) {
  void* p = nullptr;
  if (cudaMalloc(&p, bytes) != cudaSuccess) {
    std::printf("cudaMalloc of %zu bytes failed\n", bytes);
    return nullptr;
  }
  cudaMemset(p, 0, bytes);
  return p;
}

void report(const char* what, cudaError_t launch, float ms, const char* figure) {
  std::printf("| %s | %s | %.4f | %s |\n", what,
              launch == cudaSuccess ? "ok" : cudaGetErrorString(launch), ms, figure);
}

}  // namespace

double copy_bandwidth_gbs() {
  const size_t bytes = 2ull << 30;
  void* a = dalloc(bytes);
  void* b = dalloc(bytes);
  if (a == nullptr || b == nullptr) return 0;
  const float ms = time_ms(
      nullptr, 2, 10, [&] { cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, nullptr); });
  cudaFree(a);
  cudaFree(b);
  return 2.0 * static_cast<double>(bytes) / (ms * 1e6);
}

void run_kernel_benchmarks(double bw) {
  cudaStream_t s = nullptr;
  char fig[128];
  std::printf("| kernel | launch | ms | figure |\n|---|---|---|---|\n");
  // Element-wise at 4096 tokens x hidden 4096 (ffn 14336).
  const int64_t T = 4096, Hd = 4096, F = 14336;
  auto* x = static_cast<float*>(dalloc(T * F * 4));
  auto* y = static_cast<float*>(dalloc(T * F * 4));
  auto* r = static_cast<float*>(dalloc(T * Hd * 4));
  auto* w = static_cast<float*>(dalloc(Hd * 4));
  auto* pos = static_cast<int32_t*>(dalloc(T * 4));
  auto* inv = static_cast<float*>(dalloc(64 * 4));
  cudaError_t e = cudaSuccess;
  auto* y16 = reinterpret_cast<uint16_t*>(y);
  float ms =
      time_ms(s, 2, 20, [&] { e = kc::add_rms_norm(r, x, w, T, Hd, 1e-5f, y16, 2 * Hd, s); });
  const double norm_gbs = 3.5 * T * Hd * 4 / (ms * 1e6);
  std::snprintf(fig, sizeof fig, "%.0f GB/s = %.0f%% of copy bandwidth", norm_gbs,
                100.0 * norm_gbs / bw);
  report("add_rms_norm 4096x4096 (bf16 out)", e, ms, fig);
  kc::SiluMulArgs sm;  // the fused gate/up output [T, 2F] -> bf16 [T, F]
  sm.gate = x;
  sm.gate_stride = F;
  sm.up = x + F / 2;
  sm.up_stride = F;
  sm.out = y16;
  sm.out_stride = F;
  sm.rows = T;
  sm.cols = F / 2;
  ms = time_ms(s, 2, 20, [&] { e = kc::silu_mul(sm, s); });
  std::snprintf(fig, sizeof fig, "%.0f GB/s", 2.5 * T * F * 4 / 2 / (ms * 1e6));
  report("silu_mul 4096x7168 (fused input, bf16 out)", e, ms, fig);
  ms = time_ms(s, 2, 20,
               [&] { e = kc::apply_rope(x, 32 * 128, T, 32, 128, pos, inv, 64, true, s); });
  std::snprintf(fig, sizeof fig, "%.0f GB/s", 2.0 * T * 32 * 128 * 4 / (ms * 1e6));
  report("rope 4096 tok x 32 heads x 128", e, ms, fig);

  // cuBLAS BF16 GEMMs with f32 output, the shapes CudaOps issues (y[M,N] = x[M,K] W[N,K]^T).
  auto api = load_cublas();
  if (!api.is_ok()) {
    std::printf("| cuBLAS | %s | | |\n", api.status().message().c_str());
  } else {
    cublasHandle_t h = nullptr;
    (*api)->create(&h);
    for (const auto& [M, N, K] : {std::array<int, 3>{1, 4096, 4096},
                                  {64, 14336, 4096},
                                  {4096, 4096, 4096},
                                  {4096, 14336, 4096},
                                  {4096, 4096, 14336}}) {
      auto* A = dalloc(static_cast<size_t>(N) * K * 2);
      auto* X = dalloc(static_cast<size_t>(M) * K * 2);
      auto* Y = dalloc(static_cast<size_t>(M) * N * 4);
      const float al = 1, be = 0;
      cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
      ms = time_ms(s, 2, 10, [&] {
        st = (*api)->gemm_ex(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &al, A, CUDA_R_16BF, K, X,
                             CUDA_R_16BF, K, &be, Y, CUDA_R_32F, N, CUBLAS_COMPUTE_32F,
                             CUBLAS_GEMM_DEFAULT);
      });
      const double tf = 2.0 * M * N * K / (ms * 1e9);
      const double gbs = (2.0 * N * K + 2.0 * M * K + 4.0 * M * N) / (ms * 1e6);
      std::snprintf(fig, sizeof fig, "%.1f TFLOP/s, %.0f GB/s", tf, gbs);
      char what[96];
      std::snprintf(what, sizeof what, "gemm bf16 M=%d N=%d K=%d", M, N, K);
      report(what, st == CUBLAS_STATUS_SUCCESS ? cudaSuccess : cudaErrorUnknown, ms, fig);
      cudaFree(A), cudaFree(X), cudaFree(Y);
    }
    (*api)->destroy(h);
  }
  cudaFree(x), cudaFree(y), cudaFree(r), cudaFree(w), cudaFree(pos), cudaFree(inv);
  std::printf("\n");
}

}  // namespace llmserve::bench
