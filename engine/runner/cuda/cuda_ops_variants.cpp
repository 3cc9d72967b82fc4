// CudaOps: the ops Gemma 3 adds to the Llama graph (scale, add_normed, softcap, GeGLU).
#include "engine/runner/cuda/cuda_ops.h"
#include "llmserve/kernels/cuda/model_variants.h"

namespace llmserve {

namespace kc = kernels::cuda;

void CudaOps::scale(float* x, int64_t n_rows, int64_t cols, float s) {
  if (skip()) return;
  check(kc::scale(x, rows(n_rows) * cols, s, stream_), "scale");
}

void CudaOps::add_normed(float* residual, const float* x, const Weight& w, int64_t n_rows,
                         float eps) {
  if (skip()) return;
  const FusedViews::View v = views_.resolve(x, w.cols);
  if (v.row_stride != w.cols) {
    check(cudaErrorInvalidValue, "add_normed: x must be a plain f32 matrix");
    return;
  }
  check(kc::add_normed(residual, v.data, static_cast<const float*>(w.data), rows(n_rows), w.cols,
                       eps, stream_),
        "add_normed");
}

void CudaOps::softcap(float* x, int64_t n_rows, int64_t cols, float cap) {
  if (skip()) return;
  check(kc::softcap(x, rows(n_rows) * cols, cap, stream_), "softcap");
}

void CudaOps::gelu_tanh_mul(const float* gate, const float* up, int64_t n_rows, int64_t cols,
                            float* out) {
  if (skip()) return;
  const FusedViews::View g = views_.resolve(gate, cols), u = views_.resolve(up, cols);
  views_.erase(out);
  kc::SiluMulArgs a;
  a.gate = g.data;
  a.gate_stride = g.row_stride;
  a.up = u.data;
  a.up_stride = u.row_stride;
  a.out = reinterpret_cast<uint16_t*>(out);
  a.out_stride = 2 * cols;
  a.rows = rows(n_rows);
  a.cols = cols;
  check(kc::gelu_tanh_mul(a, stream_), "gelu_tanh_mul");
}

}  // namespace llmserve
