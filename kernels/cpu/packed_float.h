// Internal: F16 and BF16 weights packed for the CPU matmul (the PackedWeight of those types), and
// F32 panels of operands made at run time (an encoder's attention).
//
// Layout: panels of kFloatPanelRows = 32 weight rows (the last padded with zero rows), one after
// the other. F16: panel element (k, j) at half k * 32 + j, so one 64-byte line holds the 32 rows'
// weights of column k. BF16: columns in pairs (K padded to even with a zero column), element
// (k, j) at half (k / 2) * 64 + 2 * j + k % 2, so a 32-bit lane holds one row's pair and a line
// 16 rows' pairs (even = lane << 16, odd = lane & 0xffff0000: two integer ops per 32 weights).
//
// Product: outer-product micro-kernels keep R activation rows x 2 vectors of weight rows in
// registers (AVX-512: up to 12 rows x 32 weight rows; AVX2: up to 6 rows x 16), so each weight
// load and conversion feeds R FMAs; activations are first interleaved per call (k-major, R rows
// side by side) so each is one broadcast. Decode (one or two rows) streams 2 to 4 panels at once
// with software prefetch instead.
//
// Precision: the weights become f32 exactly (vcvtph2ps for F16, a shift for BF16) and the
// activations stay f32, whatever ActPrecision says: each output is the f32 FMA chain
// y = fma(w[k], x[k], y) for k = 0, 1, ..., K - 1 from y = 0. So every result is bit-identical
// whatever M, the tiling, the thread count, or the instruction set (AVX2 or AVX-512). vdpbf16ps
// was measured and left out: on the development host (Xeon, family 6 model 207) it retires one
// per 2 cycles against two FMAs per cycle, i.e. half the multiply-adds per cycle of the f32 path
// even with one bf16 activation pass, and it would need two passes (x = hi + lo) to approach f32
// accuracy. AVX512-FP16 arithmetic would round the products to 11 bits, so it is not used either.
//
// FP8 e4m3 (F8_E4M3, with scales: fp8.h): element (k, j) at byte k * 32 + j, the K columns padded
// to a 64-byte multiple, then per scale group g (group = the checkpoint's block columns, or K for
// one scale per row) the 32 rows' f32 scales times 2^120. A kernel widens 16 (8) bytes to f32 bits
// by a sign-extend to 32 bits, a shift by 20 and a mask (0x87f00000: the sign and the 7 value
// bits under f32's exponent; the e4m3 value times 2^-120, exact, subnormals included as f32
// subnormals), multiplies by the scale vector (one rounding: the f32 value dequantize_fp8_row
// gives) and runs the same FMA chain. Three integer ops per 16 weights, where widening through
// f16 takes four uops (vcvtph2ps is two). Decode reads one byte per weight
// plus 4 bytes of scale per 32 x group weights. A scale of 2^8 or more (a weight beyond 114688)
// would overflow times 2^120: pack_fp8 refuses it (no checkpoint has one).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "llmserve/kernels/act_precision.h"
#include "llmserve/kernels/dtype.h"
#include "llmserve/kernels/fp8.h"
#include "llmserve/kernels/packed_weight.h"
#include "llmserve/kernels/thread_pool.h"

namespace llmserve::kernels::cpu {

inline constexpr int kFloatPanelRows = 32;

bool is_float_pack_type(DType type);  // F16, BF16 or F8_E4M3 (the matmul of these panels)
// F16 / BF16 with N, K > 0 (any K); F8_E4M3 packs only with its scales (pack_fp8).
bool can_pack_float(DType type, int64_t N, int64_t K);
// Bytes of the packed copy (a multiple of 64); group: F8_E4M3's scale columns.
size_t packed_float_bytes(DType type, int64_t N, int64_t K, int64_t group = 0);
// Writes the packed copy of W[N, K] (N rows of K halves) to out (packed_float_bytes, 64-byte
// aligned), on the pool's threads when one is given. Precondition: can_pack_float.
void pack_float(DType type, const void* w, int64_t N, int64_t K, void* out,
                ThreadPool* pool = nullptr);
// The FP8 panels of W[N, K] (e4m3 bytes) with scales whose block_cols is the group
// (packed_float_bytes(F8_E4M3, N, K, scales.block_cols) bytes at out, 64-byte aligned).
// Precondition: fp8_scales_packable.
bool fp8_scales_packable(const Fp8Scales& scales, int64_t N, int64_t K);  // every scale < 2^8
void pack_fp8(const uint8_t* w, const Fp8Scales& scales, int64_t N, int64_t K, void* out,
              ThreadPool* pool = nullptr);

// y_i[M, N_i] = x[M, K] . W_i^T for up to 8 packed F16 / BF16 weights of the same K (types may
// differ). `precision` is accepted for matmul_packed_multi's sake and ignored (exact f32, above).
void matmul_packed_float_multi(ThreadPool& pool, const float* x, int64_t M,
                               std::span<const PackedWeight* const> ws, std::span<float* const> ys,
                               ActPrecision precision);

// Per instruction set: y[r * ldy + n] = W[n] . x_r for n < valid, r < R <= max_rows, W being
// `panels` consecutive panels (panel_bytes apart) and x the R rows interleaved: x[k * R + r].
// prefetch: stream the weights with software prefetch (decode). group: F8_E4M3's scale columns
// (ignored by F16 / BF16).
using FloatTileFn = void (*)(const uint8_t* w, int64_t panel_bytes, int64_t panels, int64_t K,
                             int64_t group, const float* x, int R, float* y, int64_t ldy,
                             int64_t valid, bool prefetch);
// F32 panels with the R activation rows row-major (row r at x + r * ldx) instead of interleaved;
// accumulate: y += the products (y = otherwise).
using F32RowMajorFn = void (*)(const uint8_t* w, int64_t panel_bytes, int64_t panels, int64_t K,
                               const float* x, int64_t ldx, int R, float* y, int64_t ldy,
                               int64_t valid, bool accumulate);
struct FloatKernels {
  FloatTileFn f16 = nullptr, bf16 = nullptr, fp8 = nullptr, f32 = nullptr;
  F32RowMajorFn f32_row_major = nullptr;
  int max_rows = 1;
};
FloatKernels float_kernels_avx2();
FloatKernels float_kernels_avx512();  // compiled for AVX-512F: call only when the CPU has it
// The instruction set's kernels that matmul_packed_float_multi runs (AVX-512 unless forced off).
const FloatKernels& active_float_kernels();

// F32 panels, for an operand built at run time (an encoder's keys and values): element (k, j) of
// panel p at float p * K * 32 + k * 32 + j, rows past N zero. Run with FloatKernels::f32 (panel
// bytes K * 128); every output is the f32 FMA chain over k, as for F16 / BF16.
size_t packed_f32_floats(int64_t N, int64_t K);  // a multiple of 32
// Panels p in [p0, p1) of W[n][k] = src[n * ld + k] (W's rows strided by ld).
void pack_f32_rows(const float* src, int64_t ld, int64_t N, int64_t K, float* out, int64_t p0,
                   int64_t p1);
// Panels p in [p0, p1) of W[n][k] = src[k * ld + n] (W stored transposed: its columns strided).
void pack_f32_columns(const float* src, int64_t ld, int64_t N, int64_t K, float* out, int64_t p0,
                      int64_t p1);

}  // namespace llmserve::kernels::cpu
