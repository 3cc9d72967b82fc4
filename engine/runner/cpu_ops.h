// The CPU backend of Ops: the AVX2/FMA kernels of kernels/ over one ThreadPool. Weights stay in
// their stored type in the model's memory map (zero-copy); Q4_0 / Q4_1 / Q8_0 matrices are also
// repacked once into interleaved row groups (kernels/packed_weight.h) that matmul reads instead
// (LLMSERVE_CPU_NO_PACK=1 turns that off, for comparisons). Once a matrix of a file mapping has its
// packed copy, its source pages leave the RSS (release_mapped_pages: the weights are not held
// twice; LLMSERVE_CPU_KEEP_SOURCE=1 keeps them, for comparisons); the embedding table, read by row,
// keeps its mapping and is packed only when tied to the LM head; f32 vectors of a mapping are
// copied, so that steps read nothing of the mapping but embedding rows. Small non-f32 vectors (norm
// weights, biases) get an f32 copy. The KV cache is per layer K and V of
// [num_blocks, num_kv_heads, block_size, head_dim] f16, f32 or int8 (KvCacheSpec::dtype; int8 with
// f16 scales per (slot, kv head) beside it, kv_cache_ops.h). Everything is
// allocated at set-up; a step allocates nothing. Not thread-safe: one step at a time.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/model/encoder_ops.h"
#include "engine/model/ops.h"
#include "engine/runner/matmul_precision.h"
#include "llmserve/kernels/attention.h"
#include "llmserve/kernels/packed_weight.h"
#include "llmserve/kernels/thread_pool.h"

namespace llmserve {

// What CpuOps::prepare_weight / prepare_embedding did at load (ModelRunner logs it).
struct CpuWeightStats {
  struct Packed {
    int64_t matrices = 0;
    uint64_t source_bytes = 0, packed_bytes = 0;
    double seconds = 0;  // in kernels::pack_weight
  };
  std::map<std::string, Packed> packed;  // by source type (Q4_0, ...)
  int64_t unpacked_matrices = 0;         // matmul reads these per row from the source
  uint64_t unpacked_bytes = 0;
  uint64_t released_bytes = 0;  // source pages dropped from the RSS once their packed copy existed
  double seconds = 0;           // all of prepare_weight / prepare_embedding
};

class CpuOps final : public Ops, public EncoderOps {
 public:
  explicit CpuOps(int num_threads, MatmulPrecision precision = {});
  ~CpuOps() override;

  Result<Weight> prepare_weight(const TensorView& t) override;
  Result<Weight> prepare_embedding(const TensorView& t, bool lm_head) override;
  const CpuWeightStats& weight_stats() const { return stats_; }
  // Drops the released source ranges again once every weight is prepared: a later read near a
  // range (packing the next matrix, a norm) maps back the whole page-cache folio around it (large
  // folios), so one pass per matrix can leave its edges resident.
  void release_sources_again();
  Result<float*> alloc_activation(int64_t n) override;
  Status alloc_kv_cache(const KvCacheSpec& spec) override;
  const KvCacheSpec& kv_cache_spec() const override { return kv_spec_; }
  void set_rope(RopeSpec spec) override { rope_ = std::move(spec); }
  void head_rms_norm(float* x, const Weight& w, int heads, int head_dim, float eps) override;

  Status begin_step(const ForwardBatch& batch) override;
  void embedding(const Weight& table, float* out) override;
  bool supports_image_inputs() const override { return true; }
  void set_input_rows(float* x, int64_t dim) override;
  void rms_norm(const float* x, const Weight& w, int64_t rows, float eps, float* y) override;
  void add_rms_norm(float* residual, const float* x, const Weight& w, int64_t rows, float eps,
                    float* y) override;
  void matmul(const float* x, int64_t M, const Weight& w, const Weight* bias, float* y) override;
  void matmul_multi(const float* x, int64_t M, std::span<const Weight* const> ws,
                    std::span<const Weight* const> biases, std::span<float* const> ys) override;
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
  // cpu_moe.cpp: the step's (token, expert) pairs grouped by expert; each chosen expert's
  // gate / up and down GEMMs run once over its rows with the packed kernels.
  Status reserve_moe(const MoeSpec& spec, int64_t max_tokens) override;
  void moe_ffn(const float* x, int64_t T, const MoeLayerWeights& w, float* out) override;
  std::span<const float> to_host(const float* x, int64_t n) override {
    return {x, static_cast<size_t>(n)};
  }

