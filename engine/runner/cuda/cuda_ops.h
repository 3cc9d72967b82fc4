// The CUDA backend of Ops (DESIGN §5). Weights are uploaded once as BF16 (dequantized on the
// host from any GGUF / safetensors type the CPU can read; vectors as f32); q/k/v and gate/up are
// each stored as one matrix (prepare_fused) and run as one cuBLAS GEMM (BF16 inputs, f32
// accumulate and output) whose outputs the consumers read in place (FusedViews). GEMM inputs
// are produced as BF16 by the ops before them (norms, silu_mul, attention; ops.h). The KV cache
// is per layer K and V of [num_blocks, num_kv_heads, block_size, head_dim] elements of
// KvCacheSpec::dtype: kF16 as BF16, kInt8 or kFp8 (e4m3) with per-layer f16 scale arrays
// [num_blocks, num_kv_heads, block_size] for K and V (paged_kv.h); kF32 is CPU-only.
//
// Per step: the index data (step_index.h) and the decode-attention plan are uploaded in one
// copy plus one pitched copy of the block-table rows and columns in use. Pure-decode steps
// replay a CUDA graph per batch-size bucket (graph_buckets.h), captured by capture_graph();
// other steps run eagerly. Everything runs on one non-blocking stream, set-up copies included.
// Ops that fail record the first error: status() and the next begin_step return it.
// Not thread-safe: one step at a time.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/model/ops.h"
#include "engine/runner/cuda/bias_gemm.h"
#include "engine/runner/cuda/cublas_loader.h"
#include "engine/runner/cuda/decode_graphs.h"
#include "engine/runner/cuda/kv_memory_plan.h"
#include "engine/runner/fused_views.h"
#include "engine/runner/step_index.h"
#include "llmserve/kernels/cuda/decode_plan.h"
#include "llmserve/kernels/cuda/paged_kv.h"

namespace llmserve {

struct CudaOpsOptions {
  int device = 0;
  int64_t max_tokens = 2048;     // new tokens per step
  int64_t max_samples = 256;     // sampled rows per step
  int max_num_seqs = 256;        // requests per step
  int64_t max_model_len = 4096;  // tokens per sequence (block-table width)
  int num_heads = 0;             // the model's query heads (sizes the decode-attention workspace)
  bool cuda_graphs = true;       // replay captured decode steps
};

class CudaOps final : public Ops {
 public:
  // Errors: no device, no cuBLAS, or a CUDA call failing.
  static Result<std::unique_ptr<CudaOps>> create(const CudaOpsOptions& options);
  ~CudaOps() override;

  Result<Weight> prepare_weight(const TensorView& t) override;
  Result<std::vector<Weight>> prepare_fused(std::span<const TensorView* const> ts) override;
  Result<float*> alloc_activation(int64_t n) override;
  Status alloc_kv_cache(const KvCacheSpec& spec) override;
  const KvCacheSpec& kv_cache_spec() const override { return kv_spec_; }
  std::optional<KvDeviceMemory> kv_device_memory() const override;
  void set_rope(RopeSpec spec) override;

  Status begin_step(const ForwardBatch& batch) override;
  void embedding(const Weight& table, float* out) override;
  void rms_norm(const float* x, const Weight& w, int64_t rows, float eps, float* y) override;
  void add_rms_norm(float* residual, const float* x, const Weight& w, int64_t rows, float eps,
                    float* y) override;
  void matmul(const float* x, int64_t M, const Weight& w, const Weight* bias, float* y) override;
  void matmul_multi(const float* x, int64_t M, std::span<const Weight* const> ws,
                    std::span<const Weight* const> biases, std::span<float* const> ys) override;
  void head_rms_norm(float* x, const Weight& w, int heads, int head_dim, float eps) override;
  void rope(float* x, int heads, int head_dim, bool local) override;
  void scale(float* x, int64_t rows, int64_t cols, float s) override;
  void add_normed(float* residual, const float* x, const Weight& w, int64_t rows,
                  float eps) override;
  void softcap(float* x, int64_t rows, int64_t cols, float cap) override;
  void gelu_tanh_mul(const float* gate, const float* up, int64_t rows, int64_t cols,
                     float* out) override;
  void rotate_heads(float* x, int heads, int head_dim) override;
  void rotate_attention_heads(float* out, int heads, int head_dim) override;
  void write_kv(int64_t layer, const float* k, const float* v) override;
  void prefill_attention(int64_t layer, const float* q, int num_heads, float scale,
                         int64_t req_begin, int64_t req_end, float* out) override;
  void decode_attention(int64_t layer, const float* q, int num_heads, float scale,
                        int64_t req_begin, int64_t req_end, float* out) override;
  void silu_mul(const float* gate, const float* up, int64_t rows, int64_t cols,
                float* out) override;
  void gather_sample_rows(const float* x, int64_t dim, float* out) override;
  // cuda_moe.cpp: each layer's experts in one bf16 array; routing, grouping and the grouped
  // GEMMs stay on the device (kernels/cuda/moe.h), so decode graphs capture them.
  Result<std::vector<Weight>> prepare_experts(std::span<const TensorView> ts) override;
  Status reserve_moe(const MoeSpec& spec, int64_t max_tokens) override;
  void moe_ffn(const float* x, int64_t T, const MoeLayerWeights& w, float* out) override;
  void finish_step() override;
  Status step_status() const override { return error_; }
  std::span<const float> to_host(const float* x, int64_t n) override;

