// Shared helpers for the kernel tests: seeded random data and random quantized weight rows.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "llmserve/kernels/dequantize.h"
#include "llmserve/kernels/dtype.h"
#include "llmserve/kernels/quant_blocks.h"

namespace llmserve::kernels::testing {

inline std::vector<float> random_floats(std::mt19937& rng, size_t n, float lo = -1.0f,
                                        float hi = 1.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Random bytes for `rows` rows of `k` elements of `type`, with the f16 scale fields set to sane
// small values so every element is finite.
inline std::vector<uint8_t> random_weights(std::mt19937& rng, DType type, int64_t rows, int64_t k) {
  const size_t rb = row_bytes(type, k);
  std::vector<uint8_t> w(rb * rows);
  std::uniform_int_distribution<int> byte(0, 255);
  for (auto& b : w) b = static_cast<uint8_t>(byte(rng));
  std::uniform_real_distribution<float> sd(0.001f, 0.05f);
  auto h = [&] { return fp32_to_fp16(sd(rng)); };
  const auto info = dtype_info(type);
  const size_t nblocks = w.size() / info.block_bytes;
  uint8_t* p = w.data();
  for (size_t i = 0; i < nblocks; ++i, p += info.block_bytes) {
    switch (type) {
      case DType::F32: {
        float f = sd(rng) * (byte(rng) % 2 ? 10.f : -10.f);
        std::memcpy(p, &f, 4);
        break;
      }
      case DType::F16: {
        uint16_t v = fp32_to_fp16(sd(rng) * (byte(rng) % 2 ? 10.f : -10.f));
        std::memcpy(p, &v, 2);
        break;
      }
      case DType::BF16: {
        uint16_t v = fp32_to_bf16(sd(rng) * (byte(rng) % 2 ? 10.f : -10.f));
        std::memcpy(p, &v, 2);
        break;
      }
      case DType::Q4_0:
        reinterpret_cast<BlockQ4_0*>(p)->d = h();
        break;
      case DType::Q5_0:
        reinterpret_cast<BlockQ5_0*>(p)->d = h();
        break;
      case DType::Q8_0:
        reinterpret_cast<BlockQ8_0*>(p)->d = h();
        break;
      case DType::Q4_1: {
        auto* b = reinterpret_cast<BlockQ4_1*>(p);
        b->d = h();
        b->m = fp32_to_fp16(-sd(rng) * 8);
        break;
      }
      case DType::Q5_1: {
        auto* b = reinterpret_cast<BlockQ5_1*>(p);
        b->d = h();
        b->m = fp32_to_fp16(-sd(rng) * 8);
        break;
      }
      case DType::Q2_K: {
        auto* b = reinterpret_cast<BlockQ2_K*>(p);
        b->d = h();
        b->dmin = h();
        break;
      }
      case DType::Q3_K:
        reinterpret_cast<BlockQ3_K*>(p)->d = h();
        break;
      case DType::Q4_K: {
        auto* b = reinterpret_cast<BlockQ4_K*>(p);
        b->d = h();
        b->dmin = h();
        break;
      }
      case DType::Q5_K: {
        auto* b = reinterpret_cast<BlockQ5_K*>(p);
        b->d = h();
        b->dmin = h();
        break;
      }
      case DType::Q6_K:
        reinterpret_cast<BlockQ6_K*>(p)->d = h();
        break;
      default:
        break;
    }
  }
  return w;
}

}  // namespace llmserve::kernels::testing
