// Copies one KV block's bytes (every cache array's block, in the cache's array order) between
// the cache and a flat buffer: the page payload of the tiers below the pool. The CPU backend's
// cache lives in host memory (KvHostMemory), so a copy is a memcpy per array.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "engine/model/ops.h"

namespace llmserve {

class KvBlockIo {
 public:
  explicit KvBlockIo(KvHostMemory memory);
  uint64_t block_bytes() const { return block_bytes_; }  // payload of one block
  // dst.size() == block_bytes(); block_id < the cache's block count.
  void copy_out(int32_t block_id, std::span<std::byte> dst) const;
  void copy_in(int32_t block_id, std::span<const std::byte> src) const;

 private:
  KvHostMemory memory_;
  uint64_t block_bytes_ = 0;
};

}  // namespace llmserve
