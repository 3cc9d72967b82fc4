#include "engine/model/llama_graph.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <string>

#include "engine/model/bidirectional_rows.h"
#include "engine/model/moe_layer.h"
#include "engine/model/phi3.h"
#include "llmserve/kernels/hadamard.h"
#include "llmserve/kernels/rope.h"

namespace llmserve {
namespace {

kernels::RopeScaling to_kernel_scaling(const RopeScaling& s) {
  kernels::RopeScaling k;
  switch (s.type) {
    case RopeScalingType::kNone:
      k.kind = kernels::RopeScaling::Kind::kNone;
      break;
    case RopeScalingType::kLinear:
      k.kind = kernels::RopeScaling::Kind::kLinear;
      break;
    case RopeScalingType::kLlama3:
      k.kind = kernels::RopeScaling::Kind::kLlama3;
      break;
    case RopeScalingType::kLongrope:  // longrope_inv_freq
      k.kind = kernels::RopeScaling::Kind::kNone;
      break;
  }
  k.factor = s.factor;
  k.low_freq_factor = s.low_freq_factor;
  k.high_freq_factor = s.high_freq_factor;
  k.original_max_positions = static_cast<float>(s.original_max_position);
  return k;
}

Result<Weight> weight(const LoadedModel& model, Ops& ops, const std::string& name) {
  const TensorView* t = model.tensor(name);
  if (t == nullptr) return not_found("model has no tensor " + name);
  return ops.prepare_weight(*t);
}

}  // namespace

Result<std::unique_ptr<LlamaGraph>> LlamaGraph::create(const LoadedModel& model, Ops& ops,
                                                       int64_t max_tokens, int64_t max_samples,
                                                       int64_t context_len) {
  std::unique_ptr<LlamaGraph> g(new LlamaGraph(model.config(), ops));
  LLMSERVE_RETURN_IF_ERROR(g->init(model, max_tokens, max_samples, context_len));
  return g;
}

Status LlamaGraph::init(const LoadedModel& model, int64_t max_tokens, int64_t max_samples,
                        int64_t context_len) {
  LLMSERVE_RETURN_IF_ERROR(cfg_.validate());
  if (max_tokens <= 0 || max_samples <= 0) {
    return invalid_argument("llama graph: max_tokens and max_samples must be positive");
  }
  max_tokens_ = max_tokens;
  max_samples_ = max_samples;
  const TensorView* embd = model.tensor("token_embd.weight");
  if (embd == nullptr) return not_found("model has no tensor token_embd.weight");
  const bool tied = model.tensor("output.weight") == nullptr;
  LLMSERVE_ASSIGN_OR_RETURN(tok_embd_, ops_.prepare_embedding(*embd, /*lm_head=*/tied));
  LLMSERVE_ASSIGN_OR_RETURN(output_norm_, weight(model, ops_, "output_norm.weight"));
  if (!tied) {
    LLMSERVE_ASSIGN_OR_RETURN(lm_head_, weight(model, ops_, "output.weight"));
  } else {
    lm_head_ = tok_embd_;  // tied embeddings
  }
  layers_.resize(static_cast<size_t>(cfg_.num_layers));
  for (int64_t l = 0; l < cfg_.num_layers; ++l) {
    Layer& L = layers_[static_cast<size_t>(l)];
    auto w = [&](const char* suffix) { return weight(model, ops_, block_tensor_name(l, suffix)); };
    auto fused = [&](std::initializer_list<const char*> suffixes,
                     std::initializer_list<Weight*> out) -> Status {
      std::vector<const TensorView*> ts;
      for (const char* suffix : suffixes) {
        const std::string name = block_tensor_name(l, suffix);
        const TensorView* t = model.tensor(name);
        if (t == nullptr) return not_found("model has no tensor " + name);
        ts.push_back(t);
      }
      LLMSERVE_ASSIGN_OR_RETURN(std::vector<Weight> ws, ops_.prepare_fused(ts));
      if (ws.size() != out.size()) return internal_error("prepare_fused returned a wrong count");
      size_t i = 0;
      for (Weight* o : out) *o = ws[i++];
      return Status::ok();
    };
    LLMSERVE_ASSIGN_OR_RETURN(L.attn_norm, w("attn_norm.weight"));
    LLMSERVE_RETURN_IF_ERROR(
        fused({"attn_q.weight", "attn_k.weight", "attn_v.weight"}, {&L.wq, &L.wk, &L.wv}));
    if (cfg_.qk_norm) {
      LLMSERVE_ASSIGN_OR_RETURN(L.q_norm, w("attn_q_norm.weight"));
      LLMSERVE_ASSIGN_OR_RETURN(L.k_norm, w("attn_k_norm.weight"));
    }
    if (cfg_.sandwich_norms) {
      LLMSERVE_ASSIGN_OR_RETURN(L.post_attn_norm, w("post_attention_norm.weight"));
      LLMSERVE_ASSIGN_OR_RETURN(L.post_ffn_norm, w("post_ffw_norm.weight"));
    }
    L.local = static_cast<size_t>(l) < cfg_.local_layers.size() &&
              cfg_.local_layers[static_cast<size_t>(l)] != 0;
    LLMSERVE_ASSIGN_OR_RETURN(L.wo, w("attn_output.weight"));
    LLMSERVE_ASSIGN_OR_RETURN(L.ffn_norm, w("ffn_norm.weight"));
    if (cfg_.is_moe_layer(l)) {
      L.is_moe = true;
      LLMSERVE_ASSIGN_OR_RETURN(L.moe, prepare_moe_layer(model, ops_, l));
    } else {
      LLMSERVE_RETURN_IF_ERROR(fused({"ffn_gate.weight", "ffn_up.weight"}, {&L.w_gate, &L.w_up}));
      LLMSERVE_ASSIGN_OR_RETURN(L.w_down, w("ffn_down.weight"));
    }
    if (model.tensor(block_tensor_name(l, "attn_q.bias")) != nullptr) {
      L.has_bias = true;
      LLMSERVE_RETURN_IF_ERROR(
          fused({"attn_q.bias", "attn_k.bias", "attn_v.bias"}, {&L.bq, &L.bk, &L.bv}));
    }
  }

  const int64_t H = cfg_.hidden_size, qd = cfg_.num_heads * cfg_.head_dim,
                kvd = cfg_.num_kv_heads * cfg_.head_dim, F = cfg_.ffn_size, T = max_tokens;
  auto alloc = [&](float*& p, int64_t n) -> Status {
    LLMSERVE_ASSIGN_OR_RETURN(p, ops_.alloc_activation(n));
    return Status::ok();
  };
  LLMSERVE_RETURN_IF_ERROR(alloc(resid_, T * H));
  LLMSERVE_RETURN_IF_ERROR(alloc(h_, T * H));
  LLMSERVE_RETURN_IF_ERROR(alloc(q_, T * qd));
  LLMSERVE_RETURN_IF_ERROR(alloc(k_, T * kvd));
  LLMSERVE_RETURN_IF_ERROR(alloc(v_, T * kvd));
  LLMSERVE_RETURN_IF_ERROR(alloc(attn_, T * qd));
  LLMSERVE_RETURN_IF_ERROR(alloc(o_, T * H));
  LLMSERVE_RETURN_IF_ERROR(alloc(gate_, T * F));
  LLMSERVE_RETURN_IF_ERROR(alloc(up_, T * F));
  LLMSERVE_RETURN_IF_ERROR(alloc(s_resid_, max_samples * H));
  LLMSERVE_RETURN_IF_ERROR(alloc(s_x_, max_samples * H));
  LLMSERVE_RETURN_IF_ERROR(alloc(logits_, max_samples * cfg_.vocab_size));

  if (cfg_.num_experts > 0) LLMSERVE_RETURN_IF_ERROR(ops_.reserve_moe(moe_spec(cfg_), T));

  RopeSpec rope;
  rope.inv_freq = kernels::rope_inv_freq(static_cast<int>(cfg_.head_dim), cfg_.rope_theta,
                                         to_kernel_scaling(cfg_.rope_scaling));
  rope.interleaved = cfg_.rope_interleaved;
  if (cfg_.rope_dim > 0 && cfg_.rope_dim != cfg_.head_dim) {
    rope.inv_freq = kernels::rope_inv_freq(static_cast<int>(cfg_.rope_dim), cfg_.rope_theta,
                                           to_kernel_scaling(cfg_.rope_scaling));
  }
  if (cfg_.rope_scaling.type == RopeScalingType::kLongrope) {
    rope.inv_freq = longrope_inv_freq(cfg_, context_len > 0 ? context_len : cfg_.max_context);
    rope.cos_sin_scale = cfg_.rope_scaling.attention_factor;
  }
  if (!cfg_.local_layers.empty()) {
    rope.local_inv_freq =
        kernels::rope_inv_freq(static_cast<int>(cfg_.head_dim), cfg_.rope_local_theta);
  }
  ops_.set_rope(std::move(rope));
  rotate_kv_ = kernels::kv_dtype_scaled(ops_.kv_cache_spec().dtype) &&
               kernels::hadamard_supported(static_cast<int>(cfg_.head_dim));
  return Status::ok();
}

Result<std::span<const float>> LlamaGraph::forward(const ForwardBatch& batch) {
  LLMSERVE_ASSIGN_OR_RETURN(const float* logits, forward_logits(batch));
  if (logits == nullptr) return std::span<const float>();
  std::span<const float> host = ops_.to_host(logits, batch.num_samples() * cfg_.vocab_size);
  LLMSERVE_RETURN_IF_ERROR(ops_.step_status());
  return host;
}

Result<const float*> LlamaGraph::forward_logits(const ForwardBatch& batch) {
  const KvCacheSpec& kv = ops_.kv_cache_spec();
  LLMSERVE_RETURN_IF_ERROR(batch.validate(cfg_.vocab_size, kv.num_blocks, kv.block_size));
  const int64_t T = batch.num_tokens(), B = batch.num_requests(), S = batch.num_samples();
  const int64_t D = batch.num_decodes;
  if (T > max_tokens_ || S > max_samples_) {
    return invalid_argument("forward batch: " + std::to_string(T) + " tokens / " +
                            std::to_string(S) + " samples exceed the step limits " +
                            std::to_string(max_tokens_) + " / " + std::to_string(max_samples_));
  }
  // A bidirectional model's pooling rows attend their whole prompt (attend_end past the row).
  ForwardBatch step = batch;
  if (cfg_.bidirectional && batch.num_pool_rows() > 0) {
    if (!batch.attend_end.empty()) {
      return invalid_argument("forward batch: a bidirectional model's batch takes no attend_end");
    }
    LLMSERVE_RETURN_IF_ERROR(bidirectional_attend_end(batch, attend_end_));
    step.attend_end = attend_end_;
  }
  const bool images = !step.input_embeddings.empty() || !step.attend_end.empty();
  if (images && !ops_.supports_image_inputs()) {
    return unimplemented(
        "image inputs and bidirectional attention are not supported on this backend (the CPU "
        "backend has them)");
  }
  LLMSERVE_RETURN_IF_ERROR(ops_.begin_step(step));
  pooled_.clear();

  const int nh = static_cast<int>(cfg_.num_heads), nkv = static_cast<int>(cfg_.num_kv_heads);
  const int hd = static_cast<int>(cfg_.head_dim);
  const float eps = cfg_.rms_norm_eps;
  const float scale =
      cfg_.attention_scale > 0.0f ? cfg_.attention_scale : 1.0f / std::sqrt(static_cast<float>(hd));
  const bool sandwich = cfg_.sandwich_norms;

  ops_.embedding(tok_embd_, resid_);
  if (cfg_.embedding_scale != 1.0f) ops_.scale(resid_, T, cfg_.hidden_size, cfg_.embedding_scale);
  if (!batch.input_embeddings.empty()) ops_.set_input_rows(resid_, cfg_.hidden_size);
  for (int64_t l = 0; l < cfg_.num_layers; ++l) {
    const Layer& L = layers_[static_cast<size_t>(l)];
    if (l == 0 || sandwich) {  // sandwich: the previous layer added its output already
      ops_.rms_norm(resid_, L.attn_norm, T, eps, h_);
    } else {
      ops_.add_rms_norm(resid_, o_, L.attn_norm, T, eps, h_);
    }
    const Weight* qkv[] = {&L.wq, &L.wk, &L.wv};
    const Weight* qkv_bias[] = {&L.bq, &L.bk, &L.bv};
    float* qkv_out[] = {q_, k_, v_};
    ops_.matmul_multi(
        h_, T, qkv,
        L.has_bias ? std::span<const Weight* const>(qkv_bias) : std::span<const Weight* const>(),
        qkv_out);
    if (cfg_.qk_norm) {
      ops_.head_rms_norm(q_, L.q_norm, nh, hd, eps);
      ops_.head_rms_norm(k_, L.k_norm, nkv, hd, eps);
    }
    ops_.rope(q_, nh, hd, L.local);
    ops_.rope(k_, nkv, hd, L.local);
    if (rotate_kv_) {
      ops_.rotate_heads(q_, nh, hd);
      ops_.rotate_heads(k_, nkv, hd);
      ops_.rotate_heads(v_, nkv, hd);
    }
    ops_.write_kv(l, k_, v_);
    if (D > 0) ops_.decode_attention(l, q_, nh, scale, 0, D, attn_);
    if (D < B) ops_.prefill_attention(l, q_, nh, scale, D, B, attn_);
    if (rotate_kv_) ops_.rotate_attention_heads(attn_, nh, hd);
    ops_.matmul(attn_, T, L.wo, nullptr, o_);
    if (sandwich) {
      ops_.add_normed(resid_, o_, L.post_attn_norm, T, eps);
      ops_.rms_norm(resid_, L.ffn_norm, T, eps, h_);
    } else {
      ops_.add_rms_norm(resid_, o_, L.ffn_norm, T, eps, h_);
    }
    if (L.is_moe) {
      ops_.moe_ffn(h_, T, L.moe, o_);
      continue;
    }
    const Weight* gate_up[] = {&L.w_gate, &L.w_up};
    float* gate_up_out[] = {gate_, up_};
    ops_.matmul_multi(h_, T, gate_up, {}, gate_up_out);
    if (cfg_.ffn_activation == FfnActivation::kGeluTanh) {
      ops_.gelu_tanh_mul(gate_, up_, T, cfg_.ffn_size, gate_);
    } else {
      ops_.silu_mul(gate_, up_, T, cfg_.ffn_size, gate_);
    }
    ops_.matmul(gate_, T, L.w_down, nullptr, o_);
    if (sandwich) ops_.add_normed(resid_, o_, L.post_ffn_norm, T, eps);
  }
  const bool pooling = batch.num_pool_rows() > 0;
  if (S > 0) {
    if (sandwich) {  // resid_ holds every output already
      ops_.gather_sample_rows(resid_, cfg_.hidden_size, s_x_);
      ops_.rms_norm(s_x_, output_norm_, S, eps, s_x_);
    } else {
      ops_.gather_sample_rows(resid_, cfg_.hidden_size, s_resid_);
      ops_.gather_sample_rows(o_, cfg_.hidden_size, s_x_);
      ops_.add_rms_norm(s_resid_, s_x_, output_norm_, S, eps, s_x_);
    }
    ops_.matmul(s_x_, S, lm_head_, nullptr, logits_);
    if (cfg_.final_logit_softcap > 0.0f) {
      ops_.softcap(logits_, S, cfg_.vocab_size, cfg_.final_logit_softcap);
    }
  }
  // Pooling rows need the last layer's output in f32 (rms_norm outputs may be in a backend's
  // GEMM-input format): the residual stream is completed for every row once the sampled rows
  // took theirs, so their arithmetic is the same with pool rows in the step or without.
  if (pooling && !sandwich) ops_.add_rms_norm(resid_, o_, output_norm_, T, eps, h_);
  ops_.finish_step();
  LLMSERVE_RETURN_IF_ERROR(ops_.step_status());
  if (pooling) LLMSERVE_RETURN_IF_ERROR(copy_pool_rows(batch));
  return S > 0 ? static_cast<const float*>(logits_) : static_cast<const float*>(nullptr);
}

Status LlamaGraph::copy_pool_rows(const ForwardBatch& batch) {
  const int64_t H = cfg_.hidden_size;
  int64_t rows = 0;  // rows up to the last pool row are read
  for (int32_t r : batch.pool_rows) rows = std::max<int64_t>(rows, r + 1);
  std::span<const float> all = ops_.to_host(resid_, rows * H);
  LLMSERVE_RETURN_IF_ERROR(ops_.step_status());
  if (static_cast<int64_t>(all.size()) < rows * H) {
    return resource_exhausted("pooling: the backend's host buffer holds " +
                              std::to_string(all.size()) + " floats; this step's pool rows need " +
                              std::to_string(rows * H));
  }
  pooled_.resize(static_cast<size_t>(batch.num_pool_rows() * H));
  for (size_t p = 0; p < batch.pool_rows.size(); ++p) {
    std::copy_n(all.data() + static_cast<int64_t>(batch.pool_rows[p]) * H, H,
                pooled_.data() + static_cast<int64_t>(p) * H);
  }
  return Status::ok();
}

}  // namespace llmserve
