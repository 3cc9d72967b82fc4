// Decoding of JPEG, PNG and WebP bytes into 8-bit RGB (Debian's libjpeg-turbo, libpng, libwebp),
// bounded: the byte count and the header's dimensions are checked before any pixel is allocated.
// Colour handling follows transformers' convert_to_rgb, which the HF image processors apply: an
// image with alpha (or a PNG transparency entry) is composited over white as Pillow's
// alpha_composite does, grey is replicated, palettes are expanded, 16-bit samples keep their high
// byte. EXIF orientation is not applied (HF processors given a PIL image do not).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace llmserve::vision {

struct ImageLimits {
  int64_t max_bytes = 20 << 20;     // encoded size
  int64_t max_pixels = 33'554'432;  // width * height (32 Mi pixels)
  int64_t max_side = 16384;         // width and height each
};

// [height, width, 3] RGB bytes, rows top to bottom.
struct RgbImage {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> pixels;
};

enum class ImageFormat { kUnknown, kJpeg, kPng, kWebp };
ImageFormat sniff_image_format(std::span<const uint8_t> bytes);
const char* image_format_name(ImageFormat f);

// Errors (INVALID_ARGUMENT, message naming the problem): not JPEG / PNG / WebP, corrupt or
// truncated data, over a limit (the limit named), a CMYK JPEG, an animated WebP.
Result<RgbImage> decode_image(std::span<const uint8_t> bytes, const ImageLimits& limits);

}  // namespace llmserve::vision
