// Weights repacked once at load into groups of 8 interleaved rows, and the matmul over them.
// A group block holds the 8 rows' scales side by side and their quants interleaved 4 bytes per
// row, so one 32-byte load feeds 8 output rows and each weight load is reused for up to 4 (AVX2) or
// 8 (AVX-512) activation rows (the register-blocked micro-kernel). Same bytes as the source; rows
// are padded to a multiple of 8 with zero blocks. F16 / BF16 weights are packed in their own
// panel layout (see can_pack_weight).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "llmserve/kernels/act_precision.h"
#include "llmserve/kernels/dtype.h"
#include "llmserve/kernels/fp8.h"
#include "llmserve/kernels/thread_pool.h"

namespace llmserve::kernels {

class PackedWeight {
 public:
  PackedWeight() = default;

  bool empty() const { return data_ == nullptr; }
  DType type() const { return type_; }
  int64_t rows() const { return rows_; }  // N, before padding
  int64_t cols() const { return cols_; }  // K
  const void* data() const { return data_.get(); }
  size_t bytes() const { return bytes_; }
  // F8_E4M3: the columns each scale covers (the checkpoint's block columns, or K); 0 otherwise.
  int64_t group() const { return group_; }

 private:
  friend PackedWeight pack_weight(DType type, const void* w, int64_t N, int64_t K,
                                  ThreadPool* pool);
  friend PackedWeight pack_weight_fp8(const void* w, const Fp8Scales& scales, int64_t N, int64_t K,
                                      ThreadPool* pool);
  struct Free {
    void operator()(void* p) const;
  };
  std::unique_ptr<uint8_t, Free> data_;
  size_t bytes_ = 0;
  DType type_ = DType::F32;
  int64_t rows_ = 0, cols_ = 0;
  int64_t group_ = 0;
};

// True for the types pack_weight handles when N, K > 0 and K is a multiple of the block: Q4_0,
// Q4_1, Q8_0 (K % 32 == 0); Q2_K, Q3_K, Q4_K, Q5_K, Q6_K (K % 256 == 0; docs/CPU_KERNELS.md).
// Also F16 and BF16 for any N, K > 0: those go in panels of 32 rows and their matmul is exact
// f32 whatever ActPrecision (kernels/cpu/packed_float.h); AVX-512F is enough for their wide path.
bool can_pack_weight(DType type, int64_t N, int64_t K);

// FP8 e4m3 W[N, K] (N rows of K bytes) with its scales (fp8.h) into panels of 32 rows, the
// scales beside them (kernels/cpu/packed_float.h); the matmul widens each weight to f32 and
// multiplies it by its scale in registers (exactly dequantize_fp8_row's f32 product), then runs
// the f32 FMA chain of the F16 / BF16 panels. Empty result when N or K is not positive, the
// scales are empty, a scale is negative, NaN or 256 or more (weights beyond 114688), or out of
// memory.
PackedWeight pack_weight_fp8(const void* w, const Fp8Scales& scales, int64_t N, int64_t K,
                             ThreadPool* pool = nullptr);

// Repacks W[N, K] (N rows of row_bytes(type, K) bytes), on the pool's threads when given. Empty
// result when !can_pack_weight or out of memory.
PackedWeight pack_weight(DType type, const void* w, int64_t N, int64_t K,
                         ThreadPool* pool = nullptr);

// y[M, N] = x[M, K] . W^T for a packed W; activations quantized per 32 inside the call, in one or
// two 8-bit passes (act_precision.h). Each y row depends only on its own x row: bit-identical
// whatever M, the other rows, the thread count, or the instruction set picked (AVX2 or AVX-512 VNNI
// give the same integers). Precondition: !w.empty(); y does not alias x.
void matmul_packed(ThreadPool& pool, const float* x, int64_t M, const PackedWeight& w, float* y,
                   ActPrecision precision = ActPrecision::kQ8x2);

// y_i[M, N_i] = x[M, K] . W_i^T for up to 8 packed weights of the same K (q / k / v, gate / up):
// x is quantized once and one parallel_for covers every output; each y_i equals what
// matmul_packed gives. Preconditions: as matmul_packed, all ws[i]->cols() equal, ys.size() ==
// ws.size() <= 8.
void matmul_packed_multi(ThreadPool& pool, const float* x, int64_t M,
                         std::span<const PackedWeight* const> ws, std::span<float* const> ys,
                         ActPrecision precision = ActPrecision::kQ8x2);

// One row segment of a grouped matmul: ys[i][r - begin, N_i] = x[r, K] . ws[i]^T for the x rows r
// in [begin, end) (ys[i] points at the segment's first output row).
struct PackedSegment {
  int64_t begin = 0, end = 0;
  std::span<const PackedWeight* const> ws;
  std::span<float* const> ys;
};

// Each segment's weights over its own rows of one x (a mixture-of-experts layer: one segment per
// chosen expert), with x quantized once and one parallel_for over every segment's (weight, output
// rows, input tile) tasks, so the threads split across segments as well as rows. Each y row equals
// what matmul_packed gives. Preconditions: segments disjoint; every weight non-empty with the
// same K (cols); ys[i] does not alias x.
void matmul_packed_grouped(ThreadPool& pool, const float* x,
                           std::span<const PackedSegment> segments,
                           ActPrecision precision = ActPrecision::kQ8x2);

// Instruction set of the packed micro-kernels: kAuto picks AVX-512 VNNI (512-bit Q4 kernels)
// when the CPU has it; kAvx512Vnni256 keeps VNNI to 256-bit vectors. All give the same bits.
// For tests and benchmarks; not thread-safe against concurrent matmuls.
enum class PackedIsa { kAuto, kAvx2, kAvx512Vnni, kAvx512Vnni256 };
void set_packed_isa(PackedIsa isa);
PackedIsa active_packed_isa();  // kAvx2, kAvx512Vnni or kAvx512Vnni256

bool cpu_has_avx512_vnni();

}  // namespace llmserve::kernels
