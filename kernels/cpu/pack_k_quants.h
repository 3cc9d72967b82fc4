// Internal: the K-quant super-blocks (Q2_K .. Q6_K) repacked into the 8-row group blocks of
// packed_layout.h (Q3_K into PackQ6_Kx8, exactly).
#pragma once

#include <cstddef>
#include <cstdint>

#include "llmserve/kernels/dtype.h"
#include "llmserve/kernels/thread_pool.h"

namespace llmserve::kernels::cpu {

// Bytes of one group block (8 rows x 256 elements); 0 for other types.
size_t k_quant_pack_bytes(DType type);

// W[N, K] (K % 256 == 0) into ceil(N / 8) * K / 256 group blocks at out; rows past N are zero.
// On the pool's threads when given.
void pack_k_quants(DType type, const void* w, int64_t N, int64_t K, void* out, ThreadPool* pool);

}  // namespace llmserve::kernels::cpu
