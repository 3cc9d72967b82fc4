// llama.cpp's mmproj GGUF of a Gemma 3 vision tower and projector (convert_hf_to_gguf.py
// --mmproj): the clip.* keys give the SigLIP shape, the projector's scale and the image processor
// (image_size square, mean / std, bilinear resize, rescale 1/255); the v.* and mm.* tensors are
// viewed under the names of the HF checkpoint (the converter's mm.soft_emb_norm holds 1 + w, so
// w is recovered). The image token ids are not in the file: they come from the text model's
// tokenizer (MmprojTokenIds).
#pragma once

#include <string>

#include "engine/core/status.h"
#include "engine/vision/image_preprocessor.h"
#include "engine/vision/vision_config.h"
#include "engine/vision/vision_weights.h"

namespace llmserve::vision {

struct MmprojTokenIds {
  int32_t image_token_id = 262144;  // <image_soft_token>
  int32_t boi_token_id = 255999;    // <start_of_image>
  int32_t eoi_token_id = 256000;    // <end_of_image>
};

struct Mmproj {
  VisionConfig config;
  ImagePreprocessor preprocessor;
  VisionWeights weights;
};

// Errors name the key or tensor: not a clip file, a projector other than gemma3, no vision
// encoder, a missing or non-positive shape key, shapes that do not divide, a tensor of another
// shape than the keys imply.
Result<Mmproj> read_mmproj(const std::string& path, const MmprojTokenIds& ids);

}  // namespace llmserve::vision
