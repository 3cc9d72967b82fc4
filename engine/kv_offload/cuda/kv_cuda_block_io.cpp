#include "engine/kv_offload/cuda/kv_cuda_block_io.h"

#include <cuda_runtime_api.h>

#include <string>

namespace llmserve {
namespace {

Status cuda_error(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Status::ok();
  cudaGetLastError();  // clear the sticky-free error so later calls are not blamed
  return unavailable(std::string("kv_offload: ") + what + ": " + cudaGetErrorString(e));
}

}  // namespace

KvCudaBlockIo::KvCudaBlockIo(KvDeviceMemory memory) : memory_(std::move(memory)) {
  for (const KvDeviceArray& a : memory_.arrays) block_bytes_ += a.block_bytes;
}

Result<std::unique_ptr<KvCudaBlockIo>> KvCudaBlockIo::create(KvDeviceMemory memory) {
  if (memory.arrays.empty()) return invalid_argument("kv_offload: the device KV cache is empty");
  std::unique_ptr<KvCudaBlockIo> io(new KvCudaBlockIo(std::move(memory)));
  LLMSERVE_RETURN_IF_ERROR(cuda_error(cudaSetDevice(io->memory_.device), "cudaSetDevice"));
  LLMSERVE_RETURN_IF_ERROR(cuda_error(
      cudaStreamCreateWithFlags(&io->stream_, cudaStreamNonBlocking), "cudaStreamCreate"));
  return io;
}

KvCudaBlockIo::~KvCudaBlockIo() {
  if (stream_ != nullptr) {
    cudaSetDevice(memory_.device);
    cudaStreamDestroy(stream_);
  }
}

Status KvCudaBlockIo::copy_out(int32_t block_id, std::span<std::byte> dst) const {
  if (dst.size() != block_bytes_) return invalid_argument("kv block copy: wrong buffer size");
  std::lock_guard<std::mutex> lock(mu_);
  LLMSERVE_RETURN_IF_ERROR(cuda_error(cudaSetDevice(memory_.device), "cudaSetDevice"));
  std::byte* out = dst.data();
  for (const KvDeviceArray& a : memory_.arrays) {
    const auto* src =
        static_cast<const std::byte*>(a.base) + static_cast<uint64_t>(block_id) * a.block_bytes;
    LLMSERVE_RETURN_IF_ERROR(cuda_error(
        cudaMemcpyAsync(out, src, a.block_bytes, cudaMemcpyDeviceToHost, stream_), "copy out"));
    out += a.block_bytes;
  }
  return cuda_error(cudaStreamSynchronize(stream_), "copy out");
}

Status KvCudaBlockIo::copy_in(int32_t block_id, std::span<const std::byte> src) const {
  if (src.size() != block_bytes_) return invalid_argument("kv block copy: wrong buffer size");
  std::lock_guard<std::mutex> lock(mu_);
  LLMSERVE_RETURN_IF_ERROR(cuda_error(cudaSetDevice(memory_.device), "cudaSetDevice"));
  const std::byte* in = src.data();
  for (const KvDeviceArray& a : memory_.arrays) {
    auto* dst = static_cast<std::byte*>(a.base) + static_cast<uint64_t>(block_id) * a.block_bytes;
    LLMSERVE_RETURN_IF_ERROR(cuda_error(
        cudaMemcpyAsync(dst, in, a.block_bytes, cudaMemcpyHostToDevice, stream_), "copy in"));
    in += a.block_bytes;
  }
  return cuda_error(cudaStreamSynchronize(stream_), "copy in");
}

Status KvCudaBlockIo::settle() const {
  return memory_.sync_compute ? memory_.sync_compute() : Status::ok();
}

Result<KvHostBuffer> KvCudaBlockIo::alloc_host(uint64_t bytes) const {
  LLMSERVE_RETURN_IF_ERROR(cuda_error(cudaSetDevice(memory_.device), "cudaSetDevice"));
  void* p = nullptr;
  if (cudaError_t e = cudaHostAlloc(&p, bytes, cudaHostAllocPortable); e != cudaSuccess) {
    cudaGetLastError();
    return resource_exhausted("kv_offload.host_bytes: cannot pin " + std::to_string(bytes) +
                              " bytes of host memory (cudaHostAlloc: " + cudaGetErrorString(e) +
                              ")");
  }
  return KvHostBuffer(static_cast<std::byte*>(p), [](std::byte* q) { cudaFreeHost(q); });
}

}  // namespace llmserve
