// One KV page as a file of the disk tier (docs/KV_CACHE.md, "Tiers below the page pool"): a fixed
// header, the token ids of the page's whole prefix (positions 0 .. end of this block), then the
// page's bytes (every cache array's block, in the cache's array order, stored as they are: f16,
// f32 or int8 with its scales). Little-endian:
//
//   off  size  field
//     0     8  magic "LLMSKVP1"
//     8     4  version (1)
//    12     4  block_size (tokens per block)
//    16    16  fingerprint (KvFingerprint::digest: lo, hi)
//    32    16  block hash (lo, hi)
//    48    16  parent block hash (lo, hi; 0 for a prompt's first block)
//    64    16  salt digest (XXH3-128 of the request's cache key; 0 when none)
//    80     4  num_prefix_tokens (a multiple of block_size, >= block_size)
//    84     4  reserved (0)
//    88     8  payload_bytes
//    96     8  XXH3-64 of the payload
//   104     8  XXH3-64 of bytes [0, 104) and the token ids
//   112        token ids (int32 x num_prefix_tokens), then the payload
//
// A hash only finds a candidate; the restore compares the stored token ids, fingerprint and
// salt digest with the request's own (kv_restore_check.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/kv_cache/block_hash.h"

namespace llmserve {

inline constexpr size_t kKvPageHeaderBytes = 112;
inline constexpr uint32_t kKvPageVersion = 1;
// Bounds a parser enforces before reading further (a page of a 1M-token prefix at most).
inline constexpr uint32_t kKvPageMaxPrefixTokens = 1u << 20;
inline constexpr uint64_t kKvPageMaxPayloadBytes = 1ull << 34;

struct KvPageHeader {
  uint32_t block_size = 0;
  BlockHash fingerprint;
  BlockHash hash;
  BlockHash parent;
  BlockHash salt;
  uint32_t num_prefix_tokens = 0;
  uint64_t payload_bytes = 0;
  uint64_t payload_checksum = 0;
};

// A parsed page: views into the bytes it was parsed from.
struct KvPageView {
  KvPageHeader header;
  std::span<const int32_t> tokens;     // num_prefix_tokens ids (aligned copy, see parse)
  std::span<const std::byte> payload;  // payload_bytes (empty when only the header was read)
};

// The bytes of a page file: header, tokens, payload.
std::vector<std::byte> encode_kv_page(const KvPageHeader& header, std::span<const int32_t> tokens,
                                      std::span<const std::byte> payload);

// Bytes a page's header and tokens take (what parse_kv_page_prefix needs).
uint64_t kv_page_prefix_bytes(uint32_t num_prefix_tokens);

// Parses the header and token ids (bytes may end there or go on): checks magic, version, bounds
// and the header checksum. token_storage receives the ids (the file's bytes need not be aligned).
// DATA_LOSS naming the problem on a torn, foreign-format or corrupted header.
Result<KvPageHeader> parse_kv_page_prefix(std::span<const std::byte> bytes,
                                          std::vector<int32_t>& token_storage);

// Parses a whole page and checks its payload's size and checksum too. bytes must be exactly the
// file (a longer or shorter file is torn).
Result<KvPageView> parse_kv_page(std::span<const std::byte> bytes,
                                 std::vector<int32_t>& token_storage);

// XXH3-128 digest of a request's cache key (cache_salt / LoRA), 0 for an empty key.
BlockHash kv_salt_digest(std::string_view cache_key);

}  // namespace llmserve
