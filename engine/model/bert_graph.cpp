#include "engine/model/bert_graph.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "engine/model/bert_config.h"

namespace llmserve {

Result<std::unique_ptr<BertGraph>> BertGraph::create(const LoadedModel& model, Ops& ops,
                                                     int64_t max_tokens) {
  auto* enc = dynamic_cast<EncoderOps*>(&ops);
  if (enc == nullptr) {
    return unimplemented(
        "bert: this backend has no encoder ops (the CPU backend has; set "
        "engine.device cpu)");
  }
  if (!is_encoder_only(model.config())) {
    return invalid_argument("bert graph: the model is a '" + model.config().architecture + "'");
  }
  std::unique_ptr<BertGraph> g(new BertGraph(model.config(), ops, *enc));
  LLMSERVE_RETURN_IF_ERROR(g->init(model, max_tokens));
  return g;
}

Status BertGraph::init(const LoadedModel& model, int64_t max_tokens) {
  LLMSERVE_RETURN_IF_ERROR(cfg_.validate());
  LLMSERVE_RETURN_IF_ERROR(check_bert_tensors(model));
  if (max_tokens <= 0) return invalid_argument("bert graph: max_tokens must be positive");
  max_tokens_ = max_tokens;
  auto get = [&](const std::string& name, Weight* out) -> Status {
    const TensorView* t = model.tensor(name);
    if (t == nullptr) return not_found("model has no tensor " + name);
    LLMSERVE_ASSIGN_OR_RETURN(*out, ops_.prepare_weight(*t));
    return Status::ok();
  };
  auto table = [&](const char* name, Weight* out) -> Status {
    const TensorView* t = model.tensor(name);
    if (t == nullptr) return not_found(std::string("model has no tensor ") + name);
    LLMSERVE_ASSIGN_OR_RETURN(*out, ops_.prepare_embedding(*t, /*lm_head=*/false));
    return Status::ok();
  };
  LLMSERVE_RETURN_IF_ERROR(table("token_embd.weight", &tok_embd_));
  LLMSERVE_RETURN_IF_ERROR(table("position_embd.weight", &pos_embd_));
  LLMSERVE_RETURN_IF_ERROR(table("token_types.weight", &type_embd_));
  max_positions_ = model.tensor("position_embd.weight")->shape[0];
  LLMSERVE_RETURN_IF_ERROR(get("token_embd_norm.weight", &embd_norm_w_));
  LLMSERVE_RETURN_IF_ERROR(get("token_embd_norm.bias", &embd_norm_b_));
  layers_.resize(static_cast<size_t>(cfg_.num_layers));
  for (int64_t l = 0; l < cfg_.num_layers; ++l) {
    Layer& L = layers_[static_cast<size_t>(l)];
    auto w = [&](const char* suffix, Weight* out) {
      return get(block_tensor_name(l, suffix), out);
    };
    LLMSERVE_RETURN_IF_ERROR(w("attn_q.weight", &L.wq));
    LLMSERVE_RETURN_IF_ERROR(w("attn_k.weight", &L.wk));
    LLMSERVE_RETURN_IF_ERROR(w("attn_v.weight", &L.wv));
    LLMSERVE_RETURN_IF_ERROR(w("attn_output.weight", &L.wo));
    LLMSERVE_RETURN_IF_ERROR(w("attn_q.bias", &L.bq));
    LLMSERVE_RETURN_IF_ERROR(w("attn_k.bias", &L.bk));
    LLMSERVE_RETURN_IF_ERROR(w("attn_v.bias", &L.bv));
    LLMSERVE_RETURN_IF_ERROR(w("attn_output.bias", &L.bo));
    LLMSERVE_RETURN_IF_ERROR(w("attn_output_norm.weight", &L.attn_norm_w));
    LLMSERVE_RETURN_IF_ERROR(w("attn_output_norm.bias", &L.attn_norm_b));
    LLMSERVE_RETURN_IF_ERROR(w("ffn_up.weight", &L.up));
    LLMSERVE_RETURN_IF_ERROR(w("ffn_up.bias", &L.up_b));
    LLMSERVE_RETURN_IF_ERROR(w("ffn_down.weight", &L.down));
    LLMSERVE_RETURN_IF_ERROR(w("ffn_down.bias", &L.down_b));
    LLMSERVE_RETURN_IF_ERROR(w("layer_output_norm.weight", &L.out_norm_w));
    LLMSERVE_RETURN_IF_ERROR(w("layer_output_norm.bias", &L.out_norm_b));
  }
  const int64_t H = cfg_.hidden_size, T = max_tokens;
  for (float** p : {&resid_, &q_, &k_, &v_, &attn_, &o_}) {
    LLMSERVE_ASSIGN_OR_RETURN(*p, ops_.alloc_activation(T * H));
  }
  LLMSERVE_ASSIGN_OR_RETURN(up_, ops_.alloc_activation(T * cfg_.ffn_size));
  return Status::ok();
}

Status BertGraph::check_batch(const ForwardBatch& batch) const {
  const KvCacheSpec& kv = ops_.kv_cache_spec();
  LLMSERVE_RETURN_IF_ERROR(batch.validate(cfg_.vocab_size, kv.num_blocks, kv.block_size));
  if (batch.num_samples() > 0) {
    return invalid_argument("bert: an encoder has no LM head; its requests pool, none samples");
  }
  if (batch.num_tokens() > max_tokens_) {
    return invalid_argument("forward batch: " + std::to_string(batch.num_tokens()) +
                            " tokens exceed the step limit " + std::to_string(max_tokens_));
  }
  for (int64_t b = 0; b < batch.num_requests(); ++b) {
    const int32_t s = batch.query_start[static_cast<size_t>(b)];
    const int32_t n = batch.query_start[static_cast<size_t>(b) + 1] - s;
    if (batch.seq_lens[static_cast<size_t>(b)] != n) {
      return invalid_argument("bert: request " + std::to_string(b) +
                              " is not a whole prompt in one step (an encoder's attention sees "
                              "only the step's rows)");
    }
    for (int32_t i = 0; i < n; ++i) {
      const int32_t pos = batch.positions[static_cast<size_t>(s + i)];
      if (pos != i || pos >= max_positions_) {
        return invalid_argument("bert: position " + std::to_string(pos) + " of request " +
                                std::to_string(b) + " is not its row " + std::to_string(i) +
                                " or past the position table (" + std::to_string(max_positions_) +
                                ")");
      }
    }
  }
  return Status::ok();
}

Result<std::span<const float>> BertGraph::forward(const ForwardBatch& batch) {
  LLMSERVE_RETURN_IF_ERROR(forward_logits(batch).status());
  return std::span<const float>();
}

Result<const float*> BertGraph::forward_logits(const ForwardBatch& batch) {
  LLMSERVE_RETURN_IF_ERROR(check_batch(batch));
  LLMSERVE_RETURN_IF_ERROR(ops_.begin_step(batch));
  pooled_.clear();
  const int64_t T = batch.num_tokens(), H = cfg_.hidden_size;
  const int nh = static_cast<int>(cfg_.num_heads), hd = static_cast<int>(cfg_.head_dim);
  const float eps = cfg_.rms_norm_eps;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));

  ops_.embedding(tok_embd_, resid_);
  enc_.add_position_embeddings(pos_embd_, type_embd_, resid_);
  enc_.layer_norm(resid_, embd_norm_w_, embd_norm_b_, T, eps, resid_);
  for (const Layer& L : layers_) {
    ops_.matmul(resid_, T, L.wq, &L.bq, q_);
    ops_.matmul(resid_, T, L.wk, &L.bk, k_);
    ops_.matmul(resid_, T, L.wv, &L.bv, v_);
    enc_.bidirectional_attention(q_, k_, v_, nh, nh, hd, scale, attn_);
    ops_.matmul(attn_, T, L.wo, &L.bo, o_);
    enc_.add_layer_norm(resid_, o_, L.attn_norm_w, L.attn_norm_b, T, eps);
    ops_.matmul(resid_, T, L.up, &L.up_b, up_);
    enc_.gelu(up_, T, cfg_.ffn_size);
    ops_.matmul(up_, T, L.down, &L.down_b, o_);
    enc_.add_layer_norm(resid_, o_, L.out_norm_w, L.out_norm_b, T, eps);
  }
  ops_.finish_step();
  LLMSERVE_RETURN_IF_ERROR(ops_.step_status());
  if (batch.num_pool_rows() > 0) {
    int64_t rows = 0;
    for (int32_t r : batch.pool_rows) rows = std::max<int64_t>(rows, r + 1);
    std::span<const float> all = ops_.to_host(resid_, rows * H);
    LLMSERVE_RETURN_IF_ERROR(ops_.step_status());
    pooled_.resize(static_cast<size_t>(batch.num_pool_rows() * H));
    for (size_t p = 0; p < batch.pool_rows.size(); ++p) {
      std::copy_n(all.data() + static_cast<int64_t>(batch.pool_rows[p]) * H, H,
                  pooled_.data() + static_cast<int64_t>(p) * H);
    }
  }
  return static_cast<const float*>(nullptr);
}

}  // namespace llmserve
