// KvBlockIo of a KV cache in CUDA device memory (KvDeviceMemory): a block's arrays are copied
// with cudaMemcpyAsync on a non-blocking stream of this object's own (never the compute stream,
// so the step's kernels do not wait for a tier), then that stream is synchronized. The host
// tier's memory comes from cudaHostAlloc (page-locked), so its copies are DMA at full PCIe
// speed; a disk page's buffer (pageable) is staged by the driver. Thread-safe: one mutex
// serializes the stream's users. Built only with the CUDA toolkit (LLMSERVE_HAVE_KV_OFFLOAD_CUDA).
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <mutex>

#include "engine/kv_offload/kv_block_io.h"

namespace llmserve {

class KvCudaBlockIo final : public KvBlockIo {
 public:
  // memory.arrays non-empty, every base a device pointer of memory.device.
  static Result<std::unique_ptr<KvCudaBlockIo>> create(KvDeviceMemory memory);
  ~KvCudaBlockIo() override;
  Status copy_out(int32_t block_id, std::span<std::byte> dst) const override;
  Status copy_in(int32_t block_id, std::span<const std::byte> src) const override;
  Result<KvHostBuffer> alloc_host(uint64_t bytes) const override;
  std::string host_memory_kind() const override { return "pinned"; }
  Status settle() const override;

 private:
  explicit KvCudaBlockIo(KvDeviceMemory memory);
  KvDeviceMemory memory_;
  cudaStream_t stream_ = nullptr;
  mutable std::mutex mu_;
};

}  // namespace llmserve
