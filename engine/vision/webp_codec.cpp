// WebP through libwebp: still images only (an animation is refused); with alpha, RGBA composited
// over white (composite_over_white) as transformers' convert_to_rgb does.
#include <webp/decode.h>

#include <string>
#include <vector>

#include "engine/vision/image_codecs.h"

namespace llmserve::vision {

Result<RgbImage> decode_webp(std::span<const uint8_t> bytes, const ImageLimits& limits) {
  WebPBitstreamFeatures features;
  const VP8StatusCode st = WebPGetFeatures(bytes.data(), bytes.size(), &features);
  if (st == VP8_STATUS_NOT_ENOUGH_DATA) {
    return invalid_argument("corrupt WebP image: the data is truncated");
  }
  if (st != VP8_STATUS_OK) {
    return invalid_argument("corrupt WebP image: bad header (status " + std::to_string(st) + ")");
  }
  if (features.has_animation != 0)
    return invalid_argument("animated WebP images are not supported");
  LLMSERVE_RETURN_IF_ERROR(check_dimensions(features.width, features.height, limits, "WebP"));
  RgbImage img;
  img.width = features.width;
  img.height = features.height;
  const size_t n = static_cast<size_t>(img.width) * img.height;
  img.pixels.resize(n * 3);
  if (features.has_alpha != 0) {
    std::vector<uint8_t> rgba(n * 4);
    if (WebPDecodeRGBAInto(bytes.data(), bytes.size(), rgba.data(), rgba.size(), img.width * 4) ==
        nullptr) {
      return invalid_argument("corrupt WebP image: the data does not decode");
    }
    composite_over_white(rgba.data(), static_cast<int64_t>(n), img.pixels.data());
    return img;
  }
  if (WebPDecodeRGBInto(bytes.data(), bytes.size(), img.pixels.data(), img.pixels.size(),
                        img.width * 3) == nullptr) {
    return invalid_argument("corrupt WebP image: the data does not decode");
  }
  return img;
}

}  // namespace llmserve::vision
