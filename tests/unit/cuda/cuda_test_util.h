// Helpers for the CUDA tests: skip without a device, device buffers, bf16 rounding, and a
// comparison that names the kernel and the worst element so one GPU run shows every bug.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "engine/runner/cuda/cuda_device.h"
#include "llmserve/kernels/dequantize.h"

namespace llmserve::cuda_test {

// True when LLMSERVE_REQUIRE_GPU is set to anything but "" or "0" (scripts/gpu-check.sh sets
// it): then a test that needs a device fails instead of skipping.
inline bool gpu_required() {
  const char* v = std::getenv("LLMSERVE_REQUIRE_GPU");
  return v != nullptr && *v != '\0' && std::string_view(v) != "0";
}

// Skips the test without a device, or fails it when gpu_required().
#define LLMSERVE_REQUIRE_CUDA()                                      \
  do {                                                               \
    if (::llmserve::cuda_device_count() == 0) {                      \
      if (::llmserve::cuda_test::gpu_required())                     \
        FAIL() << "no CUDA device, and LLMSERVE_REQUIRE_GPU is set"; \
      GTEST_SKIP() << "no CUDA device";                              \
    }                                                                \
  } while (0)

// For tests of the no-device paths: skips with this message when a device is present, which
// scripts/gpu-check.sh accepts as the one expected skip reason on the GPU machine.
#define LLMSERVE_REQUIRE_NO_CUDA()                                                  \
  do {                                                                              \
    if (::llmserve::cuda_device_count() > 0)                                        \
      GTEST_SKIP() << "runs only without a CUDA device (a CUDA device is present)"; \
  } while (0)

template <typename T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t n) : n_(n) {
    EXPECT_EQ(cudaMalloc(&p_, std::max<size_t>(n, 1) * sizeof(T)), cudaSuccess);
  }
  explicit DeviceBuffer(const std::vector<T>& h) : DeviceBuffer(h.size()) { upload(h); }
  ~DeviceBuffer() { cudaFree(p_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  T* get() const { return static_cast<T*>(p_); }
  void upload(const std::vector<T>& h) {
    EXPECT_EQ(cudaMemcpy(p_, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  std::vector<T> download() const {
    std::vector<T> h(n_);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudaGetErrorString(cudaGetLastError());
    EXPECT_EQ(cudaMemcpy(h.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return h;
  }

 private:
  void* p_ = nullptr;
  size_t n_;
};

inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f,
                                        float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

inline std::vector<uint16_t> to_bf16(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = kernels::fp32_to_bf16(v[i]);
  return out;
}

inline std::vector<float> round_bf16(const std::vector<float>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = kernels::bf16_to_fp32(kernels::fp32_to_bf16(v[i]));
  return out;
}

// Rows of bf16 (uint16_t bits) with a row pitch in elements, as f32 [rows, cols]: how the CUDA
// backend stores GEMM inputs (pitch 2 x cols keeps the f32 row pitch).
inline std::vector<float> bf16_rows_to_f32(const std::vector<uint16_t>& raw, int64_t rows,
                                           int64_t cols, int64_t pitch) {
  std::vector<float> out(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      out[static_cast<size_t>(r * cols + c)] =
          kernels::bf16_to_fp32(raw[static_cast<size_t>(r * pitch + c)]);
    }
  }
  return out;
}

// The raw bytes of a device f32 buffer read back as uint16_t elements (for bf16 overlays).
template <typename Buffer>
std::vector<uint16_t> download_as_u16(const Buffer& b, size_t floats) {
  std::vector<uint16_t> h(floats * 2);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(h.data(), b.get(), floats * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  return h;
}

// Passes when |got - want| <= atol + rtol |want| everywhere; else names the kernel, the case
// and the worst element.
inline ::testing::AssertionResult near_all(const std::string& what, const std::vector<float>& got,
                                           const std::vector<float>& want, float atol, float rtol) {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure()
           << what << ": size " << got.size() << " != " << want.size();
  }
  size_t worst = 0, bad = 0;
  double worst_excess = -1.0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double tol = atol + rtol * std::fabs(want[i]);
    const double err = std::fabs(static_cast<double>(got[i]) - want[i]);
    const double excess = std::isnan(got[i]) ? 1e30 : err - tol;
    if (excess > 0) ++bad;
    if (excess > worst_excess) {
      worst_excess = excess;
      worst = i;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "KERNEL MISMATCH " << what << ": " << bad << " of " << got.size()
         << " elements out of tolerance; worst at [" << worst << "] got " << got[worst] << " want "
         << want[worst];
}

// Per-vector accuracy: got and want as rows of `row_len` floats (one attention head's output);
// passes when every row with a nonzero reference has ||got - want|| <= rel_tol ||want||. Unlike
// an elementwise atol, this scales with the row: an average over thousands of keys is small, and
// a 10 % error in it still fails.
inline ::testing::AssertionResult near_rows(const std::string& what, const std::vector<float>& got,
                                            const std::vector<float>& want, int64_t row_len,
                                            double rel_tol) {
  if (got.size() != want.size() || row_len <= 0 || want.size() % row_len != 0) {
    return ::testing::AssertionFailure() << what << ": sizes " << got.size() << " / " << want.size()
                                         << " for rows of " << row_len;
  }
  const int64_t rows = static_cast<int64_t>(want.size()) / row_len;
  int64_t bad = 0, worst = -1;
  double worst_rel = 0;
  std::vector<double> rels;
  for (int64_t r = 0; r < rows; ++r) {
    double d2 = 0, w2 = 0;
    for (int64_t i = r * row_len; i < (r + 1) * row_len; ++i) {
      const double d = static_cast<double>(got[i]) - want[i];
      d2 += d * d;
      w2 += static_cast<double>(want[i]) * want[i];
    }
    if (w2 == 0) continue;
    const double rel = std::isnan(d2) ? 1e30 : std::sqrt(d2 / w2);
    rels.push_back(rel);
    if (!(rel <= rel_tol)) ++bad;
    if (!(rel <= worst_rel)) worst_rel = rel, worst = r;
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  std::sort(rels.begin(), rels.end());
  return ::testing::AssertionFailure()
         << "KERNEL MISMATCH " << what << ": " << bad << " of " << rows << " rows over relative L2 "
         << rel_tol << "; median " << rels[rels.size() / 2] << ", worst " << worst_rel << " at row "
         << worst;
}

}  // namespace llmserve::cuda_test
