// Where a tokenized prompt's images sit, as pure logic the scheduler, the KV cache and the batch
// builder share (engine/vision computes what goes in them): the soft-token spans, prefill chunk
// ends that never split an image (its tokens attend each other, so they run in one step), and
// the per-row image inputs of a chunk (ForwardBatch::input_embeddings / attend_end).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace llmserve {

// A run of image soft tokens: prompt rows [start, start + length).
struct ImageSpan {
  int32_t start = 0;
  int32_t length = 0;
  int32_t end() const { return start + length; }
  friend bool operator==(const ImageSpan&, const ImageSpan&) = default;
};

// The maximal runs of image_token_id in ids, in order (Gemma 3 keeps one image per run: its
// <end_of_image> separates adjacent images).
std::vector<ImageSpan> find_image_spans(std::span<const int32_t> ids, int32_t image_token_id);

// The end of a prefill chunk starting at `start` that may run up to `proposed_end`, moved back
// to the start of an image it would split; when that leaves nothing (the chunk starts at an
// image longer than the budget, or inside one), the image's end: an image always runs whole.
int32_t image_safe_chunk_end(std::span<const ImageSpan> spans, int32_t start, int32_t proposed_end);

// The image inputs of prompt rows [start, start + n): embeddings[i] = the row's features row
// (features[k] is image k's [span length, hidden] block) or null, attend_end[i] = the end of
// the row's image or its position + 1. Precondition: the rows do not split an image, and
// features holds one block per span.
void fill_image_rows(std::span<const ImageSpan> spans, std::span<const float* const> features,
                     int64_t hidden, int32_t start, int32_t n,
                     std::vector<const float*>& embeddings, std::vector<int32_t>& attend_end);

// True when [start, end) holds some but not all of an image's rows while also reaching past
// one of its ends (a chunk may begin inside an image whose head is cached, and end anywhere
// after it; it may not end inside one it did not start in).
bool splits_image(std::span<const ImageSpan> spans, int32_t start, int32_t end);

}  // namespace llmserve