  // Frees the KV cache so alloc_kv_cache can size it again (after a profiling pass).
  void release_kv_cache();
  // Sizes the KV cache from the memory in use now (call after a profiling forward with the
  // profiling cache still allocated; its bytes are not counted as peak use). A block's bytes are
  // those of the allocated cache's dtype, scales included.
  Result<KvMemoryPlan> plan_kv_cache(double gpu_memory_utilization) const;
  uint64_t kv_cache_bytes() const override;
  Status status() const { return error_; }
  // Where matmul_multi's outputs live (views into the fused GEMM output), for tests.
  const FusedViews& fused_views() const { return views_; }
  cudaStream_t stream() const { return stream_; }
  int device() const { return options_.device; }
  // The decode-graph buckets (graph_buckets.h) and how many are captured.
  const std::vector<int>& graph_buckets() const { return buckets_; }
  size_t num_decode_graphs() const { return graphs_.size(); }
  // Replays captured graphs for pure-decode steps (on by default when options.cuda_graphs).
  void set_cuda_graphs(bool on) { use_graphs_ = on && options_.cuda_graphs; }
  // The next begin_step of a pure-decode batch captures the graph of its bucket (padding the
  // batch to it), replacing a graph captured before.
  void capture_next_step() { capture_next_ = true; }

 private:
  enum class Mode { kEager, kCapture, kReplay };
  explicit CudaOps(const CudaOpsOptions& options) : options_(options) {}
  Status init();
  Status make_step_index(const KvCacheSpec& spec);  // staging sized for this cache's plans
  Result<void*> device_alloc(size_t bytes);
  Status upload(void* dst, const void* src, size_t bytes);
  Status upload_matrix(const TensorView& t, void* dst);  // bf16 rows, or an f32 vector
  void check(int cuda_error, const char* what);
  bool skip() const { return mode_ == Mode::kReplay || !error_.is_ok(); }
  int64_t rows(int64_t n) const;  // n scaled from the real to the padded batch in graph modes
  // Layer `layer`'s cache with these block-table rows, for the attention kernels.
  kernels::cuda::PagedKvDevice paged_kv(size_t layer, const int32_t* block_tables,
                                        int64_t stride) const;
  // y[M, N] (row pitch ldy) = x[M, K] (bf16, row pitch x_stride) . W^T (+ bias, fused in).
  void gemm(const void* x_bf16, int64_t x_stride, int64_t M, const void* w, int64_t N, int64_t K,
            const float* bias, float* y, int64_t ldy);
  void record(const Status& st);
  // cuda_fp8.cpp: an FP8 weight as stored with its scales, and y = x . W^T over it (the GEMV for
  // M <= 8, else a dequantized bf16 copy into fp8_scratch_ and gemm).
  Result<Weight> prepare_fp8(const TensorView& t);
  void matmul_fp8(const void* x_bf16, int64_t x_stride, int64_t M, const Weight& w,
                  const float* bias, float* y, int64_t ldy);

  CudaOpsOptions options_;
  bool use_graphs_ = true;
  bool capture_next_ = false;
  const CublasApi* cublas_ = nullptr;
  cublasHandle_t handle_ = nullptr;
  std::unique_ptr<BiasGemm> bias_gemm_;  // GEMMs with a bias epilogue (qwen2's q / k / v)
  cudaStream_t stream_ = nullptr;
  cudaEvent_t upload_done_ = nullptr;
  int num_sms_ = 0;
  uint64_t baseline_used_ = 0;  // device bytes in use when this instance started
  std::vector<void*> allocations_;
  std::vector<void*> kv_allocations_;
  std::vector<void*> k_cache_, v_cache_;        // per layer, elements of kv_spec_.dtype
  std::vector<uint16_t*> k_scales_, v_scales_;  // per layer, int8 / fp8 only
  KvCacheSpec kv_spec_;
  RopeSpec rope_;
  float* inv_freq_ = nullptr;
  float* local_inv_freq_ = nullptr;  // rope_.local_inv_freq on the device
  float* fused_out_ = nullptr;       // outputs of fused GEMMs [max rows, widest fused N]
  int64_t fused_out_floats_ = 0;
  FusedViews views_;
  std::vector<const void*> fused_first_;  // first weight of each prepare_fused group
  uint16_t* fp8_scratch_ = nullptr;       // bf16 copy of one FP8 matrix (prefill path)
  int64_t fp8_scratch_elems_ = 0;
  float* attn_ws_ = nullptr;  // decode split-K workspace
  int64_t attn_ws_floats_ = 0;
  float* host_out_ = nullptr;  // pinned, for to_host
  int64_t host_out_floats_ = 0;
  // Index data of the step: one pinned staging area and its device copy (step_index.h).
  StepIndexLayout layout_;
  int32_t* staging_ = nullptr;
  int32_t* dev_idx_ = nullptr;
  StepIndexFill fill_;
  kernels::cuda::DecodePlanConfig plan_config_;
  kernels::cuda::DecodePlan plan_;
  int64_t plan_capacity_ = 0;    // decode work items a plan may hold (at max_num_seqs)
  int64_t decode_capacity_ = 0;  // ... and this step's plan (its bucket's in graph modes)
  struct MoeScratch {
    int64_t max_rows = 0, max_pairs = 0, num_experts = 0;
    float *logits = nullptr, *weights = nullptr, *gate = nullptr, *up = nullptr, *yg = nullptr;
    int32_t *ids = nullptr, *offsets = nullptr, *rows = nullptr, *slot_row = nullptr;
    int32_t* tiles = nullptr;
    uint16_t *xg = nullptr, *act = nullptr;  // bf16 GEMM inputs
  } moe_;
  ForwardBatch batch_;
  Mode mode_ = Mode::kEager;
  bool step_finished_ = true;
  int bucket_ = 0;
  int64_t real_rows_ = 0;
  std::vector<int> buckets_;
  DecodeGraphs graphs_;
  Status error_;
};

}  // namespace llmserve
