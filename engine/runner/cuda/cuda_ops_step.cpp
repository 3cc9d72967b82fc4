// CudaOps: one step (begin_step's uploads, the ops, graph capture and replay).
#include <algorithm>
#include <string>

#include "engine/runner/cuda/cuda_device.h"
#include "engine/runner/cuda/cuda_ops.h"
#include "engine/runner/graph_buckets.h"
#include "llmserve/kernels/cuda/attention_any_head.h"
#include "llmserve/kernels/cuda/decode_attention.h"
#include "llmserve/kernels/cuda/decode_plan.h"
#include "llmserve/kernels/cuda/elementwise.h"
#include "llmserve/kernels/cuda/hadamard.h"
#include "llmserve/kernels/cuda/model_variants.h"
#include "llmserve/kernels/cuda/norm.h"
#include "llmserve/kernels/cuda/paged_kv.h"
#include "llmserve/kernels/cuda/prefill_attention.h"
#include "llmserve/kernels/cuda/rope.h"

namespace llmserve {

namespace kc = kernels::cuda;
using kernels::DType;

namespace {

uint16_t* as_bf16(float* p) {
  return reinterpret_cast<uint16_t*>(p);
}
const uint16_t* as_bf16(const float* p) {
  return reinterpret_cast<const uint16_t*>(p);
}

}  // namespace

kc::PagedKvDevice CudaOps::paged_kv(size_t layer, const int32_t* block_tables,
                                    int64_t stride) const {
  kc::PagedKvDevice kv;
  kv.k_cache = k_cache_[layer];
  kv.v_cache = v_cache_[layer];
  kv.block_tables = block_tables;
  kv.block_table_stride = stride;
  kv.num_kv_heads = kv_spec_.num_kv_heads;
  kv.block_size = kv_spec_.block_size;
  kv.head_dim = kv_spec_.head_dim;
  kv.dtype = kv_spec_.dtype;
  kv.k_scales = k_scales_[layer];
  kv.v_scales = v_scales_[layer];
  return kv;
}

int64_t CudaOps::rows(int64_t n) const {
  if (mode_ == Mode::kEager || real_rows_ == 0) return n;
  return n / real_rows_ * bucket_;
}

Status CudaOps::begin_step(const ForwardBatch& batch) {
  LLMSERVE_RETURN_IF_ERROR(error_);
  if (k_cache_.empty()) return failed_precondition("cuda ops: no KV cache");
  if (!step_finished_) finish_step();
  const int64_t T = batch.num_tokens(), B = batch.num_requests(), S = batch.num_samples();
  batch_ = batch;
  mode_ = Mode::kEager;
  bucket_ = 0;
  real_rows_ = T;
  views_ = FusedViews{};
  const bool pure_decode = B > 0 && batch.num_decodes == B && T == B && S == B;
  if (pure_decode && (use_graphs_ || capture_next_)) {
    const int bucket = decode_graph_bucket(buckets_, static_cast<int>(B));
    if (bucket > 0 && capture_next_) {
      mode_ = Mode::kCapture;
    } else if (bucket > 0 && use_graphs_ && graphs_.has(bucket)) {
      mode_ = Mode::kReplay;
    }
    if (mode_ != Mode::kEager) bucket_ = bucket;
  }
  capture_next_ = false;
  // The previous upload must have left the staging area before it is rewritten.
  LLMSERVE_RETURN_IF_ERROR(cuda_status(cudaEventSynchronize(upload_done_), "upload wait"));
  const std::span<int32_t> area(staging_, static_cast<size_t>(layout_.total));
  LLMSERVE_ASSIGN_OR_RETURN(fill_, fill_step_index(batch, bucket_, layout_, area));
  // Decode rows (padding included in graph modes) get a work plan sized by the step's capacity;
  // a captured graph keeps its bucket's capacity as its grid.
  const int64_t decode_rows = mode_ == Mode::kEager ? batch.num_decodes : bucket_;
  decode_capacity_ = 0;
  if (decode_rows > 0) {
    decode_capacity_ = kc::decode_plan_capacity(static_cast<int>(decode_rows), plan_config_);
    if (!kc::plan_decode(area.data() + layout_.seq_lens, static_cast<int>(decode_rows),
                         plan_config_, static_cast<int>(decode_capacity_), plan_) ||
        !kc::pack_decode_plan(plan_, static_cast<int>(decode_capacity_), options_.max_num_seqs,
                              area.data() + layout_.plan)) {
      return internal_error("cuda ops: no decode-attention plan for " +
                            std::to_string(decode_rows) + " requests");
    }
  }
  LLMSERVE_RETURN_IF_ERROR(
      cuda_status(cudaMemcpyAsync(dev_idx_, staging_, static_cast<size_t>(layout_.block_tables) * 4,
                                  cudaMemcpyHostToDevice, stream_),
                  "index upload"));
  if (fill_.table_rows > 0 && fill_.table_width > 0) {
    const size_t pitch = static_cast<size_t>(layout_.block_table_stride) * 4;
    LLMSERVE_RETURN_IF_ERROR(cuda_status(
        cudaMemcpy2DAsync(dev_idx_ + layout_.block_tables, pitch, staging_ + layout_.block_tables,
                          pitch, static_cast<size_t>(fill_.table_width) * 4,
                          static_cast<size_t>(fill_.table_rows), cudaMemcpyHostToDevice, stream_),
        "block-table upload"));
  }
  LLMSERVE_RETURN_IF_ERROR(cuda_status(cudaEventRecord(upload_done_, stream_), "upload event"));
  step_finished_ = false;
  if (mode_ == Mode::kCapture) LLMSERVE_RETURN_IF_ERROR(graphs_.begin_capture(stream_));
  return Status::ok();
}

void CudaOps::embedding(const Weight& table, float* out) {
  if (skip()) return;
  check(kc::embedding_bf16(static_cast<const uint16_t*>(table.data), table.cols,
                           dev_idx_ + layout_.tokens, rows(batch_.num_tokens()), out, stream_),
        "embedding");
}

void CudaOps::rms_norm(const float* x, const Weight& w, int64_t n, float eps, float* y) {
  if (skip()) return;
  views_.erase(y);
  check(kc::rms_norm(x, static_cast<const float*>(w.data), rows(n), w.cols, eps, as_bf16(y),
                     2 * w.cols, stream_),
        "rms_norm");
}

void CudaOps::add_rms_norm(float* residual, const float* x, const Weight& w, int64_t n, float eps,
                           float* y) {
  if (skip()) return;
  views_.erase(y);
  check(kc::add_rms_norm(residual, x, static_cast<const float*>(w.data), rows(n), w.cols, eps,
                         as_bf16(y), 2 * w.cols, stream_),
        "add_rms_norm");
}

// Row-major y[M, N] (row pitch ldy) = x[M, K] (bf16, row pitch x_stride) . W[N, K]^T is, in
// cuBLAS's column-major terms, y^T = W^T^T . x^T; a bias goes into cuBLASLt's epilogue.
void CudaOps::gemm(const void* x_bf16, int64_t x_stride, int64_t M, const void* w, int64_t N,
                   int64_t K, const float* bias, float* y, int64_t ldy) {
  if (bias != nullptr) {
    record(bias_gemm_->run(x_bf16, x_stride, M, w, N, K, bias, y, ldy, stream_));
    return;
  }
  const float alpha = 1.0f, beta = 0.0f;
  const cublasStatus_t st =
      cublas_->gemm_ex(handle_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(N), static_cast<int>(M),
                       static_cast<int>(K), &alpha, w, CUDA_R_16BF, static_cast<int>(K), x_bf16,
                       CUDA_R_16BF, static_cast<int>(x_stride), &beta, y, CUDA_R_32F,
                       static_cast<int>(ldy), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (st != CUBLAS_STATUS_SUCCESS) {
    record(internal_error("cuda ops: cublasGemmEx failed with status " + std::to_string(st)));
  }
}

void CudaOps::matmul(const float* x, int64_t M, const Weight& w, const Weight* bias, float* y) {
  if (skip()) return;
  const int64_t m = rows(M);
  if (m <= 0) return;
  if (w.type == DType::F8_E4M3) {
    views_.erase(y);
    matmul_fp8(as_bf16(x), 2 * w.cols, m, w,
               bias != nullptr ? static_cast<const float*>(bias->data) : nullptr, y, w.rows);
    return;
  }
  if (w.type != DType::BF16) {
    check(cudaErrorInvalidValue, "matmul: weight not prepared by CudaOps");
    return;
  }
  views_.erase(y);
  gemm(as_bf16(x), 2 * w.cols, m, w.data, w.rows, w.cols,
       bias != nullptr ? static_cast<const float*>(bias->data) : nullptr, y, w.rows);
}

void CudaOps::matmul_multi(const float* x, int64_t M, std::span<const Weight* const> ws,
                           std::span<const Weight* const> biases, std::span<float* const> ys) {
  if (skip()) return;
  const int64_t m = rows(M);
  // One GEMM when the weights (and biases) are one prepare_fused group, in order.
  auto contiguous = [this](std::span<const Weight* const> group, size_t elem_bytes) {
    if (group.size() < 2 ||
        std::find(fused_first_.begin(), fused_first_.end(), group[0]->data) == fused_first_.end()) {
      return false;
    }
    for (size_t i = 1; i < group.size(); ++i) {
      const auto* prev = static_cast<const uint8_t*>(group[i - 1]->data);
      const size_t bytes =
          static_cast<size_t>(group[i - 1]->rows * group[i - 1]->cols) * elem_bytes;
      // bf16 matrices share K; f32 bias vectors differ in length.
      if (group[i]->data != prev + bytes) return false;
      if (elem_bytes == 2 && group[i]->cols != group[0]->cols) return false;
    }
    return true;
  };
  int64_t N = 0;
  for (const Weight* w : ws) N += w->rows;
  const bool fused = ys.size() == ws.size() && contiguous(ws, 2) &&
                     (biases.empty() || (biases.size() == ws.size() && contiguous(biases, 4))) &&
                     m * N <= fused_out_floats_;
  if (!fused) {
    Ops::matmul_multi(x, M, ws, biases, ys);
    return;
  }
  if (m <= 0) return;
  views_ = FusedViews{};
  gemm(as_bf16(x), 2 * ws[0]->cols, m, ws[0]->data, N, ws[0]->cols,
       biases.empty() ? nullptr : static_cast<const float*>(biases[0]->data), fused_out_, N);
  int64_t offset = 0;
  for (size_t i = 0; i < ws.size(); ++i) {
    views_.set(ys[i], {fused_out_ + offset, N});
    offset += ws[i]->rows;
  }
}

void CudaOps::head_rms_norm(float* x, const Weight& w, int heads, int head_dim, float eps) {
  if (skip()) return;
  const FusedViews::View v = views_.resolve(x, static_cast<int64_t>(heads) * head_dim);
  check(kc::head_rms_norm(v.data, v.row_stride, rows(batch_.num_tokens()), heads, head_dim,
                          static_cast<const float*>(w.data), eps, stream_),
        "head_rms_norm");
}

void CudaOps::rope(float* x, int heads, int head_dim, bool local) {
  if (skip()) return;
  const bool l = local && local_inv_freq_ != nullptr;
  const FusedViews::View v = views_.resolve(x, static_cast<int64_t>(heads) * head_dim);
  check(kc::apply_rope(v.data, v.row_stride, rows(batch_.num_tokens()), heads, head_dim,
                       dev_idx_ + layout_.positions, l ? local_inv_freq_ : inv_freq_,
                       static_cast<int>((l ? rope_.local_inv_freq : rope_.inv_freq).size()),
                       rope_.interleaved, stream_, rope_.cos_sin_scale),
        "rope");
}

void CudaOps::rotate_heads(float* x, int heads, int head_dim) {
  if (skip()) return;
  const FusedViews::View v = views_.resolve(x, static_cast<int64_t>(heads) * head_dim);
  check(
      kc::hadamard_rows(v.data, v.row_stride, rows(batch_.num_tokens()), heads, head_dim, stream_),
      "hadamard");
}

void CudaOps::rotate_attention_heads(float* out, int heads, int head_dim) {
  if (skip()) return;
  const int64_t width = static_cast<int64_t>(heads) * head_dim;
  check(kc::hadamard_rows_bf16(as_bf16(out), 2 * width, rows(batch_.num_tokens()), heads, head_dim,
                               stream_),
        "hadamard_bf16");
}

void CudaOps::write_kv(int64_t layer, const float* k, const float* v) {
  if (skip()) return;
  const int64_t width = static_cast<int64_t>(kv_spec_.num_kv_heads) * kv_spec_.head_dim;
  const FusedViews::View kv = views_.resolve(k, width), vv = views_.resolve(v, width);
  if (kv.row_stride != vv.row_stride) {
    check(cudaErrorInvalidValue, "write_kv: k and v with different row strides");
    return;
  }
  const auto l = static_cast<size_t>(layer);
  check(kc::write_kv(kv.data, vv.data, kv.row_stride, dev_idx_ + layout_.slots,
                     rows(batch_.num_tokens()), kv_spec_.num_kv_heads, kv_spec_.block_size,
                     kv_spec_.head_dim, kv_spec_.dtype, k_cache_[l], v_cache_[l], k_scales_[l],
                     v_scales_[l], stream_),
        "write_kv");
}

void CudaOps::prefill_attention(int64_t layer, const float* q, int num_heads, float scale,
                                int64_t req_begin, int64_t req_end, float* out) {
  if (skip()) return;
  const auto l = static_cast<size_t>(layer);
  const int64_t width = static_cast<int64_t>(num_heads) * kv_spec_.head_dim;
  const FusedViews::View qv = views_.resolve(q, width);
  views_.erase(out);
  const int64_t stride = layout_.block_table_stride;
  kc::PrefillAttentionParams p;
  p.kv = paged_kv(l, dev_idx_ + layout_.block_tables + req_begin * stride, stride);
  p.q = qv.data;
  p.q_row_stride = qv.row_stride;
  p.out = as_bf16(out);
  p.out_row_stride = 2 * width;
  p.query_start = dev_idx_ + layout_.query_start + req_begin;
  p.seq_lens = dev_idx_ + layout_.seq_lens + req_begin;
  p.num_seqs = static_cast<int>(req_end - req_begin);
  p.max_q_len = fill_.max_q_len;
  p.num_heads = num_heads;
  p.scale = scale;
  p.sliding_window = static_cast<int>(kv_spec_.window(layer));
  if (!kc::attention_supports_head_dim(kv_spec_.head_dim)) {
    check(kc::attention_any_head(p, stream_), "attention_any_head (prefill)");
    return;
  }
  check(kc::prefill_attention(p, stream_), "prefill_attention");
}

void CudaOps::decode_attention(int64_t layer, const float* q, int num_heads, float scale,
                               int64_t req_begin, int64_t req_end, float* out) {
  if (skip()) return;
  if (req_begin != 0 || req_end > batch_.num_decodes || decode_capacity_ == 0) {
    check(cudaErrorInvalidValue, "decode_attention: decodes must be requests [0, num_decodes)");
    return;
  }
  const auto l = static_cast<size_t>(layer);
  const int64_t width = static_cast<int64_t>(num_heads) * kv_spec_.head_dim;
  const FusedViews::View qv = views_.resolve(q, width);
  views_.erase(out);
  if (!kc::attention_supports_head_dim(kv_spec_.head_dim)) {
    kc::PrefillAttentionParams a;  // the decode form: request b owns query row b
    a.kv = paged_kv(l, dev_idx_ + layout_.block_tables, layout_.block_table_stride);
    a.q = qv.data;
    a.q_row_stride = qv.row_stride;
    a.out = as_bf16(out);
    a.out_row_stride = 2 * width;
    a.seq_lens = dev_idx_ + layout_.seq_lens;
    a.num_seqs = static_cast<int>(mode_ == Mode::kEager ? req_end : bucket_);
    a.max_q_len = 1;
    a.num_heads = num_heads;
    a.scale = scale;
    a.sliding_window = static_cast<int>(kv_spec_.window(layer));
    check(kc::attention_any_head(a, stream_), "attention_any_head (decode)");
    return;
  }
  kc::DecodeAttentionParams p;
  p.kv = paged_kv(l, dev_idx_ + layout_.block_tables, layout_.block_table_stride);
  p.q = qv.data;  // decode request b owns row b (decodes come first)
  p.q_row_stride = qv.row_stride;
  p.out = as_bf16(out);
  p.out_row_stride = 2 * width;
  p.num_requests = static_cast<int>(mode_ == Mode::kEager ? req_end : bucket_);
  p.plan = dev_idx_ + layout_.plan;
  p.plan_capacity = static_cast<int>(decode_capacity_);
  p.workspace = attn_ws_;
  p.num_heads = num_heads;
  p.scale = scale;
  p.sliding_window = static_cast<int>(kv_spec_.window(layer));
  p.seq_lens = dev_idx_ + layout_.seq_lens;  // decode request b's length at row b
  check(kc::decode_attention(p, stream_), "decode_attention");
}

void CudaOps::silu_mul(const float* gate, const float* up, int64_t n_rows, int64_t cols,
                       float* out) {
  if (skip()) return;
  const FusedViews::View g = views_.resolve(gate, cols), u = views_.resolve(up, cols);
  views_.erase(out);
  kc::SiluMulArgs a;
  a.gate = g.data;
  a.gate_stride = g.row_stride;
  a.up = u.data;
  a.up_stride = u.row_stride;
  a.out = as_bf16(out);
  a.out_stride = 2 * cols;
  a.rows = rows(n_rows);
  a.cols = cols;
  check(kc::silu_mul(a, stream_), "silu_mul");
}

void CudaOps::gather_sample_rows(const float* x, int64_t dim, float* out) {
  if (skip()) return;
  check(
      kc::gather_rows(x, dim, dev_idx_ + layout_.samples, rows(batch_.num_samples()), out, stream_),
      "gather_sample_rows");
}

void CudaOps::finish_step() {
  if (step_finished_) return;
  step_finished_ = true;
  if (mode_ == Mode::kCapture) {
    if (error_.is_ok()) {
      record(graphs_.end_capture(bucket_, stream_));
    } else {
      DecodeGraphs::abandon_capture(stream_);
    }
  }
  if (mode_ != Mode::kEager && error_.is_ok()) record(graphs_.launch(bucket_, stream_));
  mode_ = Mode::kEager;
}

std::span<const float> CudaOps::to_host(const float* x, int64_t n) {
  finish_step();
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
