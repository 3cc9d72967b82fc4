// Quantized KV-cache writes on the GPU (paged_kv.h write_kv, int8 and e4m3): every byte of the
// pages and every scale, touched or not, equals the CPU's kernels::write_kv (int8) or the host
// rule of kv_quant_util.h (e4m3) bit for bit, over head dims 64 / 80 / 128, 1..8 kv heads,
// padding slots, k and v as slices of fused QKV rows, and rows made to hit the edge cases: all
// zeros, a scale that rounds to f16 zero, an f16-subnormal scale (clamping), exact .5 ties of
// x / s, e4m3 ties and subnormals, large magnitudes. Argument checks run without a device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "llmserve/kernels/cuda/paged_kv.h"
#include "llmserve/kernels/kv_cache_ops.h"
#include "tests/unit/cuda/cuda_test_util.h"
#include "tests/unit/cuda/kv_quant_util.h"

namespace llmserve {
namespace {

namespace kc = kernels::cuda;
using cuda_test::DeviceBuffer;
using kernels::KvDtype;

constexpr uint8_t kUntouched = 0x5a;  // page bytes no slot writes keep this
constexpr uint16_t kUntouchedScale = 0x1234;

// K and V [T, num_kv_heads, head_dim] with the special rows above.
struct Rows {
  std::vector<float> k, v;
};

Rows make_rows(KvDtype dtype, int64_t T, int nkv, int D, uint32_t seed) {
  const size_t n = static_cast<size_t>(T) * nkv * D;
  Rows r{cuda_test::random_floats(n, seed, -3.0f, 3.0f),
         cuda_test::random_floats(n, seed + 1, -3.0f, 3.0f)};
  auto row = [&](std::vector<float>& x, int64_t t, int h) { return x.data() + (t * nkv + h) * D; };
  // Scale 2^-4 (int8: max 127 / 16) or 2^-6 (e4m3: max 448 / 64), exact in f16: x / s are the
  // grid points t chosen below, so ties are exact.
  const float s = dtype == KvDtype::kInt8 ? 0.0625f : 0.015625f;
  const float top = dtype == KvDtype::kInt8 ? 127.0f : 448.0f;
  // e4m3 ties between neighbours at every magnitude (1.0625: 1 | 1.125, 2.375: 2.25 | 2.5, ...)
  // and in the subnormal range (2^-10 = half the smallest subnormal step).
  const std::vector<float> e4m3_ties = {1.0625f,       1.1875f,       2.375f, 2.625f,       13.0f,
                                        0.0009765625f, 0.0029296875f, 300.0f, 0.0146484375f};
  for (int64_t t = 0; t < T; ++t) {
    for (int h = 0; h < nkv; ++h) {
      float* kx = row(r.k, t, h);
      float* vx = row(r.v, t, h);
      switch ((t * nkv + h) % 7) {
        case 0:  // zeros: scale 0
          std::fill(kx, kx + D, 0.0f);
          std::fill(vx, vx + D, -0.0f);
          break;
        case 1:  // scale rounds to f16 zero / is the smallest f16 subnormal (q clamps to +-127)
          for (int d = 0; d < D; ++d) {
            kx[d] = 1e-9f * (d % 5 - 2);
            vx[d] = 1e-5f * std::sin(static_cast<float>(d));
          }
          break;
        case 2:  // exact ties of x / s
          for (int d = 0; d < D; ++d) {
            const float g = dtype == KvDtype::kInt8 ? static_cast<float>(d % 64) - 31.5f
                                                    : e4m3_ties[d % e4m3_ties.size()];
            kx[d] = g * s;
            vx[d] = (d % 2 != 0 ? -g : g) * s;
          }
          kx[D - 1] = vx[D - 1] = top * s;  // the row max: scale exactly s
          break;
        case 3:  // large
          for (int d = 0; d < D; ++d) {
            kx[d] *= 3000.0f;
            vx[d] *= 1e-3f;
          }
          break;
        case 4:  // max / qmax past the f16 range: the scale clamps to 65504, q saturates
          for (int d = 0; d < D; ++d) kx[d] *= 4e7f;
          break;
        default:
          break;
      }
    }
  }
  return r;
}

// Runs the GPU write over k / v placed inside fused rows, and returns its pages and scales.
struct Written {
  std::vector<uint8_t> k, v;
  std::vector<uint16_t> ks, vs;
};

Written gpu_write(KvDtype dtype, const kernels::KvCacheShape& shape, const Rows& r,
                  const std::vector<int32_t>& slots) {
  const int64_t T = static_cast<int64_t>(slots.size());
  const int64_t n = int64_t{shape.num_kv_heads} * shape.head_dim;
  const int64_t q_width = 2 * n + 4, stride = q_width + 2 * n;
  std::vector<float> fused(static_cast<size_t>(T * stride), 99.0f);
  for (int64_t t = 0; t < T; ++t) {
    std::copy_n(r.k.begin() + t * n, n, fused.begin() + t * stride + q_width);
    std::copy_n(r.v.begin() + t * n, n, fused.begin() + t * stride + q_width + n);
  }
  const size_t rows = static_cast<size_t>(shape.num_blocks) * shape.num_kv_heads * shape.block_size;
  const size_t elems = rows * shape.head_dim;
  DeviceBuffer<float> df(fused);
  DeviceBuffer<int32_t> ds(slots);
  DeviceBuffer<uint8_t> dk(std::vector<uint8_t>(elems, kUntouched));
  DeviceBuffer<uint8_t> dv(std::vector<uint8_t>(elems, kUntouched));
  DeviceBuffer<uint16_t> dks(std::vector<uint16_t>(rows, kUntouchedScale));
  DeviceBuffer<uint16_t> dvs(std::vector<uint16_t>(rows, kUntouchedScale));
  EXPECT_EQ(kc::write_kv(df.get() + q_width, df.get() + q_width + n, stride, ds.get(), T,
                         shape.num_kv_heads, shape.block_size, shape.head_dim, dtype, dk.get(),
                         dv.get(), dks.get(), dvs.get(), nullptr),
            cudaSuccess);
  return {dk.download(), dv.download(), dks.download(), dvs.download()};
}

// The expected pages: the CPU's write_kv for int8, the host e4m3 rule for fp8.
Written host_write(KvDtype dtype, const kernels::KvCacheShape& shape, const Rows& r,
                   const std::vector<int32_t>& slots) {
  const size_t rows = static_cast<size_t>(shape.num_blocks) * shape.num_kv_heads * shape.block_size;
  Written w{std::vector<uint8_t>(rows * shape.head_dim, kUntouched),
            std::vector<uint8_t>(rows * shape.head_dim, kUntouched),
            std::vector<uint16_t>(rows, kUntouchedScale),
            std::vector<uint16_t>(rows, kUntouchedScale)};
  const int64_t T = static_cast<int64_t>(slots.size());
  if (dtype == KvDtype::kInt8) {
    kernels::write_kv(shape, r.k.data(), r.v.data(), slots.data(), T, w.k.data(), w.v.data(),
                      w.ks.data(), w.vs.data());
    return w;
  }
  const int D = shape.head_dim;
  for (int64_t t = 0; t < T; ++t) {
    if (slots[static_cast<size_t>(t)] < 0) continue;
    for (int h = 0; h < shape.num_kv_heads; ++h) {
      const int64_t src = (t * shape.num_kv_heads + h) * D;
      const int64_t at = kernels::kv_cache_offset(shape, slots[static_cast<size_t>(t)], h);
      const int64_t si = kernels::kv_scale_offset(shape, slots[static_cast<size_t>(t)], h);
      cuda_test::quantize_row_fp8(r.k.data() + src, D, w.k.data() + at, w.ks.data() + si);
      cuda_test::quantize_row_fp8(r.v.data() + src, D, w.v.data() + at, w.vs.data() + si);
    }
  }
  return w;
}

template <typename T>
::testing::AssertionResult same_bits(const std::string& what, const std::vector<T>& got,
                                     const std::vector<T>& want) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << what << ": sizes differ";
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i] && bad++ == 0) first = i;
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "KERNEL MISMATCH " << what << ": " << bad << " of "
                                       << got.size() << " differ; first at [" << first << "] got 0x"
                                       << std::hex << +got[first] << " want 0x" << +want[first];
}

