#include "llmserve/kernels/dequantize.h"

#include <cmath>
#include <cstring>

#include "llmserve/kernels/quant_blocks.h"

namespace llmserve::kernels {
namespace {

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

template <typename Block>
const Block* blocks_of(const void* src) {
  return static_cast<const Block*>(src);
}

// 6-bit scale and min j (0..7) of a Q4_K / Q5_K super-block.
void scale_min_k4(int j, const uint8_t* q, int* sc, int* mn) {
  if (j < 4) {
    *sc = q[j] & 63;
    *mn = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *mn = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

void dequant_q4_0(const BlockQ4_0* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const float d = fp16_to_fp32(b[i].d);
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = d * ((b[i].qs[j] & 0xF) - 8);
      y[j + kQK / 2] = d * ((b[i].qs[j] >> 4) - 8);
    }
  }
}

void dequant_q4_1(const BlockQ4_1* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const float d = fp16_to_fp32(b[i].d), m = fp16_to_fp32(b[i].m);
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = d * (b[i].qs[j] & 0xF) + m;
      y[j + kQK / 2] = d * (b[i].qs[j] >> 4) + m;
    }
  }
}

template <typename Block>
void dequant_q5(const Block* b, float* y, int64_t nb, bool has_min) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const float d = fp16_to_fp32(b[i].d);
    float m = -16.0f * d;
    if constexpr (requires { b[i].m; }) {
      if (has_min) m = fp16_to_fp32(b[i].m);
    }
    uint32_t qh;
    std::memcpy(&qh, b[i].qh, 4);
    for (int j = 0; j < kQK / 2; ++j) {
      const int lo = (b[i].qs[j] & 0xF) | (((qh >> j) & 1) << 4);
      const int hi = (b[i].qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4);
      y[j] = d * lo + m;
      y[j + kQK / 2] = d * hi + m;
    }
  }
}

template <typename Block>
void dequant_q8(const Block* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const float d = fp16_to_fp32(b[i].d);
    for (int j = 0; j < kQK; ++j) y[j] = d * b[i].qs[j];
  }
}

void dequant_q2_k(const BlockQ2_K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(b[i].d), dmin = fp16_to_fp32(b[i].dmin);
    const uint8_t* q = b[i].qs;
    int is = 0;
    for (int half = 0; half < 2; ++half, q += 32) {
      for (int shift = 0; shift < 8; shift += 2) {
        for (int part = 0; part < 2; ++part) {
          const uint8_t sc = b[i].scales[is++];
          const float dl = d * (sc & 0xF), ml = dmin * (sc >> 4);
          for (int l = 0; l < 16; ++l) *y++ = dl * ((q[l + 16 * part] >> shift) & 3) - ml;
        }
      }
    }
  }
}

// Unpacks the 16 6-bit Q3_K scales (stored biased by 32).
void q3_k_scales(const uint8_t* packed, int8_t* out) {
  for (int j = 0; j < 16; ++j) {
    const int low = j < 8 ? (packed[j] & 0xF) : (packed[j - 8] >> 4);
    const int high = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
    out[j] = static_cast<int8_t>((low | (high << 4)) - 32);
  }
}

void dequant_q3_k(const BlockQ3_K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(b[i].d);
    int8_t scales[16];
    q3_k_scales(b[i].scales, scales);
    const uint8_t* q = b[i].qs;
    const uint8_t* hm = b[i].hmask;
    uint8_t mask = 1;
    int is = 0;
    for (int half = 0; half < 2; ++half, q += 32) {
      for (int shift = 0; shift < 8; shift += 2, mask <<= 1) {
        for (int part = 0; part < 2; ++part) {
          const float dl = d * scales[is++];
          for (int l = 16 * part; l < 16 * part + 16; ++l) {
            const int v = ((q[l] >> shift) & 3) - ((hm[l] & mask) ? 0 : 4);
            *y++ = dl * v;
          }
        }
      }
    }
  }
}

template <typename Block>
void dequant_q45_k(const Block* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(b[i].d), dmin = fp16_to_fp32(b[i].dmin);
    const uint8_t* q = b[i].qs;
    int is = 0;
    for (int j = 0; j < kQKK; j += 64, q += 32, is += 2) {
      int sc, mn;
      scale_min_k4(is, b[i].scales, &sc, &mn);
      const float d1 = d * sc, m1 = dmin * mn;
      scale_min_k4(is + 1, b[i].scales, &sc, &mn);
      const float d2 = d * sc, m2 = dmin * mn;
      for (int l = 0; l < 32; ++l) {
        int lo = q[l] & 0xF, hi = q[l] >> 4;
        if constexpr (requires { b[i].qh; }) {
          lo |= ((b[i].qh[l] >> is) & 1) << 4;
          hi |= ((b[i].qh[l] >> (is + 1)) & 1) << 4;
        }
        y[j + l] = d1 * lo - m1;
        y[j + 32 + l] = d2 * hi - m2;
      }
    }
    y += kQKK;
  }
}

