// The operations the Llama graph is written against (DESIGN §5). A backend (CpuOps, later
// CudaOps) implements them over its own memory: every float* below is backend memory (host for
// the CPU, device for CUDA) obtained from alloc_activation / kv_cache; the graph only passes the
// pointers along and never reads them. Index data (token ids, positions, slots, block tables,
// sample rows) comes from the ForwardBatch given to begin_step, which a device backend uploads.
// Row-major shapes: [rows, cols]; activations are f32, except GEMM inputs (below).
//
// GEMM inputs: the outputs y of rms_norm / add_rms_norm, out of silu_mul and out of both
// attention ops are read by matmul / matmul_multi only, so a backend may store them in its own
// GEMM-input format inside the same buffer (the CUDA backend writes bf16 rows that keep the f32
// row pitch: row r starts where f32 row r would). Only matmul and matmul_multi read them, and
// rotate_attention_heads rotates an attention output in that format.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "engine/core/status.h"
#include "engine/model/forward_batch.h"
#include "engine/model/model_weights.h"
#include "llmserve/kernels/dtype.h"
#include "llmserve/kernels/kv_cache_ops.h"

namespace llmserve {

// A weight in backend memory. Matrices are [rows = out_features, cols = in_features] in `type`
// (each row row_bytes(type, cols) bytes); vectors have rows = 1.
struct Weight {
  kernels::DType type = kernels::DType::F32;
  const void* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  kernels::Fp8Scales scales = {};  // F8_E4M3: the scale grid (backend memory)
};

// One mixture-of-experts FFN layer (moe_ffn): the router [num_experts, hidden] and each
// expert's gate / up [expert_ffn, hidden] and down [hidden, expert_ffn]. The router's softmax
// picks top_k experts per token; their weights are divided by their sum when norm_topk_prob.
struct MoeLayerWeights {
  Weight router;
  std::vector<Weight> gate, up, down;
  int top_k = 0;
  bool norm_topk_prob = true;
  int64_t num_experts() const { return static_cast<int64_t>(gate.size()); }
};

// The largest MoE layer moe_ffn will be given (reserve_moe).
struct MoeSpec {
  int64_t hidden = 0;
  int64_t expert_ffn = 0;
  int64_t num_experts = 0;
  int top_k = 0;
};

struct RopeSpec {
  std::vector<float> inv_freq;  // rot_dim / 2 frequencies (scaling already applied)
  bool interleaved = false;     // true: (x[2i], x[2i+1]); false: (x[i], x[i + d/2])
  // Non-empty: the local layers' frequencies (gemma3), used by rope(..., local = true).
  std::vector<float> local_inv_freq;
  float cos_sin_scale = 1.0f;  // cos and sin times this (longrope's attention factor)
};

struct KvCacheSpec {
  int64_t num_layers = 0;
  int64_t num_blocks = 0;
  int num_kv_heads = 0;
  int block_size = 16;
  int head_dim = 0;
  kernels::KvDtype dtype = kernels::KvDtype::kF16;  // element type of K and V
  // > 0: both attention ops see only each query's last sliding_window positions (itself
  // included; ModelConfig::sliding_window). 0: the whole context.
  int64_t sliding_window = 0;
  // Non-empty: each layer's window (0: full), replacing sliding_window (gemma3's local layers).
  std::vector<int64_t> layer_windows = {};
  // The windows are symmetric for rows that attend past their position (ForwardBatch::
  // attend_end): |query - key| < window (ModelConfig::bidirectional).
  bool symmetric_windows = false;
  int64_t window(int64_t layer) const {
    return layer_windows.empty() ? sliding_window : layer_windows[static_cast<size_t>(layer)];
  }
};

// The KV cache as one range of host memory (KV transfer reads and writes it in place): each
// array (per layer K, V, and for int8 their scales) starts at `offset` from base, and block b of
// it is the block_bytes at offset + b * block_bytes.
struct KvHostArray {
  uint64_t offset = 0;
  uint64_t block_bytes = 0;
};
struct KvHostMemory {
  void* base = nullptr;
  uint64_t bytes = 0;
  std::vector<KvHostArray> arrays;
};

// The KV cache in device memory (the tiers below the pool copy its blocks): block b of an array
// is the block_bytes at base + b * block_bytes, on CUDA device `device`.
struct KvDeviceArray {
  void* base = nullptr;
  uint64_t block_bytes = 0;
};
struct KvDeviceMemory {
  int device = 0;
  std::vector<KvDeviceArray> arrays;  // per layer K, V, and for int8 / fp8 their scales
  // Waits for the compute stream's enqueued work (the step that wrote the blocks), on the engine
  // thread between steps.
  std::function<Status()> sync_compute;
};

class Ops {
 public:
  virtual ~Ops() = default;

