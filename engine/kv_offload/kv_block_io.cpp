#include "engine/kv_offload/kv_block_io.h"

#include <cstring>
#include <new>

namespace llmserve {

KvHostBlockIo::KvHostBlockIo(KvHostMemory memory) : memory_(std::move(memory)) {
  for (const KvHostArray& a : memory_.arrays) block_bytes_ += a.block_bytes;
}

Status KvHostBlockIo::copy_out(int32_t block_id, std::span<std::byte> dst) const {
  if (dst.size() != block_bytes_) return invalid_argument("kv block copy: wrong buffer size");
  std::byte* out = dst.data();
  const auto* base = static_cast<const std::byte*>(memory_.base);
  for (const KvHostArray& a : memory_.arrays) {
    std::memcpy(out, base + a.offset + static_cast<uint64_t>(block_id) * a.block_bytes,
                a.block_bytes);
    out += a.block_bytes;
  }
  return Status::ok();
}

Status KvHostBlockIo::copy_in(int32_t block_id, std::span<const std::byte> src) const {
  if (src.size() != block_bytes_) return invalid_argument("kv block copy: wrong buffer size");
  const std::byte* in = src.data();
  auto* base = static_cast<std::byte*>(memory_.base);
  for (const KvHostArray& a : memory_.arrays) {
    std::memcpy(base + a.offset + static_cast<uint64_t>(block_id) * a.block_bytes, in,
                a.block_bytes);
    in += a.block_bytes;
  }
  return Status::ok();
}

Result<KvHostBuffer> KvHostBlockIo::alloc_host(uint64_t bytes) const {
  auto* p = static_cast<std::byte*>(
      ::operator new (static_cast<size_t>(bytes), std::align_val_t{64}, std::nothrow));
  if (p == nullptr) {
    return resource_exhausted("kv_offload.host_bytes: cannot allocate " + std::to_string(bytes) +
                              " bytes of host memory");
  }
  return KvHostBuffer(p, [](std::byte* q) { ::operator delete (q, std::align_val_t{64}); });
}

}  // namespace llmserve
