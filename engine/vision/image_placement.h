// Where a prompt's images go, for the engine: the processor's text expansion of each image
// placeholder, the soft-token spans of a tokenized prompt, prefill chunk ends that never split an
// image (its tokens attend each other, so they must run in one step), the per-row image inputs
// of a chunk (ForwardBatch::input_embeddings / attend_end), and the content hash of an image.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

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

// A run of image soft tokens: prompt rows [start, start + length).
struct ImageSpan {
  int32_t start = 0;
  int32_t length = 0;
  int32_t end() const { return start + length; }
};

// The maximal runs of image_token_id in ids, in order (Gemma 3 keeps one image per run: its
// <end_of_image> separates adjacent images).
std::vector<ImageSpan> find_image_spans(std::span<const int32_t> ids, int32_t image_token_id);

// The end of a prefill chunk starting at `start` that may run up to `proposed_end`, moved back
// to the start of an image it would split; when that leaves nothing (the chunk starts at an
// image longer than the budget), the image's end: an image always runs whole.
int32_t image_safe_chunk_end(std::span<const ImageSpan> spans, int32_t start, int32_t proposed_end);

// The image inputs of prompt rows [start, start + n): embeddings[i] = the row's features row
// (features[k] is image k's [span length, hidden] block) or null, attend_end[i] = the end of
// the row's image or its position + 1. Precondition: the rows do not split an image, and
// features holds one block per span.
void fill_image_rows(std::span<const ImageSpan> spans, std::span<const float* const> features,
                     int64_t hidden, int32_t start, int32_t n,
                     std::vector<const float*>& embeddings, std::vector<int32_t>& attend_end);

// XXH3-64 of the decoded image (width, height, RGB bytes): the same picture in another file
// format or encoding gives the same hash when it decodes to the same pixels.
uint64_t image_content_hash(const RgbImage& image);

}  // namespace llmserve::vision
