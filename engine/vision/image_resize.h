// Resampling of 8-bit RGB images equal to Pillow's Image.resize (which the HF "PIL" image
// processors call, and which torchvision's antialiased uint8 resize reproduces): a separable
// convolution, horizontal pass then vertical, whose filter support widens by the downscale
// factor (antialiasing), with Pillow's 22-bit fixed-point coefficients and rounding, so the
// output bytes are the same.
#pragma once

#include "engine/core/status.h"
#include "engine/vision/image_decoder.h"

namespace llmserve::vision {

// Pillow's resampling filters by their PIL.Image.Resampling numbers.
enum class ResampleFilter { kLanczos = 1, kBilinear = 2, kBicubic = 3 };

// out_width, out_height >= 1. An unchanged size returns a copy.
RgbImage resize_image(const RgbImage& in, int out_width, int out_height, ResampleFilter filter);

}  // namespace llmserve::vision
