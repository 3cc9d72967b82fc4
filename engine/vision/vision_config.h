// The vision side of a Gemma 3 checkpoint's config.json (Gemma3ForConditionalGeneration):
// vision_config (SigLIP; SiglipVisionConfig's defaults for absent keys), mm_tokens_per_image,
// the image token ids and the text model's hidden size.
#pragma once

#include <cstdint>
#include <string>

#include "engine/core/status.h"

namespace llmserve::vision {

struct VisionConfig {
  // SigLIP tower.
  int64_t hidden = 768;
  int64_t intermediate = 3072;
  int64_t num_layers = 12;
  int64_t num_heads = 12;
  int64_t image_size = 224;
  int64_t patch_size = 16;
  int64_t num_channels = 3;
  float layer_norm_eps = 1e-6f;
  // Gemma 3 projector and placement.
  int64_t mm_tokens_per_image = 256;
  int64_t text_hidden = 0;
  int32_t image_token_id = 262144;  // the soft tokens an image's embeddings replace
  int32_t boi_token_id = 255999;    // <start_of_image>
  int32_t eoi_token_id = 256000;    // <end_of_image>

  int64_t head_dim() const { return hidden / num_heads; }
  int64_t patches_per_side() const { return image_size / patch_size; }
  int64_t num_patches() const { return patches_per_side() * patches_per_side(); }
  int64_t tokens_per_side() const;  // sqrt(mm_tokens_per_image)

  // From config.json text. Errors name the key: a model_type other than gemma3, no
  // vision_config, a hidden_act other than gelu_pytorch_tanh, vision_use_head true, shapes
  // that do not divide (image by patch, hidden by heads, patches per side by tokens per side).
  static Result<VisionConfig> from_json(const std::string& json_text, const std::string& origin);
  static Result<VisionConfig> from_dir(const std::string& dir);  // dir/config.json
};

}  // namespace llmserve::vision
