// The shape of a daemon's KV pages, as a producer and a consumer compare it before any byte
// moves: the same model, block size, element type, layers, KV heads and head size, and the same
// bytes per block in every array of the cache (K, V, and for int8 their scales).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace llmserve {

struct KvLayout {
  std::string model;       // served model name
  int32_t block_size = 0;  // tokens per block
  std::string kv_dtype;    // f32 | f16 | int8
  int32_t num_layers = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;
  // Bytes of one block in each array of the cache, in the cache's array order.
  std::vector<uint64_t> array_block_bytes;

  friend bool operator==(const KvLayout&, const KvLayout&) = default;
};

// "" when the layouts are equal, else the first difference ("block_size 16 != 32").
std::string layout_mismatch(const KvLayout& mine, const KvLayout& theirs);

}  // namespace llmserve
