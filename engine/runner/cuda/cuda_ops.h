// The CUDA backend of Ops (DESIGN §5). Weights are uploaded once as BF16 (dequantized on the
// host from any GGUF / safetensors type the CPU can read; vectors as f32); GEMMs run through
// cuBLAS (BF16 inputs, f32 accumulate and output); the KV cache is per layer K and V of
// [num_blocks, num_kv_heads, block_size, head_dim] BF16 in device memory. A step's index data is
// uploaded in one copy at begin_step. Pure-decode steps (T == B == S) are captured as a CUDA
// graph per batch-size bucket on first use and replayed with padded inputs; other steps run
// eagerly. Ops that fail record the first error: status() and the next begin_step return it.
// Not thread-safe: one step at a time.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/model/ops.h"
#include "engine/runner/cuda/cublas_loader.h"
#include "engine/runner/cuda/decode_graphs.h"
#include "engine/runner/cuda/kv_memory_plan.h"

namespace llmserve {

struct CudaOpsOptions {
  int device = 0;
  int64_t max_tokens = 2048;     // new tokens per step
  int64_t max_samples = 256;     // sampled rows per step
  int max_num_seqs = 256;        // requests per step
  int64_t max_model_len = 4096;  // tokens per sequence (block-table width, decode graph grid)
  bool cuda_graphs = true;       // capture decode steps
};

class CudaOps final : public Ops {
 public:
  // Errors: no device, no cuBLAS, or a CUDA call failing.
  static Result<std::unique_ptr<CudaOps>> create(const CudaOpsOptions& options);
  ~CudaOps() override;

  Result<Weight> prepare_weight(const TensorView& t) override;
  Result<float*> alloc_activation(int64_t n) override;
  Status alloc_kv_cache(const KvCacheSpec& spec) override;
  const KvCacheSpec& kv_cache_spec() const override { return kv_spec_; }
  void set_rope(RopeSpec spec) override;

  Status begin_step(const ForwardBatch& batch) override;
  void embedding(const Weight& table, float* out) override;
  void rms_norm(const float* x, const Weight& w, int64_t rows, float eps, float* y) override;
  void add_rms_norm(float* residual, const float* x, const Weight& w, int64_t rows, float eps,
                    float* y) override;
  void matmul(const float* x, int64_t M, const Weight& w, const Weight* bias, float* y) override;
  void rope(float* x, int heads, int head_dim) override;
  void write_kv(int64_t layer, const float* k, const float* v) override;
  void prefill_attention(int64_t layer, const float* q, int num_heads, float scale,
                         int64_t req_begin, int64_t req_end, float* out) override;
  void decode_attention(int64_t layer, const float* q, int num_heads, float scale,
                        int64_t req_begin, int64_t req_end, float* out) override;
  void silu_mul(const float* gate, const float* up, int64_t n, float* out) override;
  void gather_sample_rows(const float* x, int64_t dim, float* out) override;
  std::span<const float> to_host(const float* x, int64_t n) override;

  // Frees the KV cache so alloc_kv_cache can size it again (after a profiling pass).
  void release_kv_cache();
  // Sizes the KV cache from the memory in use now (call after a profiling forward with the
  // profiling cache still allocated; its bytes are not counted as peak use).
  Result<KvMemoryPlan> plan_kv_cache(double gpu_memory_utilization) const;
  uint64_t kv_cache_bytes() const override;
  Status status() const { return error_; }
  cudaStream_t stream() const { return stream_; }
  size_t num_decode_graphs() const { return graphs_.size(); }
  void set_cuda_graphs(bool on) { options_.cuda_graphs = on; }

 private:
  enum class Mode { kEager, kCapture, kReplay };
  explicit CudaOps(const CudaOpsOptions& options) : options_(options) {}
  Status init();
  Result<void*> device_alloc(size_t bytes);
  void check(int cuda_error, const char* what);
  bool skip() const { return mode_ == Mode::kReplay || !error_.is_ok(); }
  int64_t rows(int64_t n) const;  // n scaled from the real to the padded batch in graph modes
  int64_t bt_stride() const;

  CudaOpsOptions options_;
  const CublasApi* cublas_ = nullptr;
  cublasHandle_t handle_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t upload_done_ = nullptr;
  std::vector<void*> allocations_;
  std::vector<void*> kv_allocations_;
  std::vector<uint16_t*> k_cache_, v_cache_;
  KvCacheSpec kv_spec_;
  RopeSpec rope_;
  float* inv_freq_ = nullptr;
  uint16_t* x_bf16_ = nullptr;  // GEMM input scratch
  int64_t x_bf16_elems_ = 0;
  float* attn_ws_ = nullptr;  // decode split-K workspace
  int64_t attn_ws_floats_ = 0;
  float* host_out_ = nullptr;  // pinned, for to_host
  int64_t host_out_floats_ = 0;
  // Index data of the step: one pinned staging area and its device copy.
  int32_t* staging_ = nullptr;
  int32_t* dev_idx_ = nullptr;
  int64_t idx_elems_ = 0;
  int32_t *d_tokens_ = nullptr, *d_positions_ = nullptr, *d_slots_ = nullptr;
  int32_t *d_query_start_ = nullptr, *d_seq_lens_ = nullptr, *d_samples_ = nullptr;
  int32_t* d_block_tables_ = nullptr;
  ForwardBatch batch_;
  int max_seq_len_ = 0, max_q_len_ = 0;
  Mode mode_ = Mode::kEager;
  int bucket_ = 0;
  int64_t real_rows_ = 0;
  std::vector<int> buckets_;
  DecodeGraphs graphs_;
  Status error_;
};

}  // namespace llmserve
