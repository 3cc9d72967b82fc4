#include "kernels/cpu/pack_k_quants.h"

#include <cstring>
#include <type_traits>

#include "kernels/cpu/packed_layout.h"
#include "llmserve/kernels/quant_blocks.h"

namespace llmserve::kernels::cpu {
namespace {

// One row's super-block as integers: element e = d * sc16[e / 16] * (q[e] - 32) for Q6_K and
// Q3_K, d * sc16[e / 16] * q[e] - dmin * mn16[e / 16] for Q2_K, or d * sc[e / 32] * q[e] - dmin *
// mn[e / 32] for Q4_K and Q5_K.
struct SuperRow {
  uint8_t q[kQKK] = {};
  uint8_t sc[kSubBlocks] = {}, mn[kSubBlocks] = {};
  int8_t sc16[2 * kSubBlocks] = {}, mn16[2 * kSubBlocks] = {};
  uint16_t d = 0, dmin = 0;
};

void q4_k_scales(const uint8_t* s, uint8_t sc[8], uint8_t mn[8]) {
  for (int j = 0; j < 4; ++j) {
    sc[j] = s[j] & 63;
    mn[j] = s[j + 4] & 63;
    sc[j + 4] = static_cast<uint8_t>((s[j + 8] & 0x0F) | ((s[j] >> 6) << 4));
    mn[j + 4] = static_cast<uint8_t>((s[j + 8] >> 4) | ((s[j + 4] >> 6) << 4));
  }
}

// Q4_K and Q5_K: 64 elements per 32 bytes of qs, low nibbles first; Q5_K's 5th bit of element
// 64c + 32h + l is bit 2c + h of qh[l].
template <typename Block>
void unpack_q45_k(const Block& b, SuperRow& r) {
  r.d = b.d;
  r.dmin = b.dmin;
  q4_k_scales(b.scales, r.sc, r.mn);
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      uint8_t lo = b.qs[32 * c + l] & 0x0F, hi = b.qs[32 * c + l] >> 4;
      if constexpr (sizeof(Block) == sizeof(BlockQ5_K)) {
        lo |= static_cast<uint8_t>(((b.qh[l] >> (2 * c)) & 1) << 4);
        hi |= static_cast<uint8_t>(((b.qh[l] >> (2 * c + 1)) & 1) << 4);
      }
      r.q[64 * c + l] = lo;
      r.q[64 * c + 32 + l] = hi;
    }
  }
}