  // --- set-up (once, outside the step loop) ---
  // Makes `t` usable by matmul / embedding / norms: a zero-copy view on the CPU, an upload
  // (possibly converted) on a device.
  virtual Result<Weight> prepare_weight(const TensorView& t) = 0;
  // The token embedding table, read by row by embedding(); lm_head: it is also the tied LM head
  // (matmul reads it). A backend that repacks matrices need not repack a table that only
  // embedding() reads, and keeps the rows embedding() reads where they are. Default:
  // prepare_weight.
  virtual Result<Weight> prepare_embedding(const TensorView& t, bool lm_head) {
    (void)lm_head;
    return prepare_weight(t);
  }
  // Weights that one matmul_multi will take together (q / k / v, gate / up, their biases): a
  // backend may store them as one matrix so that matmul_multi runs one GEMM. Same shapes and
  // results as prepare_weight each.
  virtual Result<std::vector<Weight>> prepare_fused(std::span<const TensorView* const> ts) {
    std::vector<Weight> out;
    for (const TensorView* t : ts) {
      LLMSERVE_ASSIGN_OR_RETURN(Weight w, prepare_weight(*t));
      out.push_back(w);
    }
    return out;
  }
  // Activation scratch of n floats, owned by the backend, valid for its lifetime.
  virtual Result<float*> alloc_activation(int64_t n) = 0;
  // Allocates the paged K and V caches, per layer [num_blocks, num_kv_heads, block_size, head_dim].
  virtual Status alloc_kv_cache(const KvCacheSpec& spec) = 0;
  virtual const KvCacheSpec& kv_cache_spec() const = 0;
  virtual uint64_t kv_cache_bytes() const = 0;  // bytes held by K and V (and scales), all layers
  // The cache in host memory; nullopt when it lives elsewhere (device memory) or before
  // alloc_kv_cache.
  virtual std::optional<KvHostMemory> kv_host_memory() const { return std::nullopt; }
  // The cache in CUDA device memory; nullopt on the CPU backend or before alloc_kv_cache.
  virtual std::optional<KvDeviceMemory> kv_device_memory() const { return std::nullopt; }
  virtual void set_rope(RopeSpec spec) = 0;

  // --- one step ---
  // Makes the batch's index data visible to the ops below (precondition: batch validated).
  virtual Status begin_step(const ForwardBatch& batch) = 0;

