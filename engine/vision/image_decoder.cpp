#include "engine/vision/image_decoder.h"

#include <cstring>

#include "engine/vision/image_codecs.h"

namespace llmserve::vision {

ImageFormat sniff_image_format(std::span<const uint8_t> b) {
  if (b.size() >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF) return ImageFormat::kJpeg;
  static const uint8_t kPng[8] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  if (b.size() >= 8 && std::memcmp(b.data(), kPng, 8) == 0) return ImageFormat::kPng;
  if (b.size() >= 12 && std::memcmp(b.data(), "RIFF", 4) == 0 &&
      std::memcmp(b.data() + 8, "WEBP", 4) == 0) {
    return ImageFormat::kWebp;
  }
  return ImageFormat::kUnknown;
}

const char* image_format_name(ImageFormat f) {
  switch (f) {
    case ImageFormat::kJpeg:
      return "JPEG";
    case ImageFormat::kPng:
      return "PNG";
    case ImageFormat::kWebp:
      return "WebP";
    case ImageFormat::kUnknown:
      break;
  }
  return "unknown";
}

Status check_dimensions(int64_t width, int64_t height, const ImageLimits& limits,
                        const char* format) {
  const std::string dims = std::to_string(width) + " x " + std::to_string(height);
  if (width <= 0 || height <= 0) {
    return invalid_argument(std::string(format) + " image has no pixels (" + dims + ")");
  }
  if (width > limits.max_side || height > limits.max_side) {
    return invalid_argument(std::string(format) + " image of " + dims + " pixels exceeds the " +
                            std::to_string(limits.max_side) + "-pixel side limit");
  }
  if (width * height > limits.max_pixels) {
    return invalid_argument(std::string(format) + " image of " + dims + " pixels exceeds the " +
                            std::to_string(limits.max_pixels) + "-pixel limit");
  }
  return Status::ok();
}

void composite_over_white(const uint8_t* rgba, int64_t n, uint8_t* rgb) {
  constexpr uint32_t kBits = 7;  // Pillow's precision bits for this blend
  auto div255 = [](uint32_t a) { return ((a >> 8) + a) >> 8; };
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* s = rgba + i * 4;
    uint8_t* d = rgb + i * 3;
    const uint32_t a = s[3];
    if (a == 0) {
      d[0] = d[1] = d[2] = 255;
      continue;
    }
    // Over a white opaque background: outa255 = 255 * 255, coef1 = a * 2^7, coef2 = (255 - a) *
    // 2^7.
    const uint32_t outa255 = a * 255 + 255 * (255 - a);
    const uint32_t coef1 = a * 255 * 255 * (1u << kBits) / outa255;
    const uint32_t coef2 = 255 * (1u << kBits) - coef1;
    for (int c = 0; c < 3; ++c) {
      const uint32_t t = s[c] * coef1 + 255 * coef2;
      d[c] = static_cast<uint8_t>(div255(t + (0x80u << kBits)) >> kBits);
    }
  }
}

Result<RgbImage> decode_image(std::span<const uint8_t> bytes, const ImageLimits& limits) {
  if (bytes.empty()) return invalid_argument("image is empty");
  if (static_cast<int64_t>(bytes.size()) > limits.max_bytes) {
    return invalid_argument("image of " + std::to_string(bytes.size()) + " bytes exceeds the " +
                            std::to_string(limits.max_bytes) + "-byte limit");
  }
  switch (sniff_image_format(bytes)) {
    case ImageFormat::kJpeg:
      return decode_jpeg(bytes, limits);
    case ImageFormat::kPng:
      return decode_png(bytes, limits);
    case ImageFormat::kWebp:
      return decode_webp(bytes, limits);
    case ImageFormat::kUnknown:
      break;
  }
  return invalid_argument("image format not recognised (JPEG, PNG and WebP are supported)");
}

}  // namespace llmserve::vision
