// Internal: what the packed matmul driver needs to know of each packed type: its group block
// size, its micro-kernel format, the activation layout its kernels read, and the kernel table of
// the active instruction set.
#pragma once

#include <cstddef>

#include "kernels/cpu/packed_layout.h"
#include "llmserve/kernels/dtype.h"
#include "llmserve/kernels/packed_weight.h"

namespace llmserve::kernels::cpu {

// Bytes of a group (8 rows) per 32 elements of K; 0 for types that do not pack in groups.
size_t group_block_bytes(DType t);
PackFormat format_of(DType t);

// Weights whose kernels share one activation layout: 4-bit with a min term (pairs keep ds), Q8_0
// (pairs take the unsigned-weight correction), Q6_K-like (ds slots hold half-block sums), or f32
// activations (F16 / BF16 panels, packed_float.h).
enum class ActLayout { kQ4, kQ8_0, kQ6, kFloat };
ActLayout act_layout_of(DType t);

const PackedKernels& packed_kernels_for(PackedIsa isa);

}  // namespace llmserve::kernels::cpu
