// Internal: the group blocks of packed weights (see packed_weight.h). A group block covers 8 rows
// and 32 columns. Quants are interleaved 4 bytes per row: 32-byte chunk c holds, in its 32-bit
// lane j, bytes 4c..4c+3 of row j's source block. For Q4 those bytes hold elements 4c..4c+3
// (low nibbles) and 16+4c..16+4c+3 (high nibbles); for Q8_0, elements 4c..4c+3.
#pragma once

#include <cstdint>

namespace llmserve::kernels::cpu {

inline constexpr int kGroupRows = 8;

struct PackQ4_0x8 {
  uint16_t d[kGroupRows];  // f16
  uint8_t qs[4 * 32];
};
struct PackQ4_1x8 {
  uint16_t d[kGroupRows], m[kGroupRows];  // f16
  uint8_t qs[4 * 32];
};
struct PackQ8_0x8 {
  uint16_t d[kGroupRows];  // f16
  int8_t qs[8 * 32];
};
// The K-quants: one group block covers 8 rows and a 256-element super-block, i.e. kSubBlocks
// 32-element blocks whose quants sit as PackQ4_0x8::qs (low nibbles elements 4c..4c+3, high
// nibbles 16+4c..16+4c+3 of chunk c). Kernels address 32-element block i of a group at
// (super i / 8, sub i % 8): group w of nb blocks starts at super w * nb / 8 (nb % 8 == 0).
inline constexpr int kSubBlocks = 8;
// Q4_K: x = d * sc * q - dmin * mn, q in 0..15, sc / mn 6-bit per (sub-block, row).
struct PackQ4_Kx8 {
  uint8_t qs[kSubBlocks][4 * 32];
  uint16_t d[kGroupRows], dmin[kGroupRows];  // f16
  uint8_t sc[kSubBlocks][kGroupRows], mn[kSubBlocks][kGroupRows];
};
// Q5_K: as Q4_K with q in 0..31; the 5th bits of chunk c of sub-block s as two masks, low and
// high nibbles: bit 4j + k of qh[s][c][h] is the 5th bit of row j's element 16h + 4c + k.
struct PackQ5_Kx8 {
  uint8_t qs[kSubBlocks][4 * 32];
  uint32_t qh[kSubBlocks][4][2];
  uint16_t d[kGroupRows], dmin[kGroupRows];  // f16
  uint8_t sc[kSubBlocks][kGroupRows], mn[kSubBlocks][kGroupRows];
};
// Q6_K (and Q3_K, re-expressed exactly): x = d * sc[h] * (q - 32), q in 0..63, one int8 scale
// per 16 elements: sc[s][j][0] for elements 0..15 of sub-block s (the low nibbles), [1] for
// 16..31. The low 4 bits as Q4; bits 2c, 2c + 1 of byte i of qh[s][h] are the high 2 bits of the
// quant that byte i of chunk c's low (h = 0) or high (h = 1) nibbles holds.
struct PackQ6_Kx8 {
  uint8_t qs[kSubBlocks][4 * 32];
  uint8_t qh[kSubBlocks][2][32];
  int8_t sc[kSubBlocks][kGroupRows][2];
  uint16_t d[kGroupRows];  // f16
};
// Q2_K: x = d * sc[h] * q - dmin * mn[h], q in 0..3 (in the low-4-bit layout of Q6_K), 4-bit
// scales and mins per 16 elements as Q6_K's scales.
struct PackQ2_Kx8 {
  uint8_t qs[kSubBlocks][4 * 32];
  int8_t sc[kSubBlocks][kGroupRows][2];
  int8_t mn[kSubBlocks][kGroupRows][2];
  uint16_t d[kGroupRows], dmin[kGroupRows];  // f16
};
static_assert(sizeof(PackQ2_Kx8) == 1312 && sizeof(PackQ2_Kx8) % kSubBlocks == 0);
static_assert(sizeof(PackQ4_Kx8) == 1184 && sizeof(PackQ4_Kx8) % kSubBlocks == 0);
static_assert(sizeof(PackQ5_Kx8) == 1440 && sizeof(PackQ5_Kx8) % kSubBlocks == 0);
static_assert(sizeof(PackQ6_Kx8) == 1680 && sizeof(PackQ6_Kx8) % kSubBlocks == 0);

template <typename P>
inline constexpr bool kIsSuperPack = false;
template <>
inline constexpr bool kIsSuperPack<PackQ4_Kx8> = true;
template <>
inline constexpr bool kIsSuperPack<PackQ5_Kx8> = true;
template <>
inline constexpr bool kIsSuperPack<PackQ6_Kx8> = true;
template <>
inline constexpr bool kIsSuperPack<PackQ2_Kx8> = true;
// Bytes of a group per 32-element block.
template <typename P>
inline constexpr size_t kBlockBytes = kIsSuperPack<P> ? sizeof(P) / kSubBlocks : sizeof(P);

static_assert(sizeof(PackQ4_0x8) == 8 * 18);
static_assert(sizeof(PackQ4_1x8) == 8 * 20);
static_assert(sizeof(PackQ8_0x8) == 8 * 34);

struct ActQ8;

// GroupGemmFn flags. kPrefetchWeights: prefetch the weights ahead (worth it on the first pass
// over a group, not on repeats). kSumRowPairs: x rows come in pairs (a value and its q8x2
// residual, see quantize_row_act_q8x2) and y gets each pair's product as one row (R even).
inline constexpr unsigned kPrefetchWeights = 1, kSumRowPairs = 2;

// One group's outputs for R activation rows: y[r * y_stride + j] = W[row j] . x_r for j < valid
// (valid <= 8), r < R <= max_rows. x holds R rows of nb consecutive ActQ8 blocks.
using GroupGemmFn = void (*)(const void* group, const ActQ8* x, int64_t nb, int R, float* y,
                             int64_t y_stride, int valid, unsigned flags);

// The wide layout of a tile of `tile_rows` pair-laid activation rows (ActQ8Pair, see
// pair_act_blocks) of nb blocks: pair p of tile row r at pairs[p * tile_rows + r], then with nb odd
// the last block of row r at (ActQ8*)(pairs + np * tile_rows)[r]; nb * tile_rows ActQ8 in all.
// The rows of one pair are adjacent, so a kernel reaches every token at a fixed offset. For Q4
// weights the main rows' pair ds hold main.ds + res.ds.
inline int64_t wide_odd_block_index(int64_t nb, int64_t tile_rows, int64_t r) {
  return (nb / 2) * 2 * tile_rows + r;  // in ActQ8 units from the tile start
}

// One group's outputs for the q8x2 tokens of tile rows [first_row, first_row + R) (R even, main
// and residual rows alternating): y[t * y_stride + j] = W[row j] . x_t for j < valid <= 8.
using WideGemmFn = void (*)(const void* group, const ActQ8* tile, int64_t tile_rows,
                            int64_t first_row, int64_t nb, int R, float* y, int64_t y_stride,
                            int valid, unsigned flags);

// The packed formats; Q3_K packs as Q6_K (exactly).
enum PackFormat {
  kPackQ4_0,
  kPackQ4_1,
  kPackQ8_0,
  kPackQ4_K,
  kPackQ5_K,
  kPackQ6_K,
  kPackQ2_K,
  kPackFormats
};

struct PackedKernels {
  GroupGemmFn rows[kPackFormats] = {};
  int max_rows = 1;
  // Optional single-pass kernels for calls of more than max_rows rows (up to max_rows_many), in
  // place of rows: each weight block unpacked once for all of them. Same results, bit for bit.
  GroupGemmFn rows_many[kPackFormats] = {};
  int max_rows_many = 0;
  int max_tokens_x2 = 1;  // row pairs per call with kSumRowPairs
  // Optional kernels over activations re-laid by pair_act_blocks (same results, bit for bit);
  // the Q8_0 one wants them re-laid with q8_0_correction. One call covers up to pair_groups
  // consecutive groups (valid <= 8 * pair_groups; group i at group + i * nb blocks).
  GroupGemmFn pairs[kPackFormats] = {};
  int max_rows_pairs = 1;
  int max_tokens_x2_pairs = 1;
  int pair_groups = 1;
  // Optional q8x2 kernels for many tokens over a tile of activations in the wide layout (see
  // WideGemmFn; min_tokens_wide <= R / 2 <= max_tokens_wide): each weight block pair is unpacked
  // once for all the call's tokens. Same results, bit for bit.
  WideGemmFn wide[kPackFormats] = {};
  // The same for single-pass (q8) rows, R of them (one per token, no kSumRowPairs): the tile's
  // rows are pair-laid single rows with their own ds. Same results as the pair kernels, bit for
  // bit.
  WideGemmFn wide_x1[kPackFormats] = {};
  int min_tokens_wide = 0, max_tokens_wide = 0;
};

PackedKernels packed_kernels_avx2();
// Fills the AVX2 rows_many kernels of k (packed_gemm_avx2_unpacked.cpp).
void add_unpacked_kernels_avx2(PackedKernels& k);
// Compiled for AVX-512 VNNI: call only when the CPU has it. `pairs`: with the 512-bit Q4 pair
// kernels (else the 256-bit kernels alone, kept for comparisons).
PackedKernels packed_kernels_avx512_vnni(bool pairs = true);
// Fills the wide kernels of k (packed_gemm_avx512_wide.cpp; same CPU requirement).
void add_wide_kernels_avx512_vnni(PackedKernels& k);

}  // namespace llmserve::kernels::cpu
