#include "engine/core/image_spans.h"

#include <algorithm>

namespace llmserve {

std::vector<ImageSpan> find_image_spans(std::span<const int32_t> ids, int32_t image_token_id) {
  std::vector<ImageSpan> spans;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] != image_token_id) continue;
    size_t end = i;
    while (end < ids.size() && ids[end] == image_token_id) ++end;
    spans.push_back({static_cast<int32_t>(i), static_cast<int32_t>(end - i)});
    i = end - 1;
  }
  return spans;
}

int32_t image_safe_chunk_end(std::span<const ImageSpan> spans, int32_t start,
                             int32_t proposed_end) {
  for (const ImageSpan& s : spans) {
    if (s.start < proposed_end && proposed_end < s.end() && s.end() > start) {
      return s.start > start ? s.start : s.end();
    }
  }
  return proposed_end;
}

void fill_image_rows(std::span<const ImageSpan> spans, std::span<const float* const> features,
                     int64_t hidden, int32_t start, int32_t n,
                     std::vector<const float*>& embeddings, std::vector<int32_t>& attend_end) {
  embeddings.assign(static_cast<size_t>(n), nullptr);
  attend_end.resize(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) attend_end[static_cast<size_t>(i)] = start + i + 1;
  for (size_t k = 0; k < spans.size() && k < features.size(); ++k) {
    const ImageSpan& s = spans[k];
    const int32_t lo = std::max(s.start, start), hi = std::min(s.end(), start + n);
    for (int32_t p = lo; p < hi; ++p) {
      embeddings[static_cast<size_t>(p - start)] = features[k] + (p - s.start) * hidden;
      attend_end[static_cast<size_t>(p - start)] = s.end();
    }
  }
}

bool splits_image(std::span<const ImageSpan> spans, int32_t start, int32_t end) {
  for (const ImageSpan& s : spans) {
    if (start < s.end() && s.start < end && end < s.end()) return true;
  }
  return false;
}

}  // namespace llmserve
