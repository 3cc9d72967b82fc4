#include "engine/runner/cuda/cublas_loader.h"

#include <dlfcn.h>

#include <string>

namespace llmserve {
namespace {

Result<void*> open_library(const char* soname, const char* fallback) {
  for (const char* name : {soname, fallback}) {
    if (void* lib = dlopen(name, RTLD_NOW | RTLD_LOCAL); lib != nullptr) return lib;
  }
  return unavailable(std::string("cuda: cannot load ") + soname + ": " + dlerror());
}

// Binds fn to symbol `name` of lib.
template <typename Fn>
Status bind(void* lib, Fn& fn, const char* name) {
  fn = reinterpret_cast<Fn>(dlsym(lib, name));
  return fn != nullptr ? Status::ok() : unavailable(std::string("cuda: no symbol ") + name);
}

Result<CublasApi> open_cublas() {
  LLMSERVE_ASSIGN_OR_RETURN(void* lib, open_library("libcublas.so.13", "libcublas.so"));
  CublasApi api;
  auto sym = [lib](auto& fn, const char* name) { return bind(lib, fn, name); };
  LLMSERVE_RETURN_IF_ERROR(sym(api.create, "cublasCreate_v2"));
  LLMSERVE_RETURN_IF_ERROR(sym(api.destroy, "cublasDestroy_v2"));
  LLMSERVE_RETURN_IF_ERROR(sym(api.set_stream, "cublasSetStream_v2"));
  LLMSERVE_RETURN_IF_ERROR(sym(api.set_workspace, "cublasSetWorkspace_v2"));
  LLMSERVE_RETURN_IF_ERROR(sym(api.set_math_mode, "cublasSetMathMode"));
  LLMSERVE_RETURN_IF_ERROR(sym(api.gemm_ex, "cublasGemmEx"));
  return api;
}

Result<CublasLtApi> open_cublas_lt() {
  LLMSERVE_ASSIGN_OR_RETURN(void* lib, open_library("libcublasLt.so.13", "libcublasLt.so"));
  CublasLtApi api;
  auto sym = [lib](auto& fn, const char* name) { return bind(lib, fn, name); };
  LLMSERVE_RETURN_IF_ERROR(sym(api.create, "cublasLtCreate"));
  LLMSERVE_RETURN_IF_ERROR(sym(api.destroy, "cublasLtDestroy"));
  LLMSERVE_RETURN_IF_ERROR(sym(api.desc_create, "cublasLtMatmulDescCreate"));
  LLMSERVE_RETURN_IF_ERROR(sym(api.desc_destroy, "cublasLtMatmulDescDestroy"));
  LLMSERVE_RETURN_IF_ERROR(sym(api.desc_set, "cublasLtMatmulDescSetAttribute"));
  LLMSERVE_RETURN_IF_ERROR(sym(api.layout_create, "cublasLtMatrixLayoutCreate"));
  LLMSERVE_RETURN_IF_ERROR(sym(api.layout_destroy, "cublasLtMatrixLayoutDestroy"));
  LLMSERVE_RETURN_IF_ERROR(sym(api.pref_create, "cublasLtMatmulPreferenceCreate"));
  LLMSERVE_RETURN_IF_ERROR(sym(api.pref_destroy, "cublasLtMatmulPreferenceDestroy"));
  LLMSERVE_RETURN_IF_ERROR(sym(api.pref_set, "cublasLtMatmulPreferenceSetAttribute"));
  LLMSERVE_RETURN_IF_ERROR(sym(api.heuristic, "cublasLtMatmulAlgoGetHeuristic"));
  LLMSERVE_RETURN_IF_ERROR(sym(api.matmul, "cublasLtMatmul"));
  return api;
}

}  // namespace

Result<const CublasLtApi*> load_cublas_lt() {
  static const Result<CublasLtApi> api = open_cublas_lt();
  if (!api.is_ok()) return api.status();
  return &api.value();
}

Result<const CublasApi*> load_cublas() {
  static const Result<CublasApi> api = open_cublas();
  if (!api.is_ok()) return api.status();
  return &api.value();
}

}  // namespace llmserve
