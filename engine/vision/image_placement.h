// Where a prompt's images go, for the engine: the processor's text expansion of each image
// placeholder and the content hash of an image; the soft-token spans, chunk ends and per-row
// inputs come from engine/core/image_spans.h.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/image_spans.h"
#include "engine/vision/image_decoder.h"

namespace llmserve::vision {

// Gemma 3's placeholders: the chat template writes `boi` once per image; the processor replaces
// each with "\n\n" + boi + soft x count + eoi + "\n\n".
struct ImageTokenText {
  std::string boi = "<start_of_image>";
  std::string soft = "<image_soft_token>";
  std::string eoi = "<end_of_image>";
  int64_t count = 256;  // mm_tokens_per_image
};

// The text with every `boi` expanded as Gemma3Processor expands it; *num_images counts them.
std::string expand_image_placeholders(std::string_view text, const ImageTokenText& t,
                                      int64_t* num_images);

// The span logic lives in engine/core/image_spans.h (the scheduler and the KV cache use it too).
using ::llmserve::fill_image_rows;
using ::llmserve::find_image_spans;
using ::llmserve::image_safe_chunk_end;
using ::llmserve::ImageSpan;

// XXH3-64 of the decoded image (width, height, RGB bytes): the same picture in another file
// format or encoding gives the same hash when it decodes to the same pixels.
uint64_t image_content_hash(const RgbImage& image);

}  // namespace llmserve::vision
