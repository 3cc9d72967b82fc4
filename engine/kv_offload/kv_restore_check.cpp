#include "engine/kv_offload/kv_restore_check.h"

#include <algorithm>

namespace llmserve {

std::string kv_restore_mismatch(const KvPageView& page, const KvRestoreTarget& want) {
  const KvPageHeader& h = page.header;
  if (!(h.fingerprint == want.fingerprint)) return "fingerprint";
  if (h.block_size != want.block_size) return "block size";
  if (!(h.hash == want.hash) || !(h.parent == want.parent)) return "hash";
  if (!(h.salt == want.salt)) return "salt";
  if (page.payload.size() != want.block_bytes) return "payload size";
  const uint64_t n = (uint64_t{static_cast<uint32_t>(want.block_index)} + 1) * want.block_size;
  if (h.num_prefix_tokens != n || page.tokens.size() != n || want.request_tokens.size() < n) {
    return "prefix length";
  }
  if (!std::equal(page.tokens.begin(), page.tokens.end(), want.request_tokens.begin())) {
    return "token ids";
  }
  return "";
}

}  // namespace llmserve
