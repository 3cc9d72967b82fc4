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

struct PackedKernels {
  GroupGemmFn q4_0 = nullptr, q4_1 = nullptr, q8_0 = nullptr;
  int max_rows = 1;
  int max_tokens_x2 = 1;  // row pairs per call with kSumRowPairs
  // Optional kernels over activations re-laid by pair_act_blocks (same results, bit for bit);
  // q8_0_pairs wants them re-laid with q8_0_correction. One call covers up to pair_groups
  // consecutive groups (valid <= 8 * pair_groups; group i at group + i * nb blocks).
  GroupGemmFn q4_0_pairs = nullptr, q4_1_pairs = nullptr, q8_0_pairs = nullptr;
  int max_rows_pairs = 1;
  int max_tokens_x2_pairs = 1;
  int pair_groups = 1;
  // Optional q8x2 kernels for many tokens over a tile of activations in the wide layout (see
  // WideGemmFn; min_tokens_wide <= R / 2 <= max_tokens_wide): each weight block pair is unpacked
  // once for all the call's tokens. Same results, bit for bit.
  WideGemmFn q4_0_wide = nullptr, q4_1_wide = nullptr, q8_0_wide = nullptr;
  int min_tokens_wide = 0, max_tokens_wide = 0;
};

PackedKernels packed_kernels_avx2();
// Compiled for AVX-512 VNNI: call only when the CPU has it. `pairs`: with the 512-bit Q4 pair
// kernels (else the 256-bit kernels alone, kept for comparisons).
PackedKernels packed_kernels_avx512_vnni(bool pairs = true);
// Fills the wide kernels of k (packed_gemm_avx512_wide.cpp; same CPU requirement).
void add_wide_kernels_avx512_vnni(PackedKernels& k);

}  // namespace llmserve::kernels::cpu
