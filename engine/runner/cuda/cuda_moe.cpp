// CudaOps' mixture-of-experts FFN: router GEMM (cuBLAS), then routing, grouping by expert, the
// gathered bf16 rows, grouped gate / up GEMMs, SwiGLU, grouped down GEMM and the weighted sum per
// token, all enqueued on the stream with sizes fixed by T (kernels/cuda/moe.h).
#include <algorithm>
#include <string>

#include "engine/runner/cuda/cuda_device.h"
#include "engine/runner/cuda/cuda_ops.h"
#include "llmserve/kernels/cuda/elementwise.h"
#include "llmserve/kernels/cuda/moe.h"
#include "llmserve/kernels/dequantize.h"

namespace llmserve {

namespace kc = kernels::cuda;
using kernels::DType;

Result<std::vector<Weight>> CudaOps::prepare_experts(std::span<const TensorView> ts) {
  if (ts.empty()) return invalid_argument("cuda ops: no experts to prepare");
  const int64_t N = ts[0].rows(), K = ts[0].cols();
  for (const TensorView& t : ts) {
    if (t.shape.size() != 2 || t.rows() != N || t.cols() != K) {
      return invalid_argument("cuda ops: experts of different shapes (" + t.name + ")");
    }
    if (t.type != DType::BF16 && !kernels::dtype_can_dequantize(t.type)) {
      return unimplemented("cuda ops: cannot convert " + t.name + " of type " +
                           std::string(kernels::dtype_name(t.type)) + " to bf16");
    }
  }
  const size_t per_expert = static_cast<size_t>(N * K) * 2;
  LLMSERVE_ASSIGN_OR_RETURN(void* base, device_alloc(per_expert * ts.size()));
  std::vector<Weight> out;
  auto* at = static_cast<uint8_t*>(base);
  for (const TensorView& t : ts) {
    LLMSERVE_RETURN_IF_ERROR(upload_matrix(t, at));
    out.push_back(Weight{DType::BF16, at, N, K});
    at += per_expert;
  }
  LLMSERVE_RETURN_IF_ERROR(cuda_status(cudaStreamSynchronize(stream_), "expert upload"));
  return out;
}

Status CudaOps::reserve_moe(const MoeSpec& spec, int64_t max_tokens) {
  if (spec.num_experts <= 0 || spec.num_experts > 8192 || spec.top_k <= 0 || spec.top_k > 16 ||
      spec.top_k > spec.num_experts || spec.hidden <= 0 || spec.expert_ffn <= 0) {
    return invalid_argument("cuda ops: MoE needs 1..8192 experts and top_k in 1..16");
  }
  const int64_t T = std::max<int64_t>(max_tokens, options_.max_num_seqs);
  const int64_t P = T * spec.top_k;
  if (kc::moe_max_tiles(P, spec.num_experts) > 65535) {
    return invalid_argument("cuda ops: too many MoE rows per step (" + std::to_string(P) + ")");
  }
  auto floats = [&](float*& p, int64_t n) -> Status {
    LLMSERVE_ASSIGN_OR_RETURN(void* d, device_alloc(static_cast<size_t>(n) * 4));
    p = static_cast<float*>(d);
    return Status::ok();
  };
  auto ints = [&](int32_t*& p, int64_t n) -> Status {
    LLMSERVE_ASSIGN_OR_RETURN(void* d, device_alloc(static_cast<size_t>(n) * 4));
    p = static_cast<int32_t*>(d);
    return Status::ok();
  };
  auto halves = [&](uint16_t*& p, int64_t n) -> Status {
    LLMSERVE_ASSIGN_OR_RETURN(void* d, device_alloc(static_cast<size_t>(n) * 2));
    p = static_cast<uint16_t*>(d);
    return Status::ok();
  };
  MoeScratch& m = moe_;
  LLMSERVE_RETURN_IF_ERROR(floats(m.logits, T * spec.num_experts));
  LLMSERVE_RETURN_IF_ERROR(floats(m.weights, P));
  LLMSERVE_RETURN_IF_ERROR(floats(m.gate, P * spec.expert_ffn));
  LLMSERVE_RETURN_IF_ERROR(floats(m.up, P * spec.expert_ffn));
  LLMSERVE_RETURN_IF_ERROR(floats(m.yg, P * spec.hidden));
  LLMSERVE_RETURN_IF_ERROR(ints(m.ids, P));
  LLMSERVE_RETURN_IF_ERROR(ints(m.offsets, spec.num_experts + 1));
  LLMSERVE_RETURN_IF_ERROR(ints(m.rows, P));
  LLMSERVE_RETURN_IF_ERROR(ints(m.slot_row, P));
  LLMSERVE_RETURN_IF_ERROR(ints(m.tiles, 2 * kc::moe_max_tiles(P, spec.num_experts)));
  LLMSERVE_RETURN_IF_ERROR(halves(m.xg, P * spec.hidden));
  LLMSERVE_RETURN_IF_ERROR(halves(m.act, P * spec.expert_ffn));
  m.max_rows = T;
  m.max_pairs = P;
  m.num_experts = spec.num_experts;
  return Status::ok();
}

void CudaOps::moe_ffn(const float* x, int64_t T, const MoeLayerWeights& w, float* out) {
  if (skip()) return;
  const int64_t t = rows(T);
  if (t <= 0) return;
  const int64_t E = w.num_experts(), H = w.router.cols, F = w.gate[0].rows;
  const int k = w.top_k;
  const int64_t P = t * k;
  if (t > moe_.max_rows || P > moe_.max_pairs || E > moe_.num_experts) {
    record(invalid_argument("cuda ops: MoE step larger than reserve_moe's"));
    return;
  }
  // The experts are one array each (prepare_experts): expert e at base + e * rows * cols.
  for (const std::vector<Weight>* ws : {&w.gate, &w.up, &w.down}) {
    const auto* base = static_cast<const uint16_t*>((*ws)[0].data);
    if ((*ws)[E - 1].data != base + (E - 1) * (*ws)[0].rows * (*ws)[0].cols) {
      record(invalid_argument("cuda ops: experts not prepared by prepare_experts"));
      return;
    }
  }
  views_.erase(out);
  const auto* xb = reinterpret_cast<const uint16_t*>(x);
  gemm(xb, 2 * H, t, w.router.data, E, H, nullptr, moe_.logits, E);
  check(kc::moe_route(moe_.logits, t, static_cast<int>(E), k, w.norm_topk_prob, moe_.ids,
                      moe_.weights, stream_),
        "moe_route");
  check(kc::moe_group(moe_.ids, t, k, static_cast<int>(E), moe_.offsets, moe_.rows, moe_.slot_row,
                      moe_.tiles, stream_),
        "moe_group");
  check(kc::moe_gather_bf16(xb, 2 * H, moe_.rows, k, P, H, moe_.xg, stream_), "moe_gather");
  kc::MoeGemmArgs g;
  g.tiles = moe_.tiles;
  g.offsets = moe_.offsets;
  g.max_tiles = kc::moe_max_tiles(P, E);
  g.x = moe_.xg;
  g.N = F;
  g.K = H;
  g.w = static_cast<const uint16_t*>(w.gate[0].data);
  g.y = moe_.gate;
  check(kc::moe_grouped_gemm(g, stream_), "moe gate gemm");
  g.w = static_cast<const uint16_t*>(w.up[0].data);
  g.y = moe_.up;
  check(kc::moe_grouped_gemm(g, stream_), "moe up gemm");
  kc::SiluMulArgs s;
  s.gate = moe_.gate;
  s.gate_stride = F;
  s.up = moe_.up;
  s.up_stride = F;
  s.out = moe_.act;
  s.out_stride = F;
  s.rows = P;
  s.cols = F;
  check(kc::silu_mul(s, stream_), "moe silu_mul");
  g.x = moe_.act;
  g.N = H;
  g.K = F;
  g.w = static_cast<const uint16_t*>(w.down[0].data);
  g.y = moe_.yg;
  check(kc::moe_grouped_gemm(g, stream_), "moe down gemm");
  check(kc::moe_combine(moe_.yg, moe_.slot_row, moe_.weights, t, k, H, out, stream_),
        "moe_combine");
}

}  // namespace llmserve
