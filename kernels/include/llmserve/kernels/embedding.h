// Token embedding lookup from a table kept in its stored type.
#pragma once

#include <cstdint>

#include "llmserve/kernels/dtype.h"

namespace llmserve::kernels {

// out[T, dim] = dequantized rows ids[t] of table[vocab, dim] (rows of row_bytes(type, dim)).
// Preconditions: dtype can be dequantized; 0 <= ids[t] < vocab (callers validate token ids).
void embedding_lookup(DType type, const void* table, int64_t dim, const int32_t* ids, int64_t T,
                      float* out);

}  // namespace llmserve::kernels
