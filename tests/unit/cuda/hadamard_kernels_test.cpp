// The CUDA Hadamard rotations (f32 q/k/v rows, and the bf16 attention-output rows of the int8 /
// fp8 KV paths) against the CPU kernel (kernels/hadamard.h).
#include <gtest/gtest.h>

#include "llmserve/kernels/cuda/hadamard.h"
#include "llmserve/kernels/hadamard.h"
#include "llmserve/kernels/thread_pool.h"
#include "tests/unit/cuda/cuda_test_util.h"

namespace llmserve {
namespace {

namespace kc = kernels::cuda;
using cuda_test::DeviceBuffer;
using cuda_test::near_all;

TEST(CudaKernels, HadamardRowsMatchCpuOnStridedF32Rows) {
  LLMSERVE_REQUIRE_CUDA();
  kernels::ThreadPool pool(1);
  for (const int D : {64, 128}) {
    const int heads = 3;
    const int64_t rows = 7, stride = heads * D + 32;  // a fused-QKV-like pitch
    const auto x = cuda_test::random_floats(static_cast<size_t>(rows * stride), 11, -4, 4);
    auto want = x;
    kernels::hadamard_rows(pool, want.data(), rows, stride, heads, D);
    DeviceBuffer<float> d(x);
    ASSERT_EQ(kc::hadamard_rows(d.get(), stride, rows, heads, D, nullptr), cudaSuccess);
    EXPECT_TRUE(near_all("hadamard_rows D=" + std::to_string(D), d.download(), want, 1e-6f, 1e-6f));
  }
}

TEST(CudaKernels, HadamardRowsBf16RotatesAttentionOutputRowsInPlace) {
  LLMSERVE_REQUIRE_CUDA();
  kernels::ThreadPool pool(1);
  for (const int D : {64, 128}) {
    const int heads = 9;
    const int64_t rows = 5, width = heads * D, pitch = 2 * width;  // bf16 in the f32 row pitch
    std::vector<uint16_t> raw(static_cast<size_t>(rows * pitch), 0x7fc0);  // NaN outside the rows
    const auto vals = cuda_test::random_floats(static_cast<size_t>(rows * width), 12, -2, 2);
    std::vector<float> want(vals.size());
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < width; ++c) {
        const uint16_t b = kernels::fp32_to_bf16(vals[static_cast<size_t>(r * width + c)]);
        raw[static_cast<size_t>(r * pitch + c)] = b;
        want[static_cast<size_t>(r * width + c)] = kernels::bf16_to_fp32(b);
      }
    }
    kernels::hadamard_rows(pool, want.data(), rows, width, heads, D);
    want = cuda_test::round_bf16(want);
    DeviceBuffer<uint16_t> d(raw);
    ASSERT_EQ(kc::hadamard_rows_bf16(d.get(), pitch, rows, heads, D, nullptr), cudaSuccess);
    const auto back = d.download();
    EXPECT_TRUE(near_all("hadamard_rows_bf16 D=" + std::to_string(D),
                         cuda_test::bf16_rows_to_f32(back, rows, width, pitch), want, 1e-6f,
                         8e-3f));
    for (int64_t r = 0; r < rows; ++r) {  // the rest of each f32-pitch row is left alone
      for (int64_t c = width; c < pitch; ++c) {
        ASSERT_EQ(back[static_cast<size_t>(r * pitch + c)], 0x7fc0) << "row " << r << " col " << c;
      }
    }
  }
}

}  // namespace
}  // namespace llmserve
