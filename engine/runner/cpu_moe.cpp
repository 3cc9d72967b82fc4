// CpuOps' mixture-of-experts FFN: router GEMM, softmax / top-k (kernels/moe_routing.h), the
// step's (token, expert) pairs gathered into per-expert row groups, each chosen expert's
// gate / up (one packed call) and down GEMMs over its group, and the weighted sum back per token.
// Experts no token chose are not read.
#include <cstring>

#include "engine/runner/cpu_ops.h"
#include "llmserve/kernels/activation.h"
#include "llmserve/kernels/moe_routing.h"

namespace llmserve {

Status CpuOps::reserve_moe(const MoeSpec& spec, int64_t max_tokens) {
  if (spec.num_experts <= 0 || spec.top_k <= 0 || spec.top_k > spec.num_experts ||
      spec.hidden <= 0 || spec.expert_ffn <= 0 || max_tokens <= 0) {
    return invalid_argument("cpu ops: MoE sizes must be positive with top_k <= experts");
  }
  if (moe_.max_tokens >= max_tokens && moe_.top_k >= spec.top_k &&
      moe_.offsets.size() >= static_cast<size_t>(spec.num_experts + 1)) {
    return Status::ok();
  }
  const int64_t pairs = max_tokens * spec.top_k;
  LLMSERVE_ASSIGN_OR_RETURN(moe_.logits, alloc(max_tokens * spec.num_experts));
  LLMSERVE_ASSIGN_OR_RETURN(moe_.weights, alloc(pairs));
  LLMSERVE_ASSIGN_OR_RETURN(moe_.xg, alloc(pairs * spec.hidden));
  LLMSERVE_ASSIGN_OR_RETURN(moe_.gate, alloc(pairs * spec.expert_ffn));
  LLMSERVE_ASSIGN_OR_RETURN(moe_.up, alloc(pairs * spec.expert_ffn));
  LLMSERVE_ASSIGN_OR_RETURN(moe_.yg, alloc(pairs * spec.hidden));
  moe_.ids.assign(static_cast<size_t>(pairs), 0);
  moe_.rows.assign(static_cast<size_t>(pairs), 0);
  moe_.slot_row.assign(static_cast<size_t>(pairs), 0);
  moe_.offsets.assign(static_cast<size_t>(spec.num_experts + 1), 0);
  moe_.max_tokens = max_tokens;
  moe_.top_k = spec.top_k;
  return Status::ok();
}

void CpuOps::moe_ffn(const float* x, int64_t T, const MoeLayerWeights& w, float* out) {
  if (T <= 0) return;
  const int64_t E = w.num_experts(), k = w.top_k, H = w.router.cols;
  matmul(x, T, w.router, nullptr, moe_.logits);
  kernels::moe_route(moe_.logits, T, E, k, w.norm_topk_prob, moe_.ids.data(), moe_.weights);
  kernels::moe_group(moe_.ids.data(), T, k, E, moe_.offsets.data(), moe_.rows.data(),
                     moe_.slot_row.data());
  const int32_t* rows = moe_.rows.data();
  pool_.parallel_for(T * k, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      std::memcpy(moe_.xg + r * H, x + rows[r] / k * H, static_cast<size_t>(H) * sizeof(float));
    }
  });
  for (int64_t e = 0; e < E; ++e) {
    const int64_t r0 = moe_.offsets[e], n = moe_.offsets[e + 1] - r0;
    if (n == 0) continue;
    const int64_t F = w.gate[e].rows;
    const Weight* gate_up[] = {&w.gate[e], &w.up[e]};
    float* gate_up_out[] = {moe_.gate + r0 * F, moe_.up + r0 * F};
    // Expert groups are not the step's token rows: one run at the output precision.
    matmul_multi_in_runs(moe_.xg + r0 * H, n, gate_up, {}, gate_up_out, output_run(n));
    kernels::silu_mul(moe_.gate + r0 * F, moe_.up + r0 * F, moe_.gate + r0 * F, n * F);
    matmul_in_runs(moe_.gate + r0 * F, n, w.down[e], nullptr, moe_.yg + r0 * H, output_run(n));
  }
  const int32_t* slot_row = moe_.slot_row.data();
  pool_.parallel_for(T, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      float* y = out + t * H;
      for (int64_t h = 0; h < H; ++h) y[h] = 0;
      for (int64_t j = 0; j < k; ++j) {
        const float wt = moe_.weights[t * k + j];
        const float* src = moe_.yg + static_cast<int64_t>(slot_row[t * k + j]) * H;
        for (int64_t h = 0; h < H; ++h) y[h] += wt * src[h];
      }
    }
  });
}

}  // namespace llmserve