  // out[T, dim] = table rows token_ids.
  virtual void embedding(const Weight& table, float* out) = 0;
  // True when the backend takes the batch's image inputs (ForwardBatch::input_embeddings and
  // attend_end); the graph refuses a batch that has them otherwise.
  virtual bool supports_image_inputs() const { return false; }
  // x[t] = batch.input_embeddings[t] for every row t where that is non-null; x [T, dim] f32.
  // Called only when supports_image_inputs().
  virtual void set_input_rows(float* x, int64_t dim) {
    (void)x;
    (void)dim;
  }
  // y[rows, dim] = rms_norm(x) * w; y may equal x.
  virtual void rms_norm(const float* x, const Weight& w, int64_t rows, float eps, float* y) = 0;
  // residual += x; y = rms_norm(residual) * w. y may equal x, not residual.
  virtual void add_rms_norm(float* residual, const float* x, const Weight& w, int64_t rows,
                            float eps, float* y) = 0;
  // y[M, w.rows] = x[M, w.cols] . w^T (+ bias[w.rows] when bias is non-null).
  virtual void matmul(const float* x, int64_t M, const Weight& w, const Weight* bias, float* y) = 0;
  // ys[i][M, ws[i]->rows] = x[M, K] . ws[i]^T (+ biases[i] when biases is not empty) for
  // weights of the same K (q / k / v, gate / up): a backend may share the work of x between them
  // (one GEMM over weights from one prepare_fused). Same results as matmul each. The outputs may
  // then be views into one fused buffer that only this backend's ops resolve: read them through
  // rope, write_kv, the attention ops and silu_mul only.
  virtual void matmul_multi(const float* x, int64_t M, std::span<const Weight* const> ws,
                            std::span<const Weight* const> biases, std::span<float* const> ys) {
    for (size_t i = 0; i < ws.size() && i < ys.size(); ++i) {
      matmul(x, M, *ws[i], i < biases.size() ? biases[i] : nullptr, ys[i]);
    }
  }
  // RMSNorm of every head row of x[T, heads, head_dim] over head_dim, in place, times
  // w[head_dim] (qwen3 / gemma3 q and k norms). x: a matmul_multi output (its view resolved).
  virtual void head_rms_norm(float* x, const Weight& w, int heads, int head_dim, float eps) = 0;
  // Rotates x[T, heads, head_dim] in place at the batch positions (set_rope's spec; local: its
  // local_inv_freq).
  virtual void rope(float* x, int heads, int head_dim, bool local) = 0;
  // x[rows, cols] *= s, x f32 (gemma3's embedding scale).
  virtual void scale(float* x, int64_t rows, int64_t cols, float s) = 0;
  // residual[rows, dim] += rms_norm(x) * w[dim], x an f32 matmul output (gemma3's post-attention
  // and post-FFN norms).
  virtual void add_normed(float* residual, const float* x, const Weight& w, int64_t rows,
                          float eps) = 0;
  // x[rows, cols] = cap * tanh(x / cap), x f32 (the final-logit soft-cap).
  virtual void softcap(float* x, int64_t rows, int64_t cols, float cap) = 0;
  // out = gelu_tanh(gate) * up, as silu_mul (GeGLU).
  virtual void gelu_tanh_mul(const float* gate, const float* up, int64_t rows, int64_t cols,
                             float* out) = 0;
  // The orthonormal Walsh-Hadamard rotation of every head row of x[T, heads, head_dim], in place
  // (kernels/hadamard.h; its own inverse). Precondition: head_dim a power of two.
  virtual void rotate_heads(float* x, int heads, int head_dim) = 0;
  // The same rotation of an attention op's out [T, heads, head_dim], in the GEMM-input format
  // that op wrote it in (above): the inverse of rotating v before write_kv.
  virtual void rotate_attention_heads(float* out, int heads, int head_dim) = 0;
  // Scatters k, v [T, num_kv_heads, head_dim] into layer's cache at the batch slots.
  virtual void write_kv(int64_t layer, const float* k, const float* v) = 0;
  // Attention of requests [req_begin, req_end) of the batch; q/out [T, num_heads, head_dim]
  // indexed by absolute row. Decode: requests with one new token each.
  virtual void prefill_attention(int64_t layer, const float* q, int num_heads, float scale,
                                 int64_t req_begin, int64_t req_end, float* out) = 0;
  virtual void decode_attention(int64_t layer, const float* q, int num_heads, float scale,
                                int64_t req_begin, int64_t req_end, float* out) = 0;
  // out[rows, cols] = silu(gate) * up; out may alias gate or up.
  virtual void silu_mul(const float* gate, const float* up, int64_t rows, int64_t cols,
                        float* out) = 0;
  // One layer's experts (all of one shape), which moe_ffn reads together: a backend may store
  // them as one array. Same shapes as prepare_weight each (the default).
  virtual Result<std::vector<Weight>> prepare_experts(std::span<const TensorView> ts) {
    std::vector<Weight> out;
    for (const TensorView& t : ts) {
      LLMSERVE_ASSIGN_OR_RETURN(Weight w, prepare_weight(t));
      out.push_back(w);
    }
    return out;
  }
  // Sizes moe_ffn's scratch for up to max_tokens rows of layers no larger than spec (set-up).
  virtual Status reserve_moe(const MoeSpec& spec, int64_t max_tokens) = 0;
  // out[T, hidden] = sum over the router's top_k experts e of token t of weight_e *
  // down_e(silu(gate_e x_t) * up_e x_t), for x[T, hidden] an rms_norm / add_rms_norm output
  // (a GEMM input). out is f32, as matmul's y. Precondition: reserve_moe covered T and w.
  virtual void moe_ffn(const float* x, int64_t T, const MoeLayerWeights& w, float* out) = 0;
  // out[S, dim] = x rows sample_rows.
  virtual void gather_sample_rows(const float* x, int64_t dim, float* out) = 0;
  // Ends the step's enqueued work (a device backend launches what it captured); idempotent.
  virtual void finish_step() {}
  // The first error an op of this step recorded (ops return nothing; a device backend records
  // its failures and skips the rest of the step).
  virtual Status step_status() const { return Status::ok(); }
  // A host view of n floats of backend memory x (valid until the next step); finishes the step.
  virtual std::span<const float> to_host(const float* x, int64_t n) = 0;
};

}  // namespace llmserve
