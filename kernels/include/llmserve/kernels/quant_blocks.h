// On-disk layouts of GGML quantized blocks (bit-compatible with GGUF tensor data). Scales marked
// "f16" are IEEE half bit patterns (see fp16_to_fp32 in dequantize.h). A row of n elements is
// n / block_elems consecutive blocks; blocks are packed with no padding.
#pragma once

#include <cstdint>

namespace llmserve::kernels {

inline constexpr int kQK = 32;    // elements per block of the legacy types (Q4_0 .. Q8_1)
inline constexpr int kQKK = 256;  // elements per super-block of the K-quants

// x[j] = d * (nibble - 8); element j < 16 is the low nibble of qs[j], j >= 16 the high nibble.
struct BlockQ4_0 {
  uint16_t d;  // f16
  uint8_t qs[kQK / 2];
};
// x[j] = d * nibble + m.
struct BlockQ4_1 {
  uint16_t d, m;  // f16
  uint8_t qs[kQK / 2];
};
// 5th bit of element j is bit j of qh (little-endian uint32); x[j] = d * (q - 16).
struct BlockQ5_0 {
  uint16_t d;  // f16
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
// x[j] = d * q + m.
struct BlockQ5_1 {
  uint16_t d, m;  // f16
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
// x[j] = d * qs[j].
struct BlockQ8_0 {
  uint16_t d;  // f16
  int8_t qs[kQK];
};
// s = d * sum(qs) (used by dot products with Q4_1 / Q5_1).
struct BlockQ8_1 {
  uint16_t d, s;  // f16
  int8_t qs[kQK];
};
// 16 sub-blocks of 16: scales[i] low nibble = scale, high nibble = min; 2-bit quants.
struct BlockQ2_K {
  uint8_t scales[kQKK / 16];
  uint8_t qs[kQKK / 4];
  uint16_t d, dmin;  // f16
};
// 3-bit quants: low 2 bits in qs, high bit in hmask; 16 6-bit signed scales packed in 12 bytes.
struct BlockQ3_K {
  uint8_t hmask[kQKK / 8];
  uint8_t qs[kQKK / 4];
  uint8_t scales[12];
  uint16_t d;  // f16
};
// 8 sub-blocks of 32: 6-bit scales and mins packed in 12 bytes; 4-bit quants.
struct BlockQ4_K {
  uint16_t d, dmin;  // f16
  uint8_t scales[12];
  uint8_t qs[kQKK / 2];
};
// As Q4_K plus a 5th bit per element in qh.
struct BlockQ5_K {
  uint16_t d, dmin;  // f16
  uint8_t scales[12];
  uint8_t qh[kQKK / 8];
  uint8_t qs[kQKK / 2];
};
// 16 sub-blocks of 16 with int8 scales; 6-bit quants (low 4 in ql, high 2 in qh), offset -32.
struct BlockQ6_K {
  uint8_t ql[kQKK / 2];
  uint8_t qh[kQKK / 4];
  int8_t scales[kQKK / 16];
  uint16_t d;  // f16
};
// Activation quantization for K-quant dot products: x[j] = d * qs[j]; bsums = sums of 16.
struct BlockQ8_K {
  float d;
  int8_t qs[kQKK];
  int16_t bsums[kQKK / 16];
};

static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);

}  // namespace llmserve::kernels
