#include <numeric>

#include "engine/model/bert_config.h"
#include "engine/model/model_weights.h"
#include "engine/model/moe_tensors.h"
#include "llmserve/kernels/host_memory.h"

namespace llmserve {

int64_t TensorView::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

const TensorView* LoadedModel::tensor(std::string_view canonical_name) const {
  auto it = index_.find(std::string(canonical_name));
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

uint64_t LoadedModel::parameter_count() const {
  uint64_t n = 0;
  for (const TensorView& t : tensors_) n += static_cast<uint64_t>(t.num_elements());
  return n;
}

uint64_t LoadedModel::weight_bytes() const {
  uint64_t n = 0;
  for (const TensorView& t : tensors_) n += t.nbytes;
  return n;
}

Status LoadedModel::add_tensor(TensorView view) {
  if (!index_.emplace(view.name, tensors_.size()).second) {
    return data_loss(path_ + ": tensor '" + view.name + "' appears twice");
  }
  tensors_.push_back(std::move(view));
  return Status::ok();
}

void LoadedModel::HostFree::operator()(void* p) const {
  kernels::host_free(p);
}

Status LoadedModel::replace_tensor_data(std::string_view name, DType type, void* data,
                                        size_t nbytes) {
  std::unique_ptr<void, HostFree> owned(data);
  auto it = index_.find(std::string(name));
  if (it == index_.end()) return not_found(path_ + ": no tensor '" + std::string(name) + "'");
  TensorView& t = tensors_[it->second];
  t.type = type;
  t.data = static_cast<const std::byte*>(data);
  t.nbytes = nbytes;
  owned_.push_back(std::move(owned));
  return Status::ok();
}

Status LoadedModel::replace_tensor_fp8(std::string_view name, void* data, size_t nbytes,
                                       float* scales, int64_t block_rows, int64_t block_cols) {
  std::unique_ptr<void, HostFree> owned_scales(scales);
  LLMSERVE_RETURN_IF_ERROR(replace_tensor_data(name, DType::F8_E4M3, data, nbytes));
  TensorView& t = tensors_[index_.at(std::string(name))];
  t.scales = kernels::Fp8Scales{scales, block_rows, block_cols};
  owned_.push_back(std::move(owned_scales));
  return Status::ok();
}

Status LoadedModel::check_tensors() const {
  const ModelConfig& c = config_;
  if (is_encoder_only(c)) return check_bert_tensors(*this);
  auto expect = [&](const std::string& name, std::vector<int64_t> shape) -> Status {
    const TensorView* t = tensor(name);
    if (t == nullptr) return data_loss(path_ + ": missing tensor '" + name + "'");
    if (t->shape != shape) {
      auto str = [](const std::vector<int64_t>& s) {
        std::string out = "[";
        for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
        return out + "]";
      };
      return data_loss(path_ + ": tensor '" + name + "' has shape " + str(t->shape) +
                       ", the config implies " + str(shape));
    }
    return Status::ok();
  };
  const int64_t h = c.hidden_size, q = c.num_heads * c.head_dim, kv = c.num_kv_heads * c.head_dim;
  LLMSERVE_RETURN_IF_ERROR(expect("token_embd.weight", {c.vocab_size, h}));
  LLMSERVE_RETURN_IF_ERROR(expect("output_norm.weight", {h}));
  if (!c.tie_word_embeddings) LLMSERVE_RETURN_IF_ERROR(expect("output.weight", {c.vocab_size, h}));
  for (int64_t i = 0; i < c.num_layers; ++i) {
    auto b = [i](std::string_view s) { return block_tensor_name(i, s); };
    LLMSERVE_RETURN_IF_ERROR(expect(b("attn_norm.weight"), {h}));
    LLMSERVE_RETURN_IF_ERROR(expect(b("attn_q.weight"), {q, h}));
    LLMSERVE_RETURN_IF_ERROR(expect(b("attn_k.weight"), {kv, h}));
    LLMSERVE_RETURN_IF_ERROR(expect(b("attn_v.weight"), {kv, h}));
    LLMSERVE_RETURN_IF_ERROR(expect(b("attn_output.weight"), {h, q}));
    LLMSERVE_RETURN_IF_ERROR(expect(b("ffn_norm.weight"), {h}));
    if (!c.is_moe_layer(i)) {
      LLMSERVE_RETURN_IF_ERROR(expect(b("ffn_gate.weight"), {c.ffn_size, h}));
      LLMSERVE_RETURN_IF_ERROR(expect(b("ffn_up.weight"), {c.ffn_size, h}));
      LLMSERVE_RETURN_IF_ERROR(expect(b("ffn_down.weight"), {h, c.ffn_size}));
    }
    if (c.sandwich_norms) {
      LLMSERVE_RETURN_IF_ERROR(expect(b("post_attention_norm.weight"), {h}));
      LLMSERVE_RETURN_IF_ERROR(expect(b("post_ffw_norm.weight"), {h}));
    }
    if (c.qk_norm) {
      LLMSERVE_RETURN_IF_ERROR(expect(b("attn_q_norm.weight"), {c.head_dim}));
      LLMSERVE_RETURN_IF_ERROR(expect(b("attn_k_norm.weight"), {c.head_dim}));
    }
    if (c.attention_bias) {
      LLMSERVE_RETURN_IF_ERROR(expect(b("attn_q.bias"), {q}));
      LLMSERVE_RETURN_IF_ERROR(expect(b("attn_k.bias"), {kv}));
      LLMSERVE_RETURN_IF_ERROR(expect(b("attn_v.bias"), {kv}));
    }
  }
  return check_moe_tensors(*this);
}

}  // namespace llmserve
