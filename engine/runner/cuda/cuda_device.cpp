#include "engine/runner/cuda/cuda_device.h"

#include <cuda_runtime_api.h>

namespace llmserve {

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return n;
}

Result<CudaDeviceInfo> cuda_device_info(int device) {
  cudaDeviceProp prop{};
  if (cudaError_t e = cudaGetDeviceProperties(&prop, device); e != cudaSuccess) {
    return cuda_status(e, "cudaGetDeviceProperties");
  }
  CudaDeviceInfo info;
  info.name = prop.name;
  info.sm_major = prop.major;
  info.sm_minor = prop.minor;
  size_t free_b = 0, total_b = 0;
  if (cudaError_t e = cudaSetDevice(device); e != cudaSuccess)
    return cuda_status(e, "cudaSetDevice");
  if (cudaError_t e = cudaMemGetInfo(&free_b, &total_b); e != cudaSuccess) {
    return cuda_status(e, "cudaMemGetInfo");
  }
  info.total_bytes = total_b;
  info.free_bytes = free_b;
  return info;
}

Status cuda_status(int code, const std::string& what) {
  if (code == cudaSuccess) return Status::ok();
  return internal_error("cuda: " + what + ": " +
                        cudaGetErrorString(static_cast<cudaError_t>(code)));
}

}  // namespace llmserve
