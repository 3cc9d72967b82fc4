#include "engine/kv_offload/kv_page_file.h"

#include <cstring>

#include <xxhash.h>

namespace llmserve {
namespace {

constexpr char kMagic[8] = {'L', 'L', 'M', 'S', 'K', 'V', 'P', '1'};

void put32(std::byte* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::byte>(v >> (8 * i));
}
void put64(std::byte* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<std::byte>(v >> (8 * i));
}
uint32_t get32(const std::byte* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}
uint64_t get64(const std::byte* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}
void put_hash(std::byte* p, const BlockHash& h) {
  put64(p, h.lo);
  put64(p + 8, h.hi);
}
BlockHash get_hash(const std::byte* p) {
  return BlockHash{get64(p), get64(p + 8)};
}

uint64_t prefix_checksum(std::span<const std::byte> bytes, uint64_t token_bytes) {
  XXH3_state_t* st = XXH3_createState();
  XXH3_64bits_reset(st);
  XXH3_64bits_update(st, bytes.data(), 104);
  XXH3_64bits_update(st, bytes.data() + kKvPageHeaderBytes, token_bytes);
  const uint64_t h = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  return h;
}

}  // namespace

uint64_t kv_page_prefix_bytes(uint32_t num_prefix_tokens) {
  return kKvPageHeaderBytes + uint64_t{num_prefix_tokens} * sizeof(int32_t);
}

std::vector<std::byte> encode_kv_page(const KvPageHeader& h, std::span<const int32_t> tokens,
                                      std::span<const std::byte> payload) {
  const uint64_t token_bytes = tokens.size() * sizeof(int32_t);
  std::vector<std::byte> out(kKvPageHeaderBytes + token_bytes + payload.size());
  std::byte* p = out.data();
  std::memcpy(p, kMagic, 8);
  put32(p + 8, kKvPageVersion);
  put32(p + 12, h.block_size);
  put_hash(p + 16, h.fingerprint);
  put_hash(p + 32, h.hash);
  put_hash(p + 48, h.parent);
  put_hash(p + 64, h.salt);
  put32(p + 80, static_cast<uint32_t>(tokens.size()));
  put32(p + 84, 0);
  put64(p + 88, payload.size());
  put64(p + 96, XXH3_64bits(payload.data(), payload.size()));
  for (size_t i = 0; i < tokens.size(); ++i) {
    put32(p + kKvPageHeaderBytes + 4 * i, static_cast<uint32_t>(tokens[i]));
  }
  if (!payload.empty()) {
    std::memcpy(p + kKvPageHeaderBytes + token_bytes, payload.data(), payload.size());
  }
  put64(p + 104, prefix_checksum(out, token_bytes));
  return out;
}

Result<KvPageHeader> parse_kv_page_prefix(std::span<const std::byte> bytes,
                                          std::vector<int32_t>& token_storage) {
  if (bytes.size() < kKvPageHeaderBytes) return data_loss("kv page: shorter than its header");
  const std::byte* p = bytes.data();
  if (std::memcmp(p, kMagic, 8) != 0) return data_loss("kv page: bad magic");
  if (get32(p + 8) != kKvPageVersion) return data_loss("kv page: unknown version");
  KvPageHeader h;
  h.block_size = get32(p + 12);
  h.fingerprint = get_hash(p + 16);
  h.hash = get_hash(p + 32);
  h.parent = get_hash(p + 48);
  h.salt = get_hash(p + 64);
  h.num_prefix_tokens = get32(p + 80);
  h.payload_bytes = get64(p + 88);
  h.payload_checksum = get64(p + 96);
  if (h.block_size == 0 || h.num_prefix_tokens == 0 ||
      h.num_prefix_tokens > kKvPageMaxPrefixTokens || h.num_prefix_tokens % h.block_size != 0) {
    return data_loss("kv page: bad block size or prefix length");
  }
  if (get32(p + 84) != 0) return data_loss("kv page: reserved field set");
  if (h.payload_bytes > kKvPageMaxPayloadBytes) return data_loss("kv page: payload too large");
  const uint64_t token_bytes = uint64_t{h.num_prefix_tokens} * 4;
  if (bytes.size() < kKvPageHeaderBytes + token_bytes) {
    return data_loss("kv page: torn (token ids cut off)");
  }
  if (prefix_checksum(bytes, token_bytes) != get64(p + 104)) {
    return data_loss("kv page: header checksum mismatch");
  }
  token_storage.resize(h.num_prefix_tokens);
  for (uint32_t i = 0; i < h.num_prefix_tokens; ++i) {
    token_storage[i] = static_cast<int32_t>(get32(p + kKvPageHeaderBytes + 4 * uint64_t{i}));
  }
  return h;
}

Result<KvPageView> parse_kv_page(std::span<const std::byte> bytes,
                                 std::vector<int32_t>& token_storage) {
  LLMSERVE_ASSIGN_OR_RETURN(KvPageHeader h, parse_kv_page_prefix(bytes, token_storage));
  const uint64_t start = kv_page_prefix_bytes(h.num_prefix_tokens);
  if (bytes.size() != start + h.payload_bytes) {
    return data_loss("kv page: torn (file is " + std::to_string(bytes.size()) +
                     " bytes, header says " + std::to_string(start + h.payload_bytes) + ")");
  }
  const auto payload = bytes.subspan(start);
  if (XXH3_64bits(payload.data(), payload.size()) != h.payload_checksum) {
    return data_loss("kv page: payload checksum mismatch");
  }
  return KvPageView{h, token_storage, payload};
}

BlockHash kv_salt_digest(std::string_view cache_key) {
  if (cache_key.empty()) return BlockHash{};
  const XXH128_hash_t h = XXH3_128bits(cache_key.data(), cache_key.size());
  return BlockHash{h.low64, h.high64};
}

}  // namespace llmserve
