#include "engine/runner/cuda/cuda_ops.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "engine/runner/cuda/cuda_device.h"
#include "llmserve/kernels/cuda/attention.h"
#include "llmserve/kernels/cuda/elementwise.h"
#include "llmserve/kernels/cuda/norm.h"
#include "llmserve/kernels/cuda/paged_kv.h"
#include "llmserve/kernels/cuda/rope.h"
#include "llmserve/kernels/dequantize.h"

namespace llmserve {

namespace kc = kernels::cuda;
using kernels::DType;

namespace {

constexpr size_t kCublasWorkspace = 32u << 20;

Status dequantize_to(const TensorView& t, int64_t r, float* row) {
  const size_t rb = kernels::row_bytes(t.type, t.cols());
  kernels::dequantize_row(t.type, t.data + static_cast<size_t>(r) * rb, row, t.cols());
  return Status::ok();
}

}  // namespace

Result<std::unique_ptr<CudaOps>> CudaOps::create(const CudaOpsOptions& options) {
  if (options.max_tokens <= 0 || options.max_samples <= 0 || options.max_num_seqs <= 0 ||
      options.max_model_len <= 0) {
    return invalid_argument("cuda ops: step limits must be positive");
  }
  if (cuda_device_count() <= options.device) {
    return unavailable("cuda ops: no CUDA device " + std::to_string(options.device));
  }
  std::unique_ptr<CudaOps> ops(new CudaOps(options));
  LLMSERVE_RETURN_IF_ERROR(ops->init());
  return ops;
}

Status CudaOps::init() {
  LLMSERVE_ASSIGN_OR_RETURN(cublas_, load_cublas());
  LLMSERVE_RETURN_IF_ERROR(cuda_status(cudaSetDevice(options_.device), "cudaSetDevice"));
  LLMSERVE_RETURN_IF_ERROR(
      cuda_status(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate"));
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
  buckets_ = decode_graph_buckets(options_.max_num_seqs);

  // Index data: tokens, positions, slots [Tc]; query_start [Bc + 1]; seq_lens [Bc];
  // sample rows [Sc]; block tables [Bc, stride].
  const int64_t Tc = std::max<int64_t>(options_.max_tokens, options_.max_num_seqs);
  const int64_t Bc = options_.max_num_seqs;
  const int64_t Sc = std::max<int64_t>(options_.max_samples, options_.max_num_seqs);
  idx_elems_ = 3 * Tc + (Bc + 1) + Bc + Sc + Bc * bt_stride();
  LLMSERVE_RETURN_IF_ERROR(cuda_status(
      cudaMallocHost(reinterpret_cast<void**>(&staging_), static_cast<size_t>(idx_elems_) * 4),
      "cudaMallocHost"));
  LLMSERVE_ASSIGN_OR_RETURN(void* idx, device_alloc(static_cast<size_t>(idx_elems_) * 4));
  dev_idx_ = static_cast<int32_t*>(idx);
  d_tokens_ = dev_idx_;
  d_positions_ = d_tokens_ + Tc;
  d_slots_ = d_positions_ + Tc;
  d_query_start_ = d_slots_ + Tc;
  d_seq_lens_ = d_query_start_ + Bc + 1;
  d_samples_ = d_seq_lens_ + Bc;
  d_block_tables_ = d_samples_ + Sc;
  return Status::ok();
}

CudaOps::~CudaOps() {
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  release_kv_cache();
  for (void* p : allocations_) cudaFree(p);
  if (staging_ != nullptr) cudaFreeHost(staging_);
  if (host_out_ != nullptr) cudaFreeHost(host_out_);
  if (handle_ != nullptr) cublas_->destroy(handle_);
  if (upload_done_ != nullptr) cudaEventDestroy(upload_done_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

int64_t CudaOps::bt_stride() const {
  return (options_.max_model_len + 15) / 16 + 1;  // enough for block_size >= 16
}

Result<void*> CudaOps::device_alloc(size_t bytes) {
  void* p = nullptr;
  if (cudaError_t e = cudaMalloc(&p, std::max<size_t>(bytes, 256)); e != cudaSuccess) {
    cudaGetLastError();
    return resource_exhausted("cuda ops: cannot allocate " + std::to_string(bytes) +
                              " bytes: " + cudaGetErrorString(e));
  }
  cudaMemset(p, 0, bytes);
  allocations_.push_back(p);
  return p;
}

void CudaOps::check(int cuda_error, const char* what) {
  if (cuda_error != cudaSuccess && error_.is_ok()) error_ = cuda_status(cuda_error, what);
}

Result<Weight> CudaOps::prepare_weight(const TensorView& t) {
  const int64_t rows_n = t.rows(), cols = t.cols();
  if (t.type != DType::F32 && t.type != DType::BF16 &&
      (!kernels::dtype_can_dequantize(t.type) ||
       cols % kernels::dtype_info(t.type).block_elems != 0)) {
    return unimplemented("cuda ops: cannot convert " + t.name + " of type " +
                         std::string(kernels::dtype_name(t.type)));
  }
  std::vector<float> row(static_cast<size_t>(cols));
  if (t.shape.size() <= 1) {  // vectors (norm weights, biases) as f32
    LLMSERVE_RETURN_IF_ERROR(dequantize_to(t, 0, row.data()));
    LLMSERVE_ASSIGN_OR_RETURN(void* d, device_alloc(row.size() * 4));
    LLMSERVE_RETURN_IF_ERROR(
        cuda_status(cudaMemcpy(d, row.data(), row.size() * 4, cudaMemcpyHostToDevice), "upload"));
    return Weight{DType::F32, d, 1, cols};
  }
  if (t.shape.size() != 2) return invalid_argument("cuda ops: " + t.name + " is not a matrix");
  const size_t bytes = static_cast<size_t>(rows_n * cols) * 2;
  LLMSERVE_ASSIGN_OR_RETURN(void* d, device_alloc(bytes));
  if (t.type == DType::BF16) {
    LLMSERVE_RETURN_IF_ERROR(
        cuda_status(cudaMemcpy(d, t.data, bytes, cudaMemcpyHostToDevice), "upload"));
  } else {
    constexpr int64_t kChunkRows = 256;
    std::vector<uint16_t> chunk(static_cast<size_t>(kChunkRows * cols));
    for (int64_t r0 = 0; r0 < rows_n; r0 += kChunkRows) {
      const int64_t n = std::min(kChunkRows, rows_n - r0);
      for (int64_t r = 0; r < n; ++r) {
        LLMSERVE_RETURN_IF_ERROR(dequantize_to(t, r0 + r, row.data()));
        for (int64_t c = 0; c < cols; ++c) {
          chunk[static_cast<size_t>(r * cols + c)] =
              kernels::fp32_to_bf16(row[static_cast<size_t>(c)]);
        }
      }
      LLMSERVE_RETURN_IF_ERROR(
          cuda_status(cudaMemcpy(static_cast<uint16_t*>(d) + r0 * cols, chunk.data(),
                                 static_cast<size_t>(n * cols) * 2, cudaMemcpyHostToDevice),
                      "upload"));
    }
  }
  const int64_t need =
      std::max(options_.max_tokens, options_.max_samples) * std::max<int64_t>(cols, 1);
  if (need > x_bf16_elems_) {  // GEMM input scratch grows at set-up only
    LLMSERVE_ASSIGN_OR_RETURN(
        void* xb, device_alloc(static_cast<size_t>(std::max(
                                   need, std::max<int64_t>(options_.max_num_seqs, 1) * cols)) *
                               2));
    x_bf16_ = static_cast<uint16_t*>(xb);
    x_bf16_elems_ = need;
  }
  return Weight{DType::BF16, d, rows_n, cols};
}

Result<float*> CudaOps::alloc_activation(int64_t n) {
  if (n <= 0) return invalid_argument("cuda ops: buffer size must be positive");
  LLMSERVE_ASSIGN_OR_RETURN(void* p, device_alloc(static_cast<size_t>(n) * 4));
  if (n > host_out_floats_) {
    if (host_out_ != nullptr) cudaFreeHost(host_out_);
    host_out_ = nullptr;
    LLMSERVE_RETURN_IF_ERROR(cuda_status(
        cudaMallocHost(reinterpret_cast<void**>(&host_out_), static_cast<size_t>(n) * 4),
        "cudaMallocHost"));
    host_out_floats_ = n;
  }
  return static_cast<float*>(p);
}

Status CudaOps::alloc_kv_cache(const KvCacheSpec& spec) {
  if (spec.num_layers <= 0 || spec.num_blocks <= 0 || spec.num_kv_heads <= 0 ||
      spec.block_size <= 0 || spec.head_dim <= 0) {
    return invalid_argument("cuda ops: KV cache sizes must be positive");
  }
  if (!k_cache_.empty()) return failed_precondition("cuda ops: KV cache already allocated");
  if (!kc::attention_supports_head_dim(spec.head_dim) || spec.block_size < 16) {
    return unimplemented("cuda ops: attention needs head_dim 64 or 128 and block_size >= 16");
  }
  const size_t per_layer = static_cast<size_t>(spec.num_blocks) * spec.num_kv_heads *
                           spec.block_size * spec.head_dim * 2;
  for (int64_t l = 0; l < spec.num_layers; ++l) {
    for (auto* cache : {&k_cache_, &v_cache_}) {
      void* p = nullptr;
      if (cudaError_t e = cudaMalloc(&p, per_layer); e != cudaSuccess) {
        cudaGetLastError();
        release_kv_cache();
        return resource_exhausted("cuda ops: cannot allocate the KV cache: " +
                                  std::string(cudaGetErrorString(e)));
      }
      cudaMemset(p, 0, per_layer);
      kv_allocations_.push_back(p);
      cache->push_back(static_cast<uint16_t*>(p));
    }
  }
  kv_spec_ = spec;
  const int64_t ws = kc::decode_attention_workspace_floats(
      options_.max_num_seqs, spec.num_kv_heads * 8, spec.head_dim,
      static_cast<int>(options_.max_model_len));
  if (ws > attn_ws_floats_) {
    LLMSERVE_ASSIGN_OR_RETURN(void* w, device_alloc(static_cast<size_t>(ws) * 4));
    attn_ws_ = static_cast<float*>(w);
    attn_ws_floats_ = ws;
  }
  return Status::ok();
}

void CudaOps::release_kv_cache() {
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  for (void* p : kv_allocations_) cudaFree(p);
  kv_allocations_.clear();
  k_cache_.clear();
  v_cache_.clear();
  kv_spec_ = KvCacheSpec{};
}

uint64_t CudaOps::kv_cache_bytes() const {
  return 2ull * static_cast<uint64_t>(kv_spec_.num_layers) *
         static_cast<uint64_t>(kv_spec_.num_blocks) * static_cast<uint64_t>(kv_spec_.num_kv_heads) *
         static_cast<uint64_t>(kv_spec_.block_size) * static_cast<uint64_t>(kv_spec_.head_dim) * 2;
}

Result<KvMemoryPlan> CudaOps::plan_kv_cache(double gpu_memory_utilization) const {
  size_t free_b = 0, total_b = 0;
  LLMSERVE_RETURN_IF_ERROR(cuda_status(cudaStreamSynchronize(stream_), "profile step"));
  LLMSERVE_RETURN_IF_ERROR(cuda_status(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo"));
  const uint64_t used = total_b - free_b;
  const uint64_t profile_kv = kv_cache_bytes();
  const uint64_t block_bytes =
      kv_spec_.num_blocks > 0 ? profile_kv / static_cast<uint64_t>(kv_spec_.num_blocks) : 0;
  return plan_kv_blocks(total_b, used > profile_kv ? used - profile_kv : 0, gpu_memory_utilization,
                        block_bytes);
}

void CudaOps::set_rope(RopeSpec spec) {
  rope_ = std::move(spec);
  if (rope_.inv_freq.empty()) return;
  auto r = device_alloc(rope_.inv_freq.size() * 4);
  if (!r.is_ok()) {
    if (error_.is_ok()) error_ = r.status();
    return;
  }
  inv_freq_ = static_cast<float*>(r.value());
  check(cudaMemcpy(inv_freq_, rope_.inv_freq.data(), rope_.inv_freq.size() * 4,
                   cudaMemcpyHostToDevice),
        "upload rope frequencies");
}

int64_t CudaOps::rows(int64_t n) const {
  if (mode_ == Mode::kEager || real_rows_ == 0) return n;
  return n / real_rows_ * bucket_;
}

Status CudaOps::begin_step(const ForwardBatch& batch) {
  LLMSERVE_RETURN_IF_ERROR(error_);
  if (k_cache_.empty()) return failed_precondition("cuda ops: no KV cache");
  const int64_t T = batch.num_tokens(), B = batch.num_requests(), S = batch.num_samples();
  const int64_t Tc = std::max<int64_t>(options_.max_tokens, options_.max_num_seqs);
  const int64_t Sc = std::max<int64_t>(options_.max_samples, options_.max_num_seqs);
  const int64_t stride = bt_stride();
  if (T > Tc || B > options_.max_num_seqs || S > Sc || batch.max_blocks_per_seq > stride) {
    return invalid_argument("cuda ops: batch of " + std::to_string(T) + " tokens / " +
                            std::to_string(B) + " requests / " + std::to_string(S) + " samples / " +
                            std::to_string(batch.max_blocks_per_seq) +
                            " blocks per sequence exceeds the limits given at creation");
  }
  batch_ = batch;
  mode_ = Mode::kEager;
  bucket_ = 0;
  real_rows_ = T;
  int64_t padded = B;
  if (options_.cuda_graphs && B > 0 && batch.num_decodes == B && T == B && S == B) {
    bucket_ = decode_graph_bucket(buckets_, static_cast<int>(B));
    if (bucket_ > 0) {
      padded = bucket_;
      mode_ = graphs_.has(bucket_) ? Mode::kReplay : Mode::kCapture;
    }
  }
  // The previous upload must have left the staging area before it is rewritten.
  LLMSERVE_RETURN_IF_ERROR(cuda_status(cudaEventSynchronize(upload_done_), "upload wait"));
  int32_t* tok = staging_;
  int32_t* pos = tok + Tc;
  int32_t* slot = pos + Tc;
  int32_t* qs = slot + Tc;
  int32_t* sl = qs + options_.max_num_seqs + 1;
  int32_t* samp = sl + options_.max_num_seqs;
  int32_t* bt = samp + Sc;
  const int64_t Tp = mode_ == Mode::kEager ? T : padded;
  for (int64_t i = 0; i < Tp; ++i) {
    const bool real = i < T;
    tok[i] = real ? batch.token_ids[static_cast<size_t>(i)] : 0;
    pos[i] = real ? batch.positions[static_cast<size_t>(i)] : 0;
    slot[i] = real ? batch.slot_mapping[static_cast<size_t>(i)] : -1;
  }
  max_seq_len_ = 0;
  max_q_len_ = 0;
  for (int64_t b = 0; b <= padded; ++b) {
    qs[b] = b <= B ? batch.query_start[static_cast<size_t>(b)] : static_cast<int32_t>(T + (b - B));
  }
  for (int64_t b = 0; b < padded; ++b) {
    const bool real = b < B;
    sl[b] = real ? batch.seq_lens[static_cast<size_t>(b)] : 0;
    max_seq_len_ = std::max(max_seq_len_, sl[b]);
    if (real) max_q_len_ = std::max(max_q_len_, qs[b + 1] - qs[b]);
    int32_t* row = bt + b * stride;
    for (int64_t j = 0; j < stride; ++j) {
      row[j] = real && j < batch.max_blocks_per_seq
                   ? batch.block_tables[static_cast<size_t>(b * batch.max_blocks_per_seq + j)]
                   : 0;
    }
  }
  const int64_t Sp = mode_ == Mode::kEager ? S : padded;
  for (int64_t s = 0; s < Sp; ++s) {
    samp[s] = s < S ? batch.sample_rows[static_cast<size_t>(s)] : static_cast<int32_t>(s);
  }
  // One copy of everything up to the last block-table row in use.
  const int64_t used = (bt - staging_) + padded * stride;
  LLMSERVE_RETURN_IF_ERROR(
      cuda_status(cudaMemcpyAsync(dev_idx_, staging_, static_cast<size_t>(used) * 4,
                                  cudaMemcpyHostToDevice, stream_),
                  "index upload"));
  LLMSERVE_RETURN_IF_ERROR(cuda_status(cudaEventRecord(upload_done_, stream_), "upload event"));
  if (mode_ == Mode::kCapture) LLMSERVE_RETURN_IF_ERROR(graphs_.begin_capture(stream_));
  return Status::ok();
}

void CudaOps::embedding(const Weight& table, float* out) {
  if (skip()) return;
  check(kc::embedding_bf16(static_cast<const uint16_t*>(table.data), table.cols, d_tokens_,
                           rows(batch_.num_tokens()), out, stream_),
        "embedding");
}

void CudaOps::rms_norm(const float* x, const Weight& w, int64_t n, float eps, float* y) {
  if (skip()) return;
  check(kc::rms_norm(x, static_cast<const float*>(w.data), rows(n), w.cols, eps, y, stream_),
        "rms_norm");
}

void CudaOps::add_rms_norm(float* residual, const float* x, const Weight& w, int64_t n, float eps,
                           float* y) {
  if (skip()) return;
  check(kc::add_rms_norm(residual, x, static_cast<const float*>(w.data), rows(n), w.cols, eps, y,
                         stream_),
        "add_rms_norm");
}

void CudaOps::matmul(const float* x, int64_t M, const Weight& w, const Weight* bias, float* y) {
  if (skip()) return;
  const int64_t m = rows(M);
  if (m <= 0) return;
  if (w.type != DType::BF16 || m * w.cols > x_bf16_elems_) {
    check(cudaErrorInvalidValue, "matmul: weight not prepared by CudaOps or too many rows");
    return;
  }
  check(kc::f32_to_bf16(x, m * w.cols, x_bf16_, stream_), "matmul input to bf16");
  // Row-major y[m, N] = x[m, K] . W[N, K]^T is column-major y^T = W^T^T . x^T.
  const float alpha = 1.0f, beta = 0.0f;
  const cublasStatus_t st = cublas_->gemm_ex(
      handle_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(w.rows), static_cast<int>(m),
      static_cast<int>(w.cols), &alpha, w.data, CUDA_R_16BF, static_cast<int>(w.cols), x_bf16_,
      CUDA_R_16BF, static_cast<int>(w.cols), &beta, y, CUDA_R_32F, static_cast<int>(w.rows),
      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (st != CUBLAS_STATUS_SUCCESS && error_.is_ok()) {
    error_ = internal_error("cuda ops: cublasGemmEx failed with status " + std::to_string(st));
  }
  if (bias != nullptr) {
    check(kc::add_bias(y, static_cast<const float*>(bias->data), m, w.rows, stream_), "bias");
  }
}

void CudaOps::rope(float* x, int heads, int head_dim) {
  if (skip()) return;
  check(kc::apply_rope(x, rows(batch_.num_tokens()), heads, head_dim, d_positions_, inv_freq_,
                       static_cast<int>(rope_.inv_freq.size()), rope_.interleaved, stream_),
        "rope");
}

void CudaOps::write_kv(int64_t layer, const float* k, const float* v) {
  if (skip()) return;
  const auto l = static_cast<size_t>(layer);
  check(kc::write_kv(k, v, d_slots_, rows(batch_.num_tokens()), kv_spec_.num_kv_heads,
                     kv_spec_.block_size, kv_spec_.head_dim, k_cache_[l], v_cache_[l], stream_),
        "write_kv");
}

void CudaOps::prefill_attention(int64_t layer, const float* q, int num_heads, float scale,
                                int64_t req_begin, int64_t req_end, float* out) {
  if (skip()) return;
  const auto l = static_cast<size_t>(layer);
  const kc::PagedKvDevice kv{
      k_cache_[l],      v_cache_[l],           d_block_tables_ + req_begin * bt_stride(),
      bt_stride(),      kv_spec_.num_kv_heads, kv_spec_.block_size,
      kv_spec_.head_dim};
  check(kc::prefill_attention(kv, q, d_query_start_ + req_begin, d_seq_lens_ + req_begin,
                              static_cast<int>(req_end - req_begin), max_q_len_, num_heads, scale,
                              out, stream_),
        "prefill_attention");
}

void CudaOps::decode_attention(int64_t layer, const float* q, int num_heads, float scale,
                               int64_t req_begin, int64_t req_end, float* out) {
  if (skip()) return;
  const auto l = static_cast<size_t>(layer);
  const int64_t B = mode_ == Mode::kEager ? req_end - req_begin : bucket_;
  const int max_len =
      mode_ == Mode::kEager ? max_seq_len_ : static_cast<int>(options_.max_model_len);
  const int64_t need = kc::decode_attention_workspace_floats(static_cast<int>(B), num_heads,
                                                             kv_spec_.head_dim, max_len);
  if (need > attn_ws_floats_) {
    if (mode_ != Mode::kEager) {
      check(cudaErrorMemoryAllocation, "decode attention workspace too small for graph capture");
      return;
    }
    auto w = device_alloc(static_cast<size_t>(need) * 4);
    if (!w.is_ok()) {
      if (error_.is_ok()) error_ = w.status();
      return;
    }
    attn_ws_ = static_cast<float*>(w.value());
    attn_ws_floats_ = need;
  }
  const int64_t row = batch_.query_start[static_cast<size_t>(req_begin)];
  const int64_t stride = static_cast<int64_t>(num_heads) * kv_spec_.head_dim;
  const kc::PagedKvDevice kv{
      k_cache_[l],      v_cache_[l],           d_block_tables_ + req_begin * bt_stride(),
      bt_stride(),      kv_spec_.num_kv_heads, kv_spec_.block_size,
      kv_spec_.head_dim};
  check(kc::decode_attention(kv, q + row * stride, d_seq_lens_ + req_begin, static_cast<int>(B),
                             max_len, num_heads, scale, attn_ws_, out + row * stride, stream_),
        "decode_attention");
}

void CudaOps::silu_mul(const float* gate, const float* up, int64_t n, float* out) {
  if (skip()) return;
  check(kc::silu_mul(gate, up, rows(n), out, stream_), "silu_mul");
}

void CudaOps::gather_sample_rows(const float* x, int64_t dim, float* out) {
  if (skip()) return;
  check(kc::gather_rows(x, dim, d_samples_, rows(batch_.num_samples()), out, stream_),
        "gather_sample_rows");
}

std::span<const float> CudaOps::to_host(const float* x, int64_t n) {
  if (mode_ == Mode::kCapture && error_.is_ok()) {
    if (Status st = graphs_.end_capture(bucket_, stream_); !st.is_ok()) error_ = st;
  } else if (mode_ == Mode::kCapture) {
    cudaGraph_t g = nullptr;
    cudaStreamEndCapture(stream_, &g);  // abandon the broken capture
    if (g != nullptr) cudaGraphDestroy(g);
    cudaGetLastError();
  }
  if (mode_ != Mode::kEager && error_.is_ok()) {
    if (Status st = graphs_.launch(bucket_, stream_); !st.is_ok()) error_ = st;
  }
  mode_ = Mode::kEager;
  n = std::min(n, host_out_floats_);
  if (error_.is_ok()) {
    check(
        cudaMemcpyAsync(host_out_, x, static_cast<size_t>(n) * 4, cudaMemcpyDeviceToHost, stream_),
        "copy to host");
    check(cudaStreamSynchronize(stream_), "step");
  }
  return {host_out_, static_cast<size_t>(std::max<int64_t>(n, 0))};
}

}  // namespace llmserve
