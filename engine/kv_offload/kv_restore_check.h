// The rule that decides whether a stored page may serve a request (DESIGN §13): a hash only
// finds a candidate. The page is reused only when its header names the same block hash, parent
// hash, fingerprint, block size and salt digest as the request's block, its stored token ids
// equal the request's tokens over the page's whole prefix, byte for byte, and its payload is
// one block's bytes. Returns "" when it may, else why not.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "engine/kv_offload/kv_page_file.h"

namespace llmserve {

struct KvRestoreTarget {
  BlockHash fingerprint;
  uint32_t block_size = 0;
  uint64_t block_bytes = 0;                 // payload of one block
  BlockHash hash;                           // the request's hash of this block
  BlockHash parent;                         // of the block before (0 for the first)
  BlockHash salt;                           // kv_salt_digest of the request's cache key
  int32_t block_index = 0;                  // which block of the request
  std::span<const int32_t> request_tokens;  // at least (block_index + 1) * block_size
};

std::string kv_restore_mismatch(const KvPageView& page, const KvRestoreTarget& want);

}  // namespace llmserve
