#include "engine/kv_offload/kv_block_io.h"

#include <cassert>
#include <cstring>

namespace llmserve {

KvBlockIo::KvBlockIo(KvHostMemory memory) : memory_(std::move(memory)) {
  for (const KvHostArray& a : memory_.arrays) block_bytes_ += a.block_bytes;
}

void KvBlockIo::copy_out(int32_t block_id, std::span<std::byte> dst) const {
  assert(dst.size() == block_bytes_);
  std::byte* out = dst.data();
  const auto* base = static_cast<const std::byte*>(memory_.base);
  for (const KvHostArray& a : memory_.arrays) {
    std::memcpy(out, base + a.offset + static_cast<uint64_t>(block_id) * a.block_bytes,
                a.block_bytes);
    out += a.block_bytes;
  }
}

void KvBlockIo::copy_in(int32_t block_id, std::span<const std::byte> src) const {
  assert(src.size() == block_bytes_);
  const std::byte* in = src.data();
  auto* base = static_cast<std::byte*>(memory_.base);
  for (const KvHostArray& a : memory_.arrays) {
    std::memcpy(base + a.offset + static_cast<uint64_t>(block_id) * a.block_bytes, in,
                a.block_bytes);
    in += a.block_bytes;
  }
}

}  // namespace llmserve
