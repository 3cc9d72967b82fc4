// The GPU check's probe (scripts/gpu-check.sh runs it first, with LLMSERVE_REQUIRE_GPU=1): this
// binary, started through the bundled loader, sees a device, and cuBLAS loads and computes.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

#include "engine/runner/cuda/cublas_loader.h"
#include "tests/unit/cuda/cuda_test_util.h"

namespace llmserve {
namespace {

using cuda_test::DeviceBuffer;

TEST(GpuProbe, DeviceVisible) {
  LLMSERVE_REQUIRE_CUDA();
  auto info = cuda_device_info(0);
  ASSERT_TRUE(info.is_ok()) << info.status().message();
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  std::printf(
      "[ gpu ] %d device(s); 0: %s, sm_%d%d, %.1f GiB (%.1f GiB free); driver API %d, "
      "runtime %d\n",
      cuda_device_count(), info->name.c_str(), info->sm_major, info->sm_minor,
      static_cast<double>(info->total_bytes) / (1 << 30),
      static_cast<double>(info->free_bytes) / (1 << 30), driver, runtime);
}

// y[2, 3] = x[2, 4] . W[3, 4]^T in BF16 with f32 output, the call shape CudaOps uses.
TEST(GpuProbe, CublasLoadsAndMultiplies) {
  LLMSERVE_REQUIRE_CUDA();
  auto api = load_cublas();
  ASSERT_TRUE(api.is_ok()) << api.status().message();
  Dl_info where{};
  if (dladdr(reinterpret_cast<void*>((*api)->create), &where) != 0 && where.dli_fname) {
    std::printf("[ gpu ] cuBLAS from %s\n", where.dli_fname);
  }
  cublasHandle_t h = nullptr;
  ASSERT_EQ((*api)->create(&h), CUBLAS_STATUS_SUCCESS);
  const int M = 2, N = 3, K = 4;
  std::vector<float> x = {1, 2, 3, 4, -1, 0.5f, 0.25f, 2}, w(N * K);
  for (int i = 0; i < N * K; ++i) w[static_cast<size_t>(i)] = static_cast<float>(i % 5) - 2.0f;
  DeviceBuffer<uint16_t> dx(cuda_test::to_bf16(x)), dw(cuda_test::to_bf16(w));
  DeviceBuffer<float> dy(static_cast<size_t>(M) * N);
  const float one = 1, zero = 0;
  EXPECT_EQ((*api)->gemm_ex(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, dw.get(), CUDA_R_16BF, K,
                            dx.get(), CUDA_R_16BF, K, &zero, dy.get(), CUDA_R_32F, N,
                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  const std::vector<float> y = dy.download();
  (*api)->destroy(h);
  std::vector<float> want(static_cast<size_t>(M) * N, 0.0f);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n)
      for (int k = 0; k < K; ++k)
        want[static_cast<size_t>(m * N + n)] +=
            x[static_cast<size_t>(m * K + k)] * w[static_cast<size_t>(n * K + k)];
  // Every input is exact in BF16 and every sum exact in f32.
  EXPECT_EQ(y, want);
}

}  // namespace
}  // namespace llmserve
