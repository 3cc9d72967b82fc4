// CudaOps set-up: device, cuBLAS, weights, activations, KV cache (the step is cuda_ops_step.cpp).
#include "engine/runner/cuda/cuda_ops.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "engine/runner/cuda/cuda_device.h"
#include "engine/runner/graph_buckets.h"
#include "llmserve/kernels/cuda/attention.h"
#include "llmserve/kernels/cuda/attention_any_head.h"
#include "llmserve/kernels/cuda/decode_attention.h"
#include "llmserve/kernels/cuda/decode_plan.h"
#include "llmserve/kernels/cuda/paged_kv.h"
#include "llmserve/kernels/dequantize.h"

namespace llmserve {

namespace kc = kernels::cuda;
using kernels::DType;

namespace {

constexpr size_t kCublasWorkspace = 32u << 20;

bool is_vector(const TensorView& t) {
  return t.shape.size() <= 1;
}

Status check_convertible(const TensorView& t) {
  if (t.type != DType::F32 && t.type != DType::BF16 &&
      (!kernels::dtype_can_dequantize(t.type) ||
       t.cols() % kernels::dtype_info(t.type).block_elems != 0)) {
    return unimplemented("cuda ops: cannot convert " + t.name + " of type " +
                         std::string(kernels::dtype_name(t.type)));
  }
  if (t.shape.size() > 2) return invalid_argument("cuda ops: " + t.name + " is not a matrix");
  return Status::ok();
}

void dequantize_row(const TensorView& t, int64_t r, float* row) {
  const size_t rb = kernels::row_bytes(t.type, t.cols());
  kernels::dequantize_row(t.type, t.data + static_cast<size_t>(r) * rb, row, t.cols());
}

}  // namespace

Result<std::unique_ptr<CudaOps>> CudaOps::create(const CudaOpsOptions& options) {
  if (options.max_tokens <= 0 || options.max_samples <= 0 || options.max_num_seqs <= 0 ||
      options.max_model_len <= 0 || options.num_heads <= 0) {
    return invalid_argument("cuda ops: step limits and num_heads must be positive");
  }
  const int devices = cuda_device_count();
  if (devices <= options.device) {
    return unavailable("cuda ops: no CUDA device " + std::to_string(options.device) + " (" +
                       std::to_string(devices) +
                       " visible: is a GPU and its driver present, and CUDA_VISIBLE_DEVICES "
                       "right?)");
  }
  std::unique_ptr<CudaOps> ops(new CudaOps(options));
  ops->use_graphs_ = options.cuda_graphs;
  LLMSERVE_RETURN_IF_ERROR(ops->init());
  return ops;
}

Status CudaOps::init() {
  LLMSERVE_ASSIGN_OR_RETURN(cublas_, load_cublas());
  LLMSERVE_RETURN_IF_ERROR(cuda_status(cudaSetDevice(options_.device), "cudaSetDevice"));
  LLMSERVE_RETURN_IF_ERROR(cuda_status(
      cudaDeviceGetAttribute(&num_sms_, cudaDevAttrMultiProcessorCount, options_.device),
      "cudaDeviceGetAttribute"));
  LLMSERVE_RETURN_IF_ERROR(
      cuda_status(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate"));
  // What is in use before this instance allocates anything (other processes, and this context):
  // the KV plan counts only what comes after.
  size_t free_b = 0, total_b = 0;
  LLMSERVE_RETURN_IF_ERROR(cuda_status(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo"));
  baseline_used_ = total_b - free_b;
  LLMSERVE_RETURN_IF_ERROR(cuda_status(
      cudaEventCreateWithFlags(&upload_done_, cudaEventDisableTiming), "cudaEventCreate"));
  if (cublas_->create(&handle_) != CUBLAS_STATUS_SUCCESS)
    return internal_error("cuda ops: cublasCreate failed");
  LLMSERVE_ASSIGN_OR_RETURN(void* ws, device_alloc(kCublasWorkspace));
  if (cublas_->set_stream(handle_, stream_) != CUBLAS_STATUS_SUCCESS ||
      cublas_->set_workspace(handle_, ws, kCublasWorkspace) != CUBLAS_STATUS_SUCCESS ||
      cublas_->set_math_mode(handle_, CUBLAS_DEFAULT_MATH) != CUBLAS_STATUS_SUCCESS) {
    return internal_error("cuda ops: cannot configure cuBLAS");
  }
  LLMSERVE_ASSIGN_OR_RETURN(bias_gemm_, BiasGemm::create(ws, kCublasWorkspace));
  buckets_ = decode_graph_buckets(options_.max_num_seqs, options_.max_tokens, options_.max_samples);
  return cuda_status(cudaStreamSynchronize(stream_), "set-up");
}

Status CudaOps::make_step_index(const KvCacheSpec& spec) {
  kc::DecodePlanConfig cfg;
  cfg.block_size = spec.block_size;
  cfg.num_kv_heads = spec.num_kv_heads;
  cfg.num_sms = num_sms_;
  cfg.sliding_window = static_cast<int>(spec.sliding_window);
  if (kc::attention_supports_head_dim(spec.head_dim)) {
    LLMSERVE_RETURN_IF_ERROR(cuda_status(
        kc::decode_attention_ctas_per_sm(spec.head_dim, options_.num_heads, spec.num_kv_heads,
                                         &cfg.ctas_per_sm, spec.dtype),
        "decode attention occupancy"));
  }  // else attention_any_head serves decodes and the plan only sizes the step index
  const int capacity = kc::decode_plan_capacity(options_.max_num_seqs, cfg);
  StepIndexLimits limits;
  limits.max_tokens = std::max<int64_t>(options_.max_tokens, options_.max_num_seqs);
  limits.max_requests = options_.max_num_seqs;
  limits.max_samples = std::max<int64_t>(options_.max_samples, options_.max_num_seqs);
  limits.block_table_stride = (options_.max_model_len + spec.block_size - 1) / spec.block_size + 1;
  limits.plan_ints = kc::decode_plan_ints(capacity, options_.max_num_seqs);
  const StepIndexLayout layout = StepIndexLayout::make(limits);
  if (staging_ != nullptr && layout.total == layout_.total && capacity == plan_capacity_) {
    plan_config_ = cfg;
    layout_ = layout;
    return Status::ok();
  }
  if (staging_ != nullptr) check(cudaFreeHost(staging_), "cudaFreeHost");
  staging_ = nullptr;
  if (dev_idx_ != nullptr) check(cudaFree(dev_idx_), "cudaFree");
  dev_idx_ = nullptr;
  const size_t bytes = static_cast<size_t>(layout.total) * 4;
  LLMSERVE_RETURN_IF_ERROR(
      cuda_status(cudaMallocHost(reinterpret_cast<void**>(&staging_), bytes), "cudaMallocHost"));
  std::memset(staging_, 0, bytes);
  LLMSERVE_RETURN_IF_ERROR(
      cuda_status(cudaMalloc(reinterpret_cast<void**>(&dev_idx_), bytes), "cudaMalloc"));
  LLMSERVE_RETURN_IF_ERROR(
      cuda_status(cudaMemsetAsync(dev_idx_, 0, bytes, stream_), "cudaMemsetAsync"));
  plan_config_ = cfg;
  plan_capacity_ = capacity;
  layout_ = layout;
  return Status::ok();
}

CudaOps::~CudaOps() {
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  release_kv_cache();
  for (void* p : allocations_) cudaFree(p);
  if (staging_ != nullptr) cudaFreeHost(staging_);
  if (dev_idx_ != nullptr) cudaFree(dev_idx_);
  if (host_out_ != nullptr) cudaFreeHost(host_out_);
  if (handle_ != nullptr) cublas_->destroy(handle_);
  if (upload_done_ != nullptr) cudaEventDestroy(upload_done_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

Result<void*> CudaOps::device_alloc(size_t bytes) {
  void* p = nullptr;
  if (cudaError_t e = cudaMalloc(&p, std::max<size_t>(bytes, 256)); e != cudaSuccess) {
    cudaGetLastError();
    return resource_exhausted("cuda ops: cannot allocate " + std::to_string(bytes) +
                              " bytes: " + cudaGetErrorString(e));
  }
  allocations_.push_back(p);
  LLMSERVE_RETURN_IF_ERROR(cuda_status(cudaMemsetAsync(p, 0, bytes, stream_), "cudaMemsetAsync"));
  return p;
}

Status CudaOps::upload(void* dst, const void* src, size_t bytes) {
  // From pageable memory the call returns once `src` is staged, so `src` may be reused at once.
  return cuda_status(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_), "upload");
}

void CudaOps::check(int cuda_error, const char* what) {
  if (cuda_error != cudaSuccess && error_.is_ok()) error_ = cuda_status(cuda_error, what);
}

void CudaOps::record(const Status& st) {
  if (!st.is_ok() && error_.is_ok()) error_ = st;
}

// Writes t as bf16 rows (or an f32 vector) at dst.
Status CudaOps::upload_matrix(const TensorView& t, void* dst) {
  const int64_t rows_n = t.rows(), cols = t.cols();
  std::vector<float> row(static_cast<size_t>(cols));
  if (is_vector(t)) {
    dequantize_row(t, 0, row.data());
    return upload(dst, row.data(), row.size() * 4);
  }
  if (t.type == DType::BF16) return upload(dst, t.data, static_cast<size_t>(rows_n * cols) * 2);
  constexpr int64_t kChunkRows = 256;
  std::vector<uint16_t> chunk(static_cast<size_t>(std::min(kChunkRows, rows_n) * cols));
  for (int64_t r0 = 0; r0 < rows_n; r0 += kChunkRows) {
    const int64_t n = std::min(kChunkRows, rows_n - r0);
    for (int64_t r = 0; r < n; ++r) {
      dequantize_row(t, r0 + r, row.data());
      for (int64_t c = 0; c < cols; ++c) {
        chunk[static_cast<size_t>(r * cols + c)] =
            kernels::fp32_to_bf16(row[static_cast<size_t>(c)]);
      }
    }
    LLMSERVE_RETURN_IF_ERROR(upload(static_cast<uint16_t*>(dst) + r0 * cols, chunk.data(),
                                    static_cast<size_t>(n * cols) * 2));
  }
  return Status::ok();
}

Result<Weight> CudaOps::prepare_weight(const TensorView& t) {
  const TensorView* one[] = {&t};
  LLMSERVE_ASSIGN_OR_RETURN(std::vector<Weight> w, prepare_fused(one));
  return w[0];
}

Result<std::vector<Weight>> CudaOps::prepare_fused(std::span<const TensorView* const> ts) {
  if (ts.empty()) return invalid_argument("cuda ops: no tensors to prepare");
  if (std::any_of(ts.begin(), ts.end(),
                  [](const TensorView* t) { return t->type == DType::F8_E4M3; })) {
    std::vector<Weight> out;  // FP8 weights stay as stored, each its own matmul (cuda_fp8.cpp)
    for (const TensorView* t : ts) {
      if (t->type == DType::F8_E4M3) {
        LLMSERVE_ASSIGN_OR_RETURN(Weight w, prepare_fp8(*t));
        out.push_back(w);
      } else {
        LLMSERVE_ASSIGN_OR_RETURN(Weight w, prepare_weight(*t));
        out.push_back(w);
      }
    }
    return out;
  }
  const bool vectors = is_vector(*ts[0]);
  size_t bytes = 0;
  int64_t fused_rows = 0;
  for (const TensorView* t : ts) {
    LLMSERVE_RETURN_IF_ERROR(check_convertible(*t));
    if (is_vector(*t) != vectors || (!vectors && t->cols() != ts[0]->cols())) {
      return invalid_argument("cuda ops: cannot fuse " + t->name + " with " + ts[0]->name);
    }
    bytes += vectors ? static_cast<size_t>(t->cols()) * 4
                     : static_cast<size_t>(t->rows() * t->cols()) * 2;
    fused_rows += vectors ? t->cols() : t->rows();
  }
  LLMSERVE_ASSIGN_OR_RETURN(void* base, device_alloc(bytes));
  std::vector<Weight> out;
  auto* at = static_cast<uint8_t*>(base);
  for (const TensorView* t : ts) {
    LLMSERVE_RETURN_IF_ERROR(upload_matrix(*t, at));
    if (vectors) {
      out.push_back(Weight{DType::F32, at, 1, t->cols()});
      at += static_cast<size_t>(t->cols()) * 4;
    } else {
      out.push_back(Weight{DType::BF16, at, t->rows(), t->cols()});
      at += static_cast<size_t>(t->rows() * t->cols()) * 2;
    }
  }
  if (ts.size() > 1) fused_first_.push_back(base);
  if (!vectors && ts.size() > 1) {
    const int64_t need = std::max<int64_t>(options_.max_tokens, options_.max_num_seqs) * fused_rows;
    if (need > fused_out_floats_) {  // the fused GEMM output grows at set-up only
      LLMSERVE_ASSIGN_OR_RETURN(void* f, device_alloc(static_cast<size_t>(need) * 4));
      fused_out_ = static_cast<float*>(f);
      fused_out_floats_ = need;
    }
  }
  LLMSERVE_RETURN_IF_ERROR(cuda_status(cudaStreamSynchronize(stream_), "weight upload"));
  return out;
}

Result<float*> CudaOps::alloc_activation(int64_t n) {
  if (n <= 0) return invalid_argument("cuda ops: buffer size must be positive");
  LLMSERVE_ASSIGN_OR_RETURN(void* p, device_alloc(static_cast<size_t>(n) * 4));
  if (n > host_out_floats_) {
    if (host_out_ != nullptr) check(cudaFreeHost(host_out_), "cudaFreeHost");
    host_out_ = nullptr;
    LLMSERVE_RETURN_IF_ERROR(cuda_status(
        cudaMallocHost(reinterpret_cast<void**>(&host_out_), static_cast<size_t>(n) * 4),
        "cudaMallocHost"));
    host_out_floats_ = n;
  }
  LLMSERVE_RETURN_IF_ERROR(cuda_status(cudaStreamSynchronize(stream_), "activation set-up"));
  return static_cast<float*>(p);
}

Status CudaOps::alloc_kv_cache(const KvCacheSpec& spec) {
  if (spec.num_layers <= 0 || spec.num_blocks <= 0 || spec.num_kv_heads <= 0 ||
      spec.block_size <= 0 || spec.head_dim <= 0) {
    return invalid_argument("cuda ops: KV cache sizes must be positive");
  }
  if (!k_cache_.empty()) return failed_precondition("cuda ops: KV cache already allocated");
  if (options_.num_heads % spec.num_kv_heads != 0) {
    return invalid_argument("cuda ops: " + std::to_string(options_.num_heads) +
                            " query heads are not a multiple of " +
                            std::to_string(spec.num_kv_heads) + " KV heads");
  }
  if (!(kc::attention_supports_head_dim(spec.head_dim) ||
        kc::attention_any_head_supports(spec.head_dim)) ||
      spec.block_size % 16 != 0) {
    return unimplemented(
        "cuda ops: attention needs a head_dim that is a multiple of 32 up to 256 and a "
        "block_size that is a multiple of 16 (got head_dim " +
        std::to_string(spec.head_dim) + ", block_size " + std::to_string(spec.block_size) + ")");
  }
  const int elem_bytes = kc::kv_device_elem_bytes(spec.dtype);
  if (elem_bytes == 0) {
    return unimplemented(std::string("cuda ops: KV cache dtype ") +
                         kernels::kv_dtype_name(spec.dtype) +
                         " is CPU-only (the CUDA backend stores bf16, int8 or fp8)");
  }
  const size_t rows = static_cast<size_t>(spec.num_blocks) * spec.num_kv_heads * spec.block_size;
  const size_t per_layer = rows * static_cast<size_t>(spec.head_dim) * elem_bytes;
  const size_t scale_bytes =
      kernels::kv_dtype_scaled(spec.dtype) ? rows * kernels::kKvScaleBytes : 0;
  auto alloc = [&](size_t bytes) -> Result<void*> {
    void* p = nullptr;
    if (cudaError_t e = cudaMalloc(&p, bytes); e != cudaSuccess) {
      cudaGetLastError();
      return resource_exhausted("cuda ops: cannot allocate the KV cache: " +
                                std::string(cudaGetErrorString(e)));
    }
    kv_allocations_.push_back(p);
    LLMSERVE_RETURN_IF_ERROR(cuda_status(cudaMemsetAsync(p, 0, bytes, stream_), "KV cache clear"));
    return p;
  };
  for (int64_t l = 0; l < spec.num_layers; ++l) {
    for (auto* cache : {&k_cache_, &v_cache_}) {
      Result<void*> p = alloc(per_layer);
      if (!p.is_ok()) {
        release_kv_cache();
        return p.status();
      }
      cache->push_back(p.value());
    }
    for (auto* scales : {&k_scales_, &v_scales_}) {
      Result<void*> p =
          scale_bytes > 0 ? alloc(scale_bytes) : Result<void*>(static_cast<void*>(nullptr));
      if (!p.is_ok()) {
        release_kv_cache();
        return p.status();
      }
      scales->push_back(static_cast<uint16_t*>(p.value()));
    }
  }
  kv_spec_ = spec;
  LLMSERVE_RETURN_IF_ERROR(make_step_index(spec));
  const int64_t ws = kc::decode_workspace_floats(static_cast<int>(plan_capacity_),
                                                 options_.num_heads, spec.head_dim);
  if (ws > attn_ws_floats_) {
    LLMSERVE_ASSIGN_OR_RETURN(void* w, device_alloc(static_cast<size_t>(ws) * 4));
    attn_ws_ = static_cast<float*>(w);
    attn_ws_floats_ = ws;
  }
  return cuda_status(cudaStreamSynchronize(stream_), "KV cache set-up");
}

void CudaOps::release_kv_cache() {
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  for (void* p : kv_allocations_) check(cudaFree(p), "cudaFree of the KV cache");
  kv_allocations_.clear();
  k_cache_.clear();
  v_cache_.clear();
  k_scales_.clear();
  v_scales_.clear();
  kv_spec_ = KvCacheSpec{};
}

uint64_t CudaOps::kv_cache_bytes() const {
  if (k_cache_.empty()) return 0;
  // K and V: per (layer, slot, kv head) a head_dim row of elements and, quantized, its scale.
  const auto row =
      static_cast<uint64_t>(kernels::kv_head_row_bytes(kv_spec_.dtype, kv_spec_.head_dim));
  return 2ull * static_cast<uint64_t>(kv_spec_.num_layers) *
         static_cast<uint64_t>(kv_spec_.num_blocks) * static_cast<uint64_t>(kv_spec_.num_kv_heads) *
         static_cast<uint64_t>(kv_spec_.block_size) * row;
}

std::optional<KvDeviceMemory> CudaOps::kv_device_memory() const {
  if (k_cache_.empty()) return std::nullopt;
  // Per layer [num_blocks, num_kv_heads, block_size, head_dim] elements (and scales
  // [num_blocks, num_kv_heads, block_size]): block b is one contiguous run of each array.
  const auto rows =
      static_cast<uint64_t>(kv_spec_.num_kv_heads) * static_cast<uint64_t>(kv_spec_.block_size);
  const uint64_t elems = rows * static_cast<uint64_t>(kv_spec_.head_dim) *
                         static_cast<uint64_t>(kc::kv_device_elem_bytes(kv_spec_.dtype));
  const bool scaled = kernels::kv_dtype_scaled(kv_spec_.dtype);
  KvDeviceMemory m;
  m.device = options_.device;
  m.sync_compute = [this] { return cuda_status(cudaStreamSynchronize(stream_), "step"); };
  for (size_t l = 0; l < k_cache_.size(); ++l) {
    m.arrays.push_back({k_cache_[l], elems});
    m.arrays.push_back({v_cache_[l], elems});
    if (scaled) {
      m.arrays.push_back({k_scales_[l], rows * kernels::kKvScaleBytes});
      m.arrays.push_back({v_scales_[l], rows * kernels::kKvScaleBytes});
    }
  }
  return m;
}

Result<KvMemoryPlan> CudaOps::plan_kv_cache(double gpu_memory_utilization) const {
  size_t free_b = 0, total_b = 0;
  LLMSERVE_RETURN_IF_ERROR(cuda_status(cudaStreamSynchronize(stream_), "profile step"));
  LLMSERVE_RETURN_IF_ERROR(cuda_status(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo"));
  const uint64_t used = total_b - free_b;
  const uint64_t ours = used > baseline_used_ ? used - baseline_used_ : 0;
  const uint64_t profile_kv = kv_cache_bytes();
  const uint64_t block_bytes =
      kv_spec_.num_blocks > 0 ? profile_kv / static_cast<uint64_t>(kv_spec_.num_blocks) : 0;
  return plan_kv_blocks(total_b, ours > profile_kv ? ours - profile_kv : 0, gpu_memory_utilization,
                        block_bytes, free_b + profile_kv);
}

void CudaOps::set_rope(RopeSpec spec) {
  rope_ = std::move(spec);
  if (rope_.inv_freq.empty()) return;
  auto r = device_alloc(rope_.inv_freq.size() * 4);
  if (!r.is_ok()) {
    record(r.status());
    return;
  }
  inv_freq_ = static_cast<float*>(r.value());
  record(upload(inv_freq_, rope_.inv_freq.data(), rope_.inv_freq.size() * 4));
  if (!rope_.local_inv_freq.empty()) {
    auto l = device_alloc(rope_.local_inv_freq.size() * 4);
    if (!l.is_ok()) {
      record(l.status());
      return;
    }
    local_inv_freq_ = static_cast<float*>(l.value());
    record(upload(local_inv_freq_, rope_.local_inv_freq.data(), rope_.local_inv_freq.size() * 4));
  }
  check(cudaStreamSynchronize(stream_), "rope set-up");
}

}  // namespace llmserve
