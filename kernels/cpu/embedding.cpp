#include "llmserve/kernels/embedding.h"

#include "llmserve/kernels/dequantize.h"

namespace llmserve::kernels {

void embedding_lookup(DType type, const void* table, int64_t dim, const int32_t* ids, int64_t T,
                      float* out) {
  const size_t rb = row_bytes(type, dim);
  const auto* base = static_cast<const uint8_t*>(table);
  for (int64_t t = 0; t < T; ++t) {
    dequantize_row(type, base + static_cast<size_t>(ids[t]) * rb, out + t * dim, dim);
  }
}

}  // namespace llmserve::kernels
