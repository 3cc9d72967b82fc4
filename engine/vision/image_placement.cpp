#include "engine/vision/image_placement.h"

#include <xxhash.h>

#include <algorithm>

namespace llmserve::vision {

std::string expand_image_placeholders(std::string_view text, const ImageTokenText& t,
                                      int64_t* num_images) {
  std::string full = "\n\n" + t.boi;
  for (int64_t i = 0; i < t.count; ++i) full += t.soft;
  full += t.eoi + "\n\n";
  std::string out;
  int64_t n = 0;
  size_t pos = 0;
  while (true) {
    const size_t at = t.boi.empty() ? std::string_view::npos : text.find(t.boi, pos);
    if (at == std::string_view::npos) break;
    out.append(text.substr(pos, at - pos));
    out += full;
    pos = at + t.boi.size();
    ++n;
  }
  out.append(text.substr(pos));
  if (num_images != nullptr) *num_images = n;
  return out;
}

uint64_t image_content_hash(const RgbImage& image) {
  XXH3_state_t* st = XXH3_createState();
  XXH3_64bits_reset(st);
  const int32_t dims[2] = {image.width, image.height};
  XXH3_64bits_update(st, dims, sizeof(dims));
  XXH3_64bits_update(st, image.pixels.data(), image.pixels.size());
  const uint64_t h = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  return h;
}

}  // namespace llmserve::vision
