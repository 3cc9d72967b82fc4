// CpuOps' mixture-of-experts FFN: router GEMM, softmax / top-k (kernels/moe_routing.h), the
// step's (token, expert) pairs gathered into per-expert row groups, each chosen expert's
// gate / up (one packed call) and down GEMMs over its group, and the weighted sum back per token.
// Experts no token chose are not read. With every expert packed, the chosen experts' gate / up
// run as one grouped matmul and their down as another (threads split across experts and rows).
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
  if (moe_experts_grouped(w, H, w.gate.empty() ? 0 : w.gate[0].rows)) {
    // Expert groups are not the step's token rows: they run at the output precision.
    const kernels::ActPrecision p = output_run(T * k)[0].precision;
    kernels::matmul_packed_grouped(pool_, moe_.xg, moe_.gate_up_segments, p);
    const int64_t F = w.gate[0].rows;
    pool_.parallel_for(T * k, [&](int64_t b, int64_t e) {
      kernels::silu_mul(moe_.gate + b * F, moe_.up + b * F, moe_.gate + b * F, (e - b) * F);
    });
    kernels::matmul_packed_grouped(pool_, moe_.gate, moe_.down_segments, p);
  } else {
    moe_experts_one_by_one(w, H);
  }
  combine_moe_outputs(T, k, H, out);
}

bool CpuOps::moe_experts_grouped(const MoeLayerWeights& w, int64_t H, int64_t F) {
  const int64_t E = w.num_experts();
  auto& m = moe_;
  m.gate_up_ws.clear();
  m.gate_up_ys.clear();
  m.down_ws.clear();
  m.down_ys.clear();
  m.gate_up_segments.clear();
  m.down_segments.clear();
  m.gate_up_ws.reserve(static_cast<size_t>(2 * E));
  m.gate_up_ys.reserve(static_cast<size_t>(2 * E));
  m.down_ws.reserve(static_cast<size_t>(E));
  m.down_ys.reserve(static_cast<size_t>(E));
  for (int64_t e = 0; e < E; ++e) {
    const int64_t r0 = m.offsets[e], r1 = m.offsets[e + 1];
    if (r1 == r0) continue;
    const auto gate = packed_.find(w.gate[e].data), up = packed_.find(w.up[e].data),
               down = packed_.find(w.down[e].data);
    if (gate == packed_.end() || up == packed_.end() || down == packed_.end() ||
        w.gate[e].rows != F || w.up[e].rows != F || w.down[e].rows != H) {
      return false;
    }
    m.gate_up_ws.insert(m.gate_up_ws.end(), {&gate->second, &up->second});
    m.gate_up_ys.insert(m.gate_up_ys.end(), {m.gate + r0 * F, m.up + r0 * F});
    m.down_ws.push_back(&down->second);
    m.down_ys.push_back(m.yg + r0 * H);
  }
  // The spans point into vectors that no longer grow.
  for (size_t i = 0, e = 0; e < static_cast<size_t>(E); ++e) {
    const int64_t r0 = m.offsets[e], r1 = m.offsets[e + 1];
    if (r1 == r0) continue;
    m.gate_up_segments.push_back({r0, r1, std::span(m.gate_up_ws).subspan(2 * i, 2),
                                  std::span(m.gate_up_ys).subspan(2 * i, 2)});
    m.down_segments.push_back(
        {r0, r1, std::span(m.down_ws).subspan(i, 1), std::span(m.down_ys).subspan(i, 1)});
    ++i;
  }
  return true;
}

void CpuOps::moe_experts_one_by_one(const MoeLayerWeights& w, int64_t H) {
  const int64_t E = w.num_experts();
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
}

void CpuOps::combine_moe_outputs(int64_t T, int64_t k, int64_t H, float* out) {
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