  // EncoderOps (cpu_encoder_ops.cpp): the BERT graph's LayerNorm, GELU, position embeddings and
  // bidirectional attention.
  void add_position_embeddings(const Weight& positions, const Weight& token_types,
                               float* x) override;
  void layer_norm(const float* x, const Weight& w, const Weight& b, int64_t rows, float eps,
                  float* y) override;
  void add_layer_norm(float* residual, const float* x, const Weight& w, const Weight& b,
                      int64_t rows, float eps) override;
  void gelu(float* x, int64_t rows, int64_t cols) override;
  void bidirectional_attention(const float* q, const float* k, const float* v, int num_heads,
                               int num_kv_heads, int head_dim, float scale, float* out) override;

  kernels::ThreadPool& pool() { return pool_; }
  uint64_t kv_cache_bytes() const override;
  std::optional<KvHostMemory> kv_host_memory() const override;

 private:
  struct AlignedFree {
    void operator()(float* p) const;
  };
  using Buffer = std::unique_ptr<float[], AlignedFree>;
  Result<float*> alloc(int64_t n);
  Result<Weight> prepare(const TensorView& t, bool pack, bool keep_source);
  Result<Weight> prepare_fp8(const TensorView& t, bool pack, bool keep_source);
  kernels::PagedKv paged_kv(int64_t layer, int64_t req_begin) const;
  // Rows [begin, end) of the step that share one activation precision.
  struct PrecisionRun {
    int64_t begin, end;
    kernels::ActPrecision precision;
  };
  void plan_precision_runs();
  // The runs of an M-row matmul input: the step's runs over its T token rows; for the gathered
  // sampled rows (the LM head), or another M, one run at the output precision.
  std::span<const PrecisionRun> precision_runs(int64_t M);
  std::span<const PrecisionRun> output_run(int64_t M);  // rows [0, M) at the output precision
  // matmul / matmul_multi with the input rows in the given runs of one precision each.
  void matmul_in_runs(const float* x, int64_t M, const Weight& w, const Weight* bias, float* y,
                      std::span<const PrecisionRun> runs);
  void matmul_multi_in_runs(const float* x, int64_t M, std::span<const Weight* const> ws,
                            std::span<const Weight* const> biases, std::span<float* const> ys,
                            std::span<const PrecisionRun> runs);

  kernels::ThreadPool pool_;
  std::vector<Buffer> buffers_;  // activations, f32 copies of vectors, KV cache
  MatmulPrecision precision_;
  std::vector<PrecisionRun> runs_;  // of the current step; capacity kept across steps
  PrecisionRun single_run_{};
  bool rows_gathered_ = false;  // gather_sample_rows ran: matmul inputs are sampled rows
  bool pack_ = true;
  bool release_source_ = true;
  CpuWeightStats stats_;
  std::vector<std::pair<const void*, size_t>> released_;  // source ranges dropped after packing
  std::unordered_map<const void*, kernels::PackedWeight> packed_;  // by source data pointer
  std::vector<void*> k_cache_, v_cache_;
  std::vector<uint16_t*> k_scales_, v_scales_;  // int8: f16 scales per (slot, kv head)
  KvCacheSpec kv_spec_;
  KvHostMemory kv_memory_;  // the one allocation every K / V / scale array lives in
  RopeSpec rope_;
  ForwardBatch batch_;
  std::vector<float> rope_cos_sin_;  // the step's angles (kernels::rope_table), for every layer
  std::vector<float> rope_local_cos_sin_;  // ... of rope_.local_inv_freq
  struct MoeScratch {
    int64_t max_tokens = 0, top_k = 0;
    float *logits = nullptr, *weights = nullptr;                         // [T, experts], [T, top_k]
    float *xg = nullptr, *gate = nullptr, *up = nullptr, *yg = nullptr;  // grouped rows
    std::vector<int32_t> ids, offsets, rows, slot_row;                   // kernels/moe_routing.h
    // The chosen experts' segments of one grouped matmul (gate / up, then down).
    std::vector<const kernels::PackedWeight*> gate_up_ws, down_ws;
    std::vector<float*> gate_up_ys, down_ys;
    std::vector<kernels::PackedSegment> gate_up_segments, down_segments;
  } moe_;
  // The experts' gate / up / down of layer w as one grouped call each (every expert packed);
  // false when some expert is not packed.
  bool moe_experts_grouped(const MoeLayerWeights& w, int64_t H, int64_t F);
  void moe_experts_one_by_one(const MoeLayerWeights& w, int64_t H);  // any weight type
  // out[t] = sum over its k experts of weight * that expert's output row.
  void combine_moe_outputs(int64_t T, int64_t k, int64_t H, float* out);
  std::vector<int32_t> query_start_rebased_;  // grows to the largest batch once, then reused
  std::vector<float> embedding_row_;          // add_position_embeddings: one dequantized row
};

}  // namespace llmserve
