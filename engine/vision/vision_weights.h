// The vision tower's and projector's tensors of a Gemma 3 HF checkpoint (model.safetensors or
// the shards listed in model.safetensors.index.json), found under any of the prefixes the
// checkpoints use: "vision_tower.vision_model." (transformers 4 on the Hub),
// "model.vision_tower.vision_model.", "vision_tower." / "model.vision_tower." (transformers 5),
// and "multi_modal_projector." / "model.multi_modal_projector.".
#pragma once

#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/status.h"
#include "engine/model/safetensors_file.h"

namespace llmserve::vision {

class VisionWeights {
 public:
  static Result<VisionWeights> open(const std::string& dir);
  // Tensors already named as a checkpoint names them (e.g.
  // "vision_tower.vision_model.post_layernorm.weight"), viewing memory that `owner` keeps alive (an
  // mmproj GGUF's mapping, converted copies).
  static VisionWeights from_tensors(std::vector<SafetensorsTensor> tensors,
                                    std::shared_ptr<const void> owner);

  // name without prefix: "embeddings.patch_embedding.weight" (tower) or
  // "mm_input_projection_weight" (projector). NOT_FOUND names the tensor.
  Result<const SafetensorsTensor*> tower(std::string_view name) const;
  Result<const SafetensorsTensor*> projector(std::string_view name) const;

  // The tensor decoded to f32 with the element count checked (DATA_LOSS on a mismatch).
  static Result<std::vector<float>> to_f32(const SafetensorsTensor& t, int64_t expect_elems);

 private:
  Result<const SafetensorsTensor*> find(std::string_view name,
                                        std::initializer_list<std::string_view> prefixes) const;
  std::vector<std::shared_ptr<SafetensorsFile>> files_;
  std::vector<SafetensorsTensor> tensors_;
  std::shared_ptr<const void> owner_;
};

}  // namespace llmserve::vision
