// Image decoding (JPEG / PNG / WebP through libjpeg-turbo, libpng, libwebp) and the Gemma 3
// preprocessing of what decodes, under small limits. Errors are Statuses, never crashes, and a
// decoded image always holds width * height * 3 bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "engine/vision/image_decoder.h"
#include "engine/vision/image_preprocessor.h"

namespace {
uint64_t g_sink = 0;  // keeps results observable
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace llmserve::vision;
  ImageLimits limits;
  limits.max_bytes = 1 << 20;
  limits.max_pixels = 1 << 20;
  limits.max_side = 4096;
  auto img = decode_image(std::span(data, size), limits);
  if (!img.is_ok()) return 0;
  if (img->pixels.size() != static_cast<size_t>(img->width) * img->height * 3) std::abort();
  ImagePreprocessor pre;
  pre.height = 14;
  pre.width = 21;
  auto px = pre.process(*img);
  if (px.is_ok()) g_sink += static_cast<uint64_t>((*px)[0] * 255.0f);
  return 0;
}
