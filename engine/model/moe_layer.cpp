#include "engine/model/moe_layer.h"

#include <string>
#include <vector>

#include "engine/model/moe_tensors.h"

namespace llmserve {

Result<MoeLayerWeights> prepare_moe_layer(const LoadedModel& model, Ops& ops, int64_t layer) {
  const ModelConfig& c = model.config();
  MoeLayerWeights w;
  w.top_k = static_cast<int>(c.num_experts_used);
  w.norm_topk_prob = c.norm_topk_prob;
  const std::string router = block_tensor_name(layer, "ffn_gate_inp.weight");
  const TensorView* r = model.tensor(router);
  if (r == nullptr) return not_found("model has no tensor " + router);
  LLMSERVE_ASSIGN_OR_RETURN(w.router, ops.prepare_weight(*r));
  for (auto [kind, out] : {std::pair{"ffn_gate", &w.gate}, std::pair{"ffn_up", &w.up},
                           std::pair{"ffn_down", &w.down}}) {
    std::vector<TensorView> views;
    views.reserve(static_cast<size_t>(c.num_experts));
    for (int64_t e = 0; e < c.num_experts; ++e) {
      LLMSERVE_ASSIGN_OR_RETURN(TensorView v, expert_matrix(model, layer, kind, e));
      views.push_back(std::move(v));
    }
    LLMSERVE_ASSIGN_OR_RETURN(*out, ops.prepare_experts(views));
  }
  return w;
}

MoeSpec moe_spec(const ModelConfig& c) {
  return MoeSpec{c.hidden_size, c.expert_ffn_size, c.num_experts,
                 static_cast<int>(c.num_experts_used)};
}

}  // namespace llmserve
