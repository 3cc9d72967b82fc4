#include "engine/runner/cuda/cublas_loader.h"

#include <dlfcn.h>

#include <string>

namespace llmserve {
namespace {

Result<CublasApi> open_cublas() {
  void* lib = nullptr;
  for (const char* name : {"libcublas.so.13", "libcublas.so"}) {
    lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (lib != nullptr) break;
  }
  if (lib == nullptr)
    return unavailable("cuda: cannot load libcublas.so.13: " + std::string(dlerror()));
  CublasApi api;
  auto sym = [&](auto& fn, const char* name) -> Status {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
    return fn != nullptr ? Status::ok() : unavailable(std::string("cuda: libcublas lacks ") + name);
  };
  LLMSERVE_RETURN_IF_ERROR(sym(api.create, "cublasCreate_v2"));
  LLMSERVE_RETURN_IF_ERROR(sym(api.destroy, "cublasDestroy_v2"));
  LLMSERVE_RETURN_IF_ERROR(sym(api.set_stream, "cublasSetStream_v2"));
  LLMSERVE_RETURN_IF_ERROR(sym(api.set_workspace, "cublasSetWorkspace_v2"));
  LLMSERVE_RETURN_IF_ERROR(sym(api.set_math_mode, "cublasSetMathMode"));
  LLMSERVE_RETURN_IF_ERROR(sym(api.gemm_ex, "cublasGemmEx"));
  return api;
}

}  // namespace

Result<const CublasApi*> load_cublas() {
  static const Result<CublasApi> api = open_cublas();
  if (!api.is_ok()) return api.status();
  return &api.value();
}

}  // namespace llmserve
