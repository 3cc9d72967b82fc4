// Outputs of one fused GEMM seen as separate matrices: after matmul_multi over fused weights,
// ys[i] names a view (a pointer into the fused output and its row stride) that the consumers
// (rope, write_kv, attention, silu_mul) resolve. Pure bookkeeping, no device code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace llmserve {

class FusedViews {
 public:
  struct View {
    float* data = nullptr;
    int64_t row_stride = 0;  // floats
  };

  // `name` (a buffer the graph allocated) now reads as `view`.
  void set(const float* name, View view);
  // `name` holds its own data again (an op wrote to it directly).
  void erase(const float* name);
  // The view registered for `p`, or p itself with `natural_stride`.
  View resolve(const float* p, int64_t natural_stride) const;
  size_t size() const { return views_.size(); }

 private:
  std::vector<std::pair<const float*, View>> views_;
};

}  // namespace llmserve
