#include "llmserve/kernels/packed_weight.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/cpu/pack_k_quants.h"
#include "kernels/cpu/packed_float.h"
#include "kernels/cpu/packed_formats.h"
#include "kernels/cpu/packed_layout.h"
#include "llmserve/kernels/host_memory.h"
#include "llmserve/kernels/quant_blocks.h"

namespace llmserve::kernels {
namespace {

using cpu::group_block_bytes;
using cpu::kGroupRows;

// Interleaves `chunks` 4-byte pieces of each of the 8 source rows' quants into dst.
void interleave(const uint8_t* const* src_qs, int chunks, uint8_t* dst) {
  for (int c = 0; c < chunks; ++c) {
    for (int j = 0; j < kGroupRows; ++j) std::memcpy(dst + c * 32 + j * 4, src_qs[j] + c * 4, 4);
  }
}

template <typename Src, typename Dst>
void pack_group_block(const Src* const* rows, Dst& out) {
  const uint8_t* qs[kGroupRows];
  for (int j = 0; j < kGroupRows; ++j) {
    out.d[j] = rows[j]->d;
    if constexpr (std::is_same_v<Src, BlockQ4_1>) out.m[j] = rows[j]->m;
    qs[j] = reinterpret_cast<const uint8_t*>(rows[j]->qs);
  }
  interleave(qs, static_cast<int>(sizeof(Src::qs) / 4), reinterpret_cast<uint8_t*>(out.qs));
}

template <typename Src, typename Dst>
void pack_one_group(const Src* src, int64_t N, int64_t nb, int64_t g, const Src& zero, Dst* out) {
  for (int64_t b = 0; b < nb; ++b) {
    const Src* rows[kGroupRows];
    for (int j = 0; j < kGroupRows; ++j) {
      const int64_t n = g * kGroupRows + j;
      rows[j] = n < N ? src + n * nb + b : &zero;
    }
    pack_group_block(rows, out[g * nb + b]);
  }
}

template <typename Src, typename Dst>
void pack_all(const void* w, int64_t N, int64_t K, Dst* out, ThreadPool* pool) {
  const int64_t nb = K / kQK, groups = (N + kGroupRows - 1) / kGroupRows;
  const Src zero{};
  const auto* src = static_cast<const Src*>(w);
  auto pack_groups = [&](int64_t g0, int64_t g1) {
    for (int64_t g = g0; g < g1; ++g) pack_one_group(src, N, nb, g, zero, out);
  };
  if (pool != nullptr) {
    pool->parallel_for(groups, pack_groups);
  } else {
    pack_groups(0, groups);
  }
}

bool detect_vnni() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512bw");
}

std::atomic<PackedIsa> g_requested{PackedIsa::kAuto};

PackedIsa resolve(PackedIsa want) {
  if (want == PackedIsa::kAvx2 || !cpu_has_avx512_vnni()) return PackedIsa::kAvx2;
  return want == PackedIsa::kAvx512Vnni256 ? PackedIsa::kAvx512Vnni256 : PackedIsa::kAvx512Vnni;
}

}  // namespace

namespace cpu {

size_t group_block_bytes(DType t) {
  switch (t) {
    case DType::Q4_0:
      return sizeof(PackQ4_0x8);
    case DType::Q4_1:
      return sizeof(PackQ4_1x8);
    case DType::Q8_0:
      return sizeof(PackQ8_0x8);
    default:
      return k_quant_pack_bytes(t) / kSubBlocks;
  }
}

PackFormat format_of(DType t) {
  switch (t) {
    case DType::Q4_0:
      return kPackQ4_0;
    case DType::Q4_1:
      return kPackQ4_1;
    case DType::Q8_0:
      return kPackQ8_0;
    case DType::Q4_K:
      return kPackQ4_K;
    case DType::Q5_K:
      return kPackQ5_K;
    case DType::Q2_K:
      return kPackQ2_K;
    default:
      return kPackQ6_K;  // Q6_K, Q3_K
  }
}

ActLayout act_layout_of(DType t) {
  if (is_float_pack_type(t)) return ActLayout::kFloat;
  switch (format_of(t)) {
    case kPackQ8_0:
      return ActLayout::kQ8_0;
    case kPackQ6_K:
    case kPackQ2_K:
      return ActLayout::kQ6;
    default:
      return ActLayout::kQ4;
  }
}

const PackedKernels& packed_kernels_for(PackedIsa isa) {
  static const PackedKernels avx2 = packed_kernels_avx2();
  static const PackedKernels vnni = cpu_has_avx512_vnni() ? packed_kernels_avx512_vnni(true) : avx2;
  static const PackedKernels vnni256 =
      cpu_has_avx512_vnni() ? packed_kernels_avx512_vnni(false) : avx2;
  return isa == PackedIsa::kAvx512Vnni ? vnni : isa == PackedIsa::kAvx512Vnni256 ? vnni256 : avx2;
}

}  // namespace cpu

