// The per-format decoders behind decode_image (image_decoder.h). Each checks the dimensions it
// reads from the header with check_dimensions before allocating pixels.
#pragma once

#include <cstdint>
#include <span>

#include "engine/core/status.h"
#include "engine/vision/image_decoder.h"

namespace llmserve::vision {

Status check_dimensions(int64_t width, int64_t height, const ImageLimits& limits,
                        const char* format);

// rgb[n, 3] = rgba[n, 4] composited over opaque white with Pillow's alpha_composite integer
// arithmetic (transformers' convert_to_rgb does this for every image with an alpha channel or a
// transparency entry).
void composite_over_white(const uint8_t* rgba, int64_t n, uint8_t* rgb);

Result<RgbImage> decode_jpeg(std::span<const uint8_t> bytes, const ImageLimits& limits);
Result<RgbImage> decode_png(std::span<const uint8_t> bytes, const ImageLimits& limits);
Result<RgbImage> decode_webp(std::span<const uint8_t> bytes, const ImageLimits& limits);

}  // namespace llmserve::vision
