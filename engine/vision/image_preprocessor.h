// The HF image processor of a vision model (Gemma3ImageProcessor; SigLIP's likewise): convert to
// RGB (done by decoding), resize to size.{height,width} with `resample`, multiply by
// rescale_factor, normalise per channel by image_mean / image_std. Read from the model folder's
// preprocessor_config.json, or the "image_processor" object of processor_config.json
// (transformers 5 writes it there).
#pragma once

#include <array>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/vision/image_decoder.h"
#include "engine/vision/image_resize.h"

namespace llmserve::vision {

struct ImagePreprocessor {
  int height = 224;
  int width = 224;
  ResampleFilter resample = ResampleFilter::kBilinear;
  bool do_resize = true;
  bool do_rescale = true;
  double rescale_factor = 1.0 / 255.0;
  bool do_normalize = true;
  std::array<double, 3> mean = {0.5, 0.5, 0.5};
  std::array<double, 3> std = {0.5, 0.5, 0.5};

  // Reads the config from a JSON object (the keys above as HF names them). Errors name the key:
  // an unsupported resample, do_pan_and_scan true (not supported yet), a zero std.
  static Result<ImagePreprocessor> from_json(const std::string& json_text,
                                             const std::string& origin);
  // From a model folder (preprocessor_config.json, else processor_config.json's image_processor).
  static Result<ImagePreprocessor> from_dir(const std::string& dir);

  // pixel values [3, height, width] f32, channel-major (the `pixel_values` of one image).
  // Precondition: do_resize, or the image already has the configured size (else an error).
  Result<std::vector<float>> process(const RgbImage& image) const;
};

}  // namespace llmserve::vision
