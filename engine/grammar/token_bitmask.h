// A token bitmask: bit (id % 32) of word (id / 32) set = token id allowed (xgrammar's layout).
#pragma once

#include <cstdint>
#include <span>

namespace llmserve {

constexpr int32_t token_bitmask_words(int32_t vocab_size) {
  return (vocab_size + 31) / 32;
}

inline bool token_allowed(std::span<const uint32_t> mask, int32_t id) {
  const auto word = static_cast<size_t>(id) / 32;
  return word < mask.size() && ((mask[word] >> (static_cast<uint32_t>(id) % 32)) & 1u) != 0;
}

// logits[id] = -inf for every id the mask does not allow (ids past the mask included).
void apply_token_bitmask(std::span<float> logits, std::span<const uint32_t> mask);

}  // namespace llmserve
