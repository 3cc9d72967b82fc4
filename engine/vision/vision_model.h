// An image -> the text model's input embeddings, for a Gemma 3 checkpoint folder: the image
// processor (image_preprocessor.h), the SigLIP tower (siglip_encoder.h) and the projector
// (gemma3_projector.h), loaded together. One image gives mm_tokens_per_image rows of
// text_hidden floats, which replace the image soft tokens of the prompt.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/vision/gemma3_projector.h"
#include "engine/vision/image_decoder.h"
#include "engine/vision/image_preprocessor.h"
#include "engine/vision/mmproj_gguf.h"
#include "engine/vision/siglip_encoder.h"
#include "engine/vision/vision_config.h"
#include "engine/vision/vision_weights.h"
#include "llmserve/kernels/thread_pool.h"

namespace llmserve::vision {

class VisionModel {
 public:
  // dir: the HF folder (config.json with vision_config, safetensors, preprocessor config).
  static Result<std::unique_ptr<VisionModel>> load(const std::string& dir);
  // path: llama.cpp's mmproj GGUF (mmproj_gguf.h); the image token ids from the text tokenizer.
  static Result<std::unique_ptr<VisionModel>> load_mmproj(const std::string& path,
                                                          const MmprojTokenIds& ids);

  const VisionConfig& config() const { return cfg_; }
  const ImagePreprocessor& preprocessor() const { return pre_; }

  // pixels [3, image_size, image_size] -> [mm_tokens_per_image, text_hidden]. vision_hidden,
  // when given, receives the tower's output [num_patches, hidden]. Not reentrant.
  std::vector<float> encode_pixels(kernels::ThreadPool& pool, const float* pixels,
                                   std::vector<float>* vision_hidden = nullptr);
  // The image through the processor, then encode_pixels.
  Result<std::vector<float>> encode_image(kernels::ThreadPool& pool, const RgbImage& image);
  // Bytes of the tower's and projector's scratch (full once an image has been encoded).
  uint64_t scratch_bytes() const {
    return encoder_.scratch_bytes() + projector_.scratch_bytes() +
           hidden_.capacity() * sizeof(float);
  }

 private:
  VisionModel(VisionConfig cfg, ImagePreprocessor pre, VisionWeights w, SiglipEncoder e,
              Gemma3Projector p)
      : cfg_(cfg),
        pre_(pre),
        weights_(std::move(w)),
        encoder_(std::move(e)),
        projector_(std::move(p)) {}
  VisionConfig cfg_;
  ImagePreprocessor pre_;
  VisionWeights weights_;  // the memory the encoder's weights view
  SiglipEncoder encoder_;
  Gemma3Projector projector_;
  std::vector<float> hidden_;
};

}  // namespace llmserve::vision