void unpack_q6_k(const BlockQ6_K& b, SuperRow& r) {
  r.d = b.d;
  std::memcpy(r.sc16, b.scales, sizeof(r.sc16));
  for (int h = 0; h < 2; ++h) {
    const uint8_t* ql = b.ql + 64 * h;
    const uint8_t* qh = b.qh + 32 * h;
    uint8_t* q = r.q + 128 * h;
    for (int l = 0; l < 32; ++l) {
      q[l] = static_cast<uint8_t>((ql[l] & 0x0F) | ((qh[l] & 3) << 4));
      q[l + 32] = static_cast<uint8_t>((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4));
      q[l + 64] = static_cast<uint8_t>((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
      q[l + 96] = static_cast<uint8_t>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
    }
  }
}

// Q3_K as Q6_K: x = d * sc * (q3 - 4) with q3 in 0..7 is d * sc * (q - 32) for q = q3 + 28.
void unpack_q3_k(const BlockQ3_K& b, SuperRow& r) {
  r.d = b.d;
  for (int j = 0; j < 16; ++j) {
    const int low = j < 8 ? (b.scales[j] & 0xF) : (b.scales[j - 8] >> 4);
    const int high = (b.scales[8 + j % 4] >> (2 * (j / 4))) & 3;
    r.sc16[j] = static_cast<int8_t>((low | (high << 4)) - 32);
  }
  for (int e = 0; e < kQKK; ++e) {
    const int half = e / 128, shift = 2 * ((e % 128) / 32), l = e % 32;
    const int bit = 4 * half + shift / 2;
    const int q3 = ((b.qs[32 * half + l] >> shift) & 3) + (((b.hmask[l] >> bit) & 1) << 2);
    r.q[e] = static_cast<uint8_t>(q3 + 28);
  }
}

void unpack_q2_k(const BlockQ2_K& b, SuperRow& r) {
  r.d = b.d;
  r.dmin = b.dmin;
  for (int j = 0; j < 16; ++j) {
    r.sc16[j] = static_cast<int8_t>(b.scales[j] & 0xF);
    r.mn16[j] = static_cast<int8_t>(b.scales[j] >> 4);
  }
  for (int e = 0; e < kQKK; ++e) {
    const int half = e / 128, shift = 2 * ((e % 128) / 32), l = e % 32;
    r.q[e] = static_cast<uint8_t>((b.qs[32 * half + l] >> shift) & 3);
  }
}

// Sub-block t's low 4 bits, chunk c, row j, byte k: element 4c + k (low nibble) and 16 + 4c + k.
void put_nibbles(const SuperRow& r, int j, uint8_t (&qs)[kSubBlocks][4 * 32]) {
  for (int t = 0; t < kSubBlocks; ++t) {
    const uint8_t* q = r.q + 32 * t;
    for (int c = 0; c < 4; ++c) {
      for (int k = 0; k < 4; ++k) {
        qs[t][32 * c + 4 * j + k] =
            static_cast<uint8_t>((q[4 * c + k] & 0x0F) | ((q[16 + 4 * c + k] & 0x0F) << 4));
      }
    }
  }
}

template <typename P>
void put_row(const SuperRow& r, int j, P& p) {
  put_nibbles(r, j, p.qs);
  if constexpr (std::is_same_v<P, PackQ2_Kx8>) {
    p.d[j] = r.d;
    p.dmin[j] = r.dmin;
    for (int t = 0; t < kSubBlocks; ++t) {
      for (int h = 0; h < 2; ++h) {
        p.sc[t][j][h] = r.sc16[2 * t + h];
        p.mn[t][j][h] = r.mn16[2 * t + h];
      }
    }
  } else if constexpr (std::is_same_v<P, PackQ6_Kx8>) {
    p.d[j] = r.d;
    for (int t = 0; t < kSubBlocks; ++t) {
      p.sc[t][j][0] = r.sc16[2 * t];
      p.sc[t][j][1] = r.sc16[2 * t + 1];
      const uint8_t* q = r.q + 32 * t;
      for (int c = 0; c < 4; ++c) {
        for (int k = 0; k < 4; ++k) {
          for (int h = 0; h < 2; ++h) {
            const int bits = (q[16 * h + 4 * c + k] >> 4) & 3;
            p.qh[t][h][4 * j + k] |= static_cast<uint8_t>(bits << (2 * c));
          }
        }
      }
    }
  } else {
    p.d[j] = r.d;
    p.dmin[j] = r.dmin;
    for (int t = 0; t < kSubBlocks; ++t) {
      p.sc[t][j] = r.sc[t];
      p.mn[t][j] = r.mn[t];
    }
    if constexpr (std::is_same_v<P, PackQ5_Kx8>) {
      for (int t = 0; t < kSubBlocks; ++t) {
        const uint8_t* q = r.q + 32 * t;
        for (int c = 0; c < 4; ++c) {
          for (int k = 0; k < 4; ++k) {
            for (int h = 0; h < 2; ++h) {
              const uint32_t bit = (q[16 * h + 4 * c + k] >> 4) & 1;
              p.qh[t][c][h] |= bit << (4 * j + k);
            }
          }
        }
      }
    }
  }
}

template <typename Src, typename P, typename Unpack>
void pack_group(const Src* src, int64_t N, int64_t nb, int64_t g, P* dst, Unpack&& unpack) {
  for (int64_t b = 0; b < nb; ++b) {
    P& p = dst[g * nb + b];
    std::memset(&p, 0, sizeof(P));
    for (int j = 0; j < kGroupRows; ++j) {
      SuperRow r;
      const int64_t n = g * kGroupRows + j;
      if (n < N) unpack(src[n * nb + b], r);
      put_row(r, j, p);
    }
  }
}

template <typename Src, typename P, typename Unpack>
void pack_all(const void* w, int64_t N, int64_t K, void* out, ThreadPool* pool, Unpack&& unpack) {
  const int64_t nb = K / kQKK, groups = (N + kGroupRows - 1) / kGroupRows;
  const auto* src = static_cast<const Src*>(w);
  auto* dst = static_cast<P*>(out);
  auto pack_groups = [&](int64_t g0, int64_t g1) {
    for (int64_t g = g0; g < g1; ++g) pack_group<Src, P>(src, N, nb, g, dst, unpack);
  };
  if (pool != nullptr) {
    pool->parallel_for(groups, pack_groups);
  } else {
    pack_groups(0, groups);
  }
}

}  // namespace

size_t k_quant_pack_bytes(DType type) {
  switch (type) {
    case DType::Q4_K:
      return sizeof(PackQ4_Kx8);
    case DType::Q5_K:
      return sizeof(PackQ5_Kx8);
    case DType::Q3_K:
    case DType::Q6_K:
      return sizeof(PackQ6_Kx8);
    case DType::Q2_K:
      return sizeof(PackQ2_Kx8);
    default:
      return 0;
  }
}

void pack_k_quants(DType type, const void* w, int64_t N, int64_t K, void* out, ThreadPool* pool) {
  switch (type) {
    case DType::Q4_K:
      return pack_all<BlockQ4_K, PackQ4_Kx8>(w, N, K, out, pool, unpack_q45_k<BlockQ4_K>);
    case DType::Q5_K:
      return pack_all<BlockQ5_K, PackQ5_Kx8>(w, N, K, out, pool, unpack_q45_k<BlockQ5_K>);
    case DType::Q6_K:
      return pack_all<BlockQ6_K, PackQ6_Kx8>(w, N, K, out, pool, unpack_q6_k);
    case DType::Q3_K:
      return pack_all<BlockQ3_K, PackQ6_Kx8>(w, N, K, out, pool, unpack_q3_k);
    case DType::Q2_K:
      return pack_all<BlockQ2_K, PackQ2_Kx8>(w, N, K, out, pool, unpack_q2_k);
    default:
      return;
  }
}

}  // namespace llmserve::kernels::cpu
