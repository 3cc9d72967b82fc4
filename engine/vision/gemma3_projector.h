// Gemma 3's multi-modal projector (transformers' Gemma3MultiModalProjector): the SigLIP output
// [patches_per_side^2, vision hidden] average-pooled in k x k windows (k = patches per side /
// tokens per side) to mm_tokens_per_image rows, RMSNorm with (1 + w) (eps: the vision
// layer_norm_eps), then times mm_input_projection_weight [vision hidden, text hidden].
#pragma once

#include <cstdint>
#include <vector>

#include "engine/core/status.h"
#include "engine/vision/vision_config.h"
#include "engine/vision/vision_weights.h"
#include "llmserve/kernels/thread_pool.h"

namespace llmserve::vision {

class Gemma3Projector {
 public:
  static Result<Gemma3Projector> create(const VisionConfig& cfg, const VisionWeights& weights);

  // vision [num_patches, hidden] -> out [mm_tokens_per_image, text_hidden]. Not reentrant.
  void project(kernels::ThreadPool& pool, const float* vision, float* out);
  uint64_t scratch_bytes() const { return pooled_.capacity() * sizeof(float); }

 private:
  VisionConfig cfg_;
  std::vector<float> norm_;    // 1 + w, [hidden]
  std::vector<float> proj_t_;  // the projection transposed: [text_hidden, hidden]
  std::vector<float> pooled_;  // scratch [tokens, hidden]
};

}  // namespace llmserve::vision
