// Whether a CUDA device is usable, without failing on machines that have no GPU or driver (the
// runtime is linked statically and finds the driver at run time).
#pragma once

#include <cstdint>
#include <string>

#include "engine/core/status.h"

namespace llmserve {

// Devices the driver reports; 0 when there is no driver, no GPU, or any CUDA error.
int cuda_device_count();

struct CudaDeviceInfo {
  std::string name;
  int sm_major = 0, sm_minor = 0;
  uint64_t total_bytes = 0, free_bytes = 0;
};
Result<CudaDeviceInfo> cuda_device_info(int device);

// "cuda:<device>: <what>: <cudaGetErrorString>" for a failed CUDA call (code as an int).
Status cuda_status(int code, const std::string& what);

}  // namespace llmserve
