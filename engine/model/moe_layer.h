// A mixture-of-experts layer's weights prepared by a backend (Ops::prepare_experts) from the
// model's canonical tensors (moe_tensors.h).
#pragma once

#include <cstdint>

#include "engine/core/status.h"
#include "engine/model/model_weights.h"
#include "engine/model/ops.h"

namespace llmserve {

// Precondition: model.config().is_moe_layer(layer) and check_moe_tensors passed.
Result<MoeLayerWeights> prepare_moe_layer(const LoadedModel& model, Ops& ops, int64_t layer);

// The MoeSpec of the model's MoE layers (all share one shape).
MoeSpec moe_spec(const ModelConfig& c);

}  // namespace llmserve