void PackedWeight::Free::operator()(void* p) const {
  host_free(p);
}

bool cpu_has_avx512_vnni() {
  static const bool has = detect_vnni();
  return has;
}

void set_packed_isa(PackedIsa isa) {
  g_requested.store(isa);
}
PackedIsa active_packed_isa() {
  return resolve(g_requested.load());
}

bool can_pack_weight(DType type, int64_t N, int64_t K) {
  if (cpu::is_float_pack_type(type)) return cpu::can_pack_float(type, N, K);
  const int64_t block = cpu::k_quant_pack_bytes(type) != 0 ? kQKK : kQK;
  return group_block_bytes(type) != 0 && N > 0 && K > 0 && K % block == 0;
}

PackedWeight pack_weight_fp8(const void* w, const Fp8Scales& scales, int64_t N, int64_t K,
                             ThreadPool* pool) {
  PackedWeight p;
  if (N <= 0 || K <= 0 || scales.empty() || scales.block_rows <= 0 || scales.block_cols <= 0 ||
      !cpu::fp8_scales_packable(scales, N, K)) {
    return p;
  }
  const size_t bytes = cpu::packed_float_bytes(DType::F8_E4M3, N, K, scales.block_cols);
  void* mem = host_alloc(bytes);
  if (mem == nullptr) return p;
  cpu::pack_fp8(static_cast<const uint8_t*>(w), scales, N, K, mem, pool);
  p.data_.reset(static_cast<uint8_t*>(mem));
  p.bytes_ = bytes;
  p.type_ = DType::F8_E4M3;
  p.rows_ = N;
  p.cols_ = K;
  p.group_ = scales.block_cols;
  return p;
}

PackedWeight pack_weight(DType type, const void* w, int64_t N, int64_t K, ThreadPool* pool) {
  PackedWeight p;
  if (!can_pack_weight(type, N, K)) return p;
  const int64_t groups = (N + kGroupRows - 1) / kGroupRows;
  const size_t bytes = cpu::is_float_pack_type(type)
                           ? cpu::packed_float_bytes(type, N, K)
                           : static_cast<size_t>(groups * (K / kQK)) * group_block_bytes(type);
  void* mem = host_alloc((bytes + 63) / 64 * 64);
  if (mem == nullptr) return p;
  switch (type) {
    case DType::Q4_0:
      pack_all<BlockQ4_0>(w, N, K, static_cast<cpu::PackQ4_0x8*>(mem), pool);
      break;
    case DType::Q4_1:
      pack_all<BlockQ4_1>(w, N, K, static_cast<cpu::PackQ4_1x8*>(mem), pool);
      break;
    case DType::Q8_0:
      pack_all<BlockQ8_0>(w, N, K, static_cast<cpu::PackQ8_0x8*>(mem), pool);
      break;
    case DType::F16:
    case DType::BF16:
      cpu::pack_float(type, w, N, K, mem, pool);
      break;
    default:
      cpu::pack_k_quants(type, w, N, K, mem, pool);
      break;
  }
  p.data_.reset(static_cast<uint8_t*>(mem));
  p.bytes_ = bytes;
  p.type_ = type;
  p.rows_ = N;
  p.cols_ = K;
  return p;
}

}  // namespace llmserve::kernels
