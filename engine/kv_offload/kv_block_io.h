// Copies one KV block's bytes (every cache array's block, in the cache's array order) between
// the cache and a flat buffer: the page payload of the tiers below the pool. The CPU backend's
// cache lives in host memory (KvHostMemory): a copy is a memcpy per array (KvHostBlockIo). On
// CUDA the cache is in device memory (KvDeviceMemory): kv_cuda_block_io.h copies on a stream
// of its own and gives the host tier pinned memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "engine/core/status.h"
#include "engine/model/ops.h"

namespace llmserve {

// Host memory of the host tier: plain RAM, or page-locked memory the device copies from.
using KvHostBuffer = std::unique_ptr<std::byte[], std::function<void(std::byte*)>>;

class KvBlockIo {
 public:
  virtual ~KvBlockIo() = default;
  uint64_t block_bytes() const { return block_bytes_; }  // payload of one block
  // dst.size() == block_bytes(); block_id < the cache's block count. Thread-safe (the offloader's
  // worker copies out while the engine thread copies in); returns when the bytes have landed.
  virtual Status copy_out(int32_t block_id, std::span<std::byte> dst) const = 0;
  virtual Status copy_in(int32_t block_id, std::span<const std::byte> src) const = 0;
  // bytes of host memory for the host tier, the kind this cache copies from fastest.
  virtual Result<KvHostBuffer> alloc_host(uint64_t bytes) const = 0;
  virtual std::string host_memory_kind() const = 0;  // "RAM" or "pinned"
  // On the engine thread, before blocks the last step wrote are handed to copy_out on another
  // thread: waits until the step's writes have landed (a device's compute stream).
  virtual Status settle() const { return Status::ok(); }

 protected:
  uint64_t block_bytes_ = 0;
};

// The CPU backend's cache: one host allocation.
class KvHostBlockIo final : public KvBlockIo {
 public:
  explicit KvHostBlockIo(KvHostMemory memory);
  Status copy_out(int32_t block_id, std::span<std::byte> dst) const override;
  Status copy_in(int32_t block_id, std::span<const std::byte> src) const override;
  Result<KvHostBuffer> alloc_host(uint64_t bytes) const override;
  std::string host_memory_kind() const override { return "RAM"; }

 private:
  KvHostMemory memory_;
};

}  // namespace llmserve