void expect_write_matches(KvDtype dtype, int D, int nkv, uint32_t seed) {
  const kernels::KvCacheShape shape{7, nkv, 16, D, dtype};
  const std::vector<int32_t> slots = {0, 17, -1, 95, 40, 111, 16, 1, -1, 63, 64, 80, 2, 33};
  const Rows r = make_rows(dtype, static_cast<int64_t>(slots.size()), nkv, D, seed);
  const Written got = gpu_write(dtype, shape, r, slots);
  const Written want = host_write(dtype, shape, r, slots);
  const std::string name = std::string("write_kv ") + kernels::kv_dtype_name(dtype) + " head_dim " +
                           std::to_string(D) + " kv_heads " + std::to_string(nkv);
  EXPECT_TRUE(same_bits(name + " K pages", got.k, want.k));
  EXPECT_TRUE(same_bits(name + " V pages", got.v, want.v));
  EXPECT_TRUE(same_bits(name + " K scales", got.ks, want.ks));
  EXPECT_TRUE(same_bits(name + " V scales", got.vs, want.vs));
}

TEST(CudaKvQuantWrite, Int8MatchesCpuBitForBit) {
  LLMSERVE_REQUIRE_CUDA();
  for (int D : {64, 80, 128}) {
    for (int nkv : {1, 3, 8}) expect_write_matches(KvDtype::kInt8, D, nkv, 10 + D + nkv);
  }
}

