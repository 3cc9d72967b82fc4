#include "engine/grammar/token_bitmask.h"

#include <limits>

namespace llmserve {

void apply_token_bitmask(std::span<float> logits, std::span<const uint32_t> mask) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const size_t n = logits.size();
  for (size_t w = 0; w * 32 < n; ++w) {
    const uint32_t bits = w < mask.size() ? mask[w] : 0u;
    if (bits == ~0u) continue;
    const size_t end = std::min(n, w * 32 + 32);
    for (size_t id = w * 32; id < end; ++id) {
      if (((bits >> (id - w * 32)) & 1u) == 0) logits[id] = kNegInf;
    }
  }
}

}  // namespace llmserve
