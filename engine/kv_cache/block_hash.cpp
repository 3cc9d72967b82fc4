#include "engine/kv_cache/block_hash.h"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <xxhash.h>

namespace llmserve {

BlockHash hash_block_tokens(const BlockHash& parent, std::span<const int32_t> tokens,
                            std::span<const std::byte> extra_key) {
  XXH3_state_t state;
  XXH3_INITSTATE(&state);
  XXH3_128bits_reset(&state);
  const uint64_t parent_words[2] = {parent.lo, parent.hi};
  XXH3_128bits_update(&state, parent_words, sizeof(parent_words));
  XXH3_128bits_update(&state, tokens.data(), tokens.size_bytes());
  if (!extra_key.empty()) {
    const uint64_t len = extra_key.size();
    XXH3_128bits_update(&state, &len, sizeof(len));
    XXH3_128bits_update(&state, extra_key.data(), extra_key.size());
  }
  const XXH128_hash_t h = XXH3_128bits_digest(&state);
  return BlockHash{h.low64, h.high64};
}

}  // namespace llmserve