TEST(CudaKvQuantWrite, Fp8MatchesHostRuleBitForBit) {
  LLMSERVE_REQUIRE_CUDA();
  for (int D : {64, 80, 128}) {
    for (int nkv : {1, 3, 8}) expect_write_matches(KvDtype::kFp8, D, nkv, 20 + D + nkv);
  }
}

// The host e4m3 encoder the fp8 checks rely on: every finite code round-trips, ties go to the
// even code, out-of-range values saturate.
TEST(CudaKvQuantWriteHost, E4m3ReferenceEncoding) {
  for (int c = 0; c < 256; ++c) {
    if ((c & 0x7f) == 0x7f) continue;
    EXPECT_EQ(cuda_test::float_to_e4m3(cuda_test::e4m3_to_float(static_cast<uint8_t>(c))), c);
  }
  EXPECT_EQ(cuda_test::float_to_e4m3(448.0f), 0x7e);
  EXPECT_EQ(cuda_test::float_to_e4m3(1e6f), 0x7e);
  EXPECT_EQ(cuda_test::float_to_e4m3(-470.0f), 0xfe);
  EXPECT_EQ(cuda_test::float_to_e4m3(1.0625f), 0x38);        // 1 | 1.125 -> 1 (even)
  EXPECT_EQ(cuda_test::float_to_e4m3(1.1875f), 0x3a);        // 1.125 | 1.25 -> 1.25
  EXPECT_EQ(cuda_test::float_to_e4m3(0.0009765625f), 0x00);  // half the smallest subnormal
  EXPECT_EQ(cuda_test::float_to_e4m3(0.0029296875f), 0x02);  // 1.5 steps -> 2
  EXPECT_EQ(cuda_test::float_to_e4m3(-0.0f), 0x80);
}

TEST(CudaKvQuantWriteHost, RejectsMissingScalesAndF32) {
  auto* f = reinterpret_cast<float*>(uintptr_t{4096});
  auto* slots = reinterpret_cast<int32_t*>(uintptr_t{4096});
  auto* cache = reinterpret_cast<void*>(uintptr_t{4096});
  auto* scales = reinterpret_cast<uint16_t*>(uintptr_t{4096});
  auto call = [&](KvDtype dtype, uint16_t* ks, uint16_t* vs, int64_t T = 3) {
    return kc::write_kv(f, f, 256, slots, T, 2, 16, 128, dtype, cache, cache, ks, vs, nullptr);
  };
  EXPECT_EQ(call(KvDtype::kInt8, nullptr, scales), cudaErrorInvalidValue);
  EXPECT_EQ(call(KvDtype::kFp8, scales, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(call(KvDtype::kF32, nullptr, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(call(KvDtype::kInt8, scales, scales, 0), cudaSuccess);  // nothing to write
  EXPECT_EQ(kc::kv_device_elem_bytes(KvDtype::kF16), 2);
  EXPECT_EQ(kc::kv_device_elem_bytes(KvDtype::kInt8), 1);
  EXPECT_EQ(kc::kv_device_elem_bytes(KvDtype::kFp8), 1);
  EXPECT_EQ(kc::kv_device_elem_bytes(KvDtype::kF32), 0);
}

}  // namespace
}  // namespace llmserve
