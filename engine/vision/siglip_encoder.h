// The SigLIP vision tower of Gemma 3 (transformers' SiglipVisionModel without the pooling head):
// patch embedding (a conv of stride patch_size, computed as a matmul over flattened patches) plus
// learned position embeddings, then pre-LayerNorm transformer layers with bidirectional
// multi-head attention and a tanh-GELU MLP, then post_layernorm. CPU, f32 activations; weights
// stay in their stored type (F32 / F16 / BF16) and view the checkpoint's memory, which must
// outlive the encoder.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/core/status.h"
#include "engine/vision/vision_config.h"
#include "engine/vision/vision_ops.h"
#include "engine/vision/vision_weights.h"
#include "llmserve/kernels/thread_pool.h"

namespace llmserve::vision {

class SiglipEncoder {
 public:
  static Result<SiglipEncoder> create(const VisionConfig& cfg, const VisionWeights& weights);

  // pixels [3, image_size, image_size] (an ImagePreprocessor's output) -> out [num_patches,
  // hidden], patches in row-major order. Not reentrant (uses the encoder's scratch).
  void encode(kernels::ThreadPool& pool, const float* pixels, float* out);
  // Bytes of the scratch buffers (their full size once an image has been encoded).
  uint64_t scratch_bytes() const {
    uint64_t n = 0;
    for (const auto* v : {&patches_, &h_, &q_, &k_, &v_, &attn_, &mlp_}) {
      n += v->capacity();
    }
    return n * sizeof(float);
  }

 private:
  struct Layer {
    std::vector<float> ln1_w, ln1_b, ln2_w, ln2_b;
    Linear q, k, v, o, fc1, fc2;
  };
  VisionConfig cfg_;
  Linear patch_;                 // [hidden, 3 * patch * patch]
  std::vector<float> position_;  // [num_patches, hidden]
  std::vector<Layer> layers_;
  std::vector<float> post_w_, post_b_;
  // Scratch.
  std::vector<float> patches_, h_, q_, k_, v_, attn_, mlp_;
};

}  // namespace llmserve::vision