void dequant_q6_k(const BlockQ6_K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(b[i].d);
    const uint8_t* ql = b[i].ql;
    const uint8_t* qh = b[i].qh;
    const int8_t* sc = b[i].scales;
    for (int half = 0; half < 2; ++half, ql += 64, qh += 32, sc += 8, y += 128) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * sc[is] * q1;
        y[l + 32] = d * sc[is + 2] * q2;
        y[l + 64] = d * sc[is + 4] * q3;
        y[l + 96] = d * sc[is + 6] * q4;
      }
    }
  }
}

void dequant_q8_k(const BlockQ8_K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQKK) {
    for (int j = 0; j < kQKK; ++j) y[j] = b[i].d * b[i].qs[j];
  }
}

}  // namespace

float fp16_to_fp32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1F;
  const uint32_t mant = h & 0x3FF;
  if (exp == 0) {
    const float mag = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -mag : mag;
  }
  if (exp == 31) return bits_float(sign | 0x7F800000u | (mant << 13));
  return bits_float(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t fp32_to_fp16(float f) {
  const uint32_t bits = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  const uint32_t abs = bits & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return sign | 0x7E00;           // NaN
  if (abs >= 0x477FF000u) return sign | 0x7C00;          // >= 65520 rounds to inf
  if (abs < 0x38800000u) {                               // below 2^-14: subnormal half
    const float scaled = bits_float(abs) * 16777216.0f;  // exact: times 2^24
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));
  }
  const uint32_t mant = abs & 0x7FFFFFu;
  uint32_t h = ((((abs >> 23) - 112) << 10) | (mant >> 13));
  const uint32_t rem = mant & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) ++h;
  return sign | static_cast<uint16_t>(h);
}

float bf16_to_fp32(uint16_t b) {
  return bits_float(static_cast<uint32_t>(b) << 16);
}

uint16_t fp32_to_bf16(float f) {
  const uint32_t bits = float_bits(f);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);
  return static_cast<uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1)) >> 16);
}

bool dtype_can_dequantize(DType type) {
  switch (type) {
    case DType::F32:
    case DType::F16:
    case DType::BF16:
    case DType::Q4_0:
    case DType::Q4_1:
    case DType::Q5_0:
    case DType::Q5_1:
    case DType::Q8_0:
    case DType::Q8_1:
    case DType::Q2_K:
    case DType::Q3_K:
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
    case DType::Q8_K:
      return true;
    default:
      return false;
  }
}

void dequantize_row(DType type, const void* src, float* dst, int64_t n) {
  const int64_t nb = n / dtype_info(type).block_elems;
  switch (type) {
    case DType::F32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case DType::F16:
    case DType::BF16: {
      const auto* h = static_cast<const uint8_t*>(src);
      for (int64_t i = 0; i < n; ++i) {
        uint16_t v;
        std::memcpy(&v, h + 2 * i, 2);
        dst[i] = type == DType::F16 ? fp16_to_fp32(v) : bf16_to_fp32(v);
      }
      return;
    }
    case DType::Q4_0:
      return dequant_q4_0(blocks_of<BlockQ4_0>(src), dst, nb);
    case DType::Q4_1:
      return dequant_q4_1(blocks_of<BlockQ4_1>(src), dst, nb);
    case DType::Q5_0:
      return dequant_q5(blocks_of<BlockQ5_0>(src), dst, nb, false);
    case DType::Q5_1:
      return dequant_q5(blocks_of<BlockQ5_1>(src), dst, nb, true);
    case DType::Q8_0:
      return dequant_q8(blocks_of<BlockQ8_0>(src), dst, nb);
    case DType::Q8_1:
      return dequant_q8(blocks_of<BlockQ8_1>(src), dst, nb);
    case DType::Q2_K:
      return dequant_q2_k(blocks_of<BlockQ2_K>(src), dst, nb);
    case DType::Q3_K:
      return dequant_q3_k(blocks_of<BlockQ3_K>(src), dst, nb);
    case DType::Q4_K:
      return dequant_q45_k(blocks_of<BlockQ4_K>(src), dst, nb);
    case DType::Q5_K:
      return dequant_q45_k(blocks_of<BlockQ5_K>(src), dst, nb);
    case DType::Q6_K:
      return dequant_q6_k(blocks_of<BlockQ6_K>(src), dst, nb);
    case DType::Q8_K:
      return dequant_q8_k(blocks_of<BlockQ8_K>(src), dst, nb);
    default:
      return;
  }
}

}  // namespace llmserve::kernels
