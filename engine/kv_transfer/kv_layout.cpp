#include "engine/kv_transfer/kv_layout.h"

namespace llmserve {
namespace {

template <typename T>
std::string differ(const char* what, const T& mine, const T& theirs) {
  if (mine == theirs) return "";
  if constexpr (std::is_same_v<T, std::string>) {
    return std::string(what) + " '" + mine + "' != '" + theirs + "'";
  } else {
    return std::string(what) + " " + std::to_string(mine) + " != " + std::to_string(theirs);
  }
}

}  // namespace

std::string layout_mismatch(const KvLayout& mine, const KvLayout& theirs) {
  for (std::string d : {differ("model", mine.model, theirs.model),
                        differ("block_size", mine.block_size, theirs.block_size),
                        differ("kv_dtype", mine.kv_dtype, theirs.kv_dtype),
                        differ("num_layers", mine.num_layers, theirs.num_layers),
                        differ("num_kv_heads", mine.num_kv_heads, theirs.num_kv_heads),
                        differ("head_dim", mine.head_dim, theirs.head_dim)}) {
    if (!d.empty()) return d;
  }
  if (mine.array_block_bytes != theirs.array_block_bytes) {
    return "KV arrays differ (" + std::to_string(mine.array_block_bytes.size()) + " vs " +
           std::to_string(theirs.array_block_bytes.size()) + " arrays or their block bytes)";
  }
  return "";
}

}  // namespace llmserve
