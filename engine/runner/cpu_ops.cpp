#include "engine/runner/cpu_ops.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>

#include "engine/model/mapped_file.h"
#include "llmserve/kernels/activation.h"
#include "llmserve/kernels/dequantize.h"
#include "llmserve/kernels/embedding.h"
#include "llmserve/kernels/hadamard.h"
#include "llmserve/kernels/host_memory.h"
#include "llmserve/kernels/kv_cache_ops.h"
#include "llmserve/kernels/matmul.h"
#include "llmserve/kernels/norm.h"
#include "llmserve/kernels/rope.h"

namespace llmserve {

using kernels::DType;

void CpuOps::AlignedFree::operator()(float* p) const {
  kernels::host_free(p);
}

CpuOps::CpuOps(int num_threads, MatmulPrecision precision)
    : pool_(std::max(1, num_threads)), precision_(precision) {
  const char* no_pack = std::getenv("LLMSERVE_CPU_NO_PACK");
  pack_ = no_pack == nullptr || std::string(no_pack) == "0";
  const char* keep = std::getenv("LLMSERVE_CPU_KEEP_SOURCE");
  release_source_ = keep == nullptr || std::string(keep) == "0";
}
CpuOps::~CpuOps() = default;

Result<float*> CpuOps::alloc(int64_t n) {
  if (n <= 0) return invalid_argument("cpu ops: buffer size must be positive");
  const size_t bytes = (static_cast<size_t>(n) * sizeof(float) + 63) / 64 * 64;
  auto* p = static_cast<float*>(kernels::host_alloc(bytes));
  if (p == nullptr)
    return resource_exhausted("cpu ops: cannot allocate " + std::to_string(bytes) + " bytes");
  std::memset(p, 0, bytes);  // commit the pages now, not during the first steps
  buffers_.emplace_back(p);
  return p;
}

Result<float*> CpuOps::alloc_activation(int64_t n) {
  return alloc(n);
}

Result<Weight> CpuOps::prepare_weight(const TensorView& t) {
  return prepare(t, /*pack=*/true, /*keep_source=*/false);
}

Result<Weight> CpuOps::prepare_embedding(const TensorView& t, bool lm_head) {
  // embedding() reads the table's rows from the source: keep them mapped; pack it only when
  // matmul reads it too (the tied LM head).
  return prepare(t, /*pack=*/lm_head, /*keep_source=*/true);
}

Result<Weight> CpuOps::prepare(const TensorView& t, bool pack, bool keep_source) {
  const auto t0 = std::chrono::steady_clock::now();
  struct AddTime {
    double& total;
    std::chrono::steady_clock::time_point t0;
    ~AddTime() {
      total += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
  } add_time{stats_.seconds, t0};
  Weight w{t.type, t.data, t.rows(), t.cols()};
  if (t.shape.size() <= 1) {
    if (t.type == DType::F32) {
      if (!release_source_ || !in_mapped_file(t.data, t.nbytes)) return w;
      // A copy, so that no step reads the mapping's pages between the matrices (a read would map
      // back the page-cache folio around it, released matrix bytes included).
      LLMSERVE_ASSIGN_OR_RETURN(float* f, alloc(t.cols()));
      std::memcpy(f, t.data, static_cast<size_t>(t.cols()) * sizeof(float));
      return Weight{DType::F32, f, 1, t.cols()};
    }
    if (!kernels::dtype_can_dequantize(t.type) ||
        t.cols() % kernels::dtype_info(t.type).block_elems != 0) {
      return unimplemented("cpu ops: cannot read vector " + t.name + " of type " +
                           std::string(kernels::dtype_name(t.type)));
    }
    LLMSERVE_ASSIGN_OR_RETURN(float* f, alloc(t.cols()));
    kernels::dequantize_row(t.type, t.data, f, t.cols());
    return Weight{DType::F32, f, 1, t.cols()};
  }
  if (t.shape.size() != 2) return invalid_argument("cpu ops: " + t.name + " is not a matrix");
  if (t.type == DType::F8_E4M3) return prepare_fp8(t, pack, keep_source);
  const auto info = kernels::dtype_info(t.type);
  if (!kernels::matmul_supports(t.type) || t.cols() % info.block_elems != 0) {
    return unimplemented("cpu ops: no matmul for " + t.name + " of type " +
                         std::string(kernels::dtype_name(t.type)) + " with " +
                         std::to_string(t.cols()) + " columns");
  }
  if (packed_.contains(t.data)) return w;
  if (pack && pack_ && kernels::can_pack_weight(t.type, t.rows(), t.cols())) {
    const auto p0 = std::chrono::steady_clock::now();
    kernels::PackedWeight p = kernels::pack_weight(t.type, t.data, t.rows(), t.cols(), &pool_);
    if (p.empty())
      return resource_exhausted("cpu ops: cannot allocate the packed copy of " + t.name);
    CpuWeightStats::Packed& s = stats_.packed[std::string(kernels::dtype_name(t.type))];
    s.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - p0).count();
    ++s.matrices;
    s.source_bytes += t.nbytes;
    s.packed_bytes += p.bytes();
    packed_.emplace(t.data, std::move(p));
    // matmul reads only the packed copy now: drop the source pages (they would double the RSS).
    if (release_source_ && !keep_source) {
      const size_t n = release_mapped_pages(t.data, t.nbytes);  // 0 unless in a MappedFile
      stats_.released_bytes += n;
      if (n > 0) released_.emplace_back(t.data, t.nbytes);
    }
  } else if (pack) {
    ++stats_.unpacked_matrices;
    stats_.unpacked_bytes += t.nbytes;
  }
  return w;
}

// FP8 matrices run only packed (there is no per-row FP8 kernel): packed whatever
// LLMSERVE_CPU_NO_PACK says; an FP8 embedding table (read by row) is refused.
Result<Weight> CpuOps::prepare_fp8(const TensorView& t, bool pack, bool keep_source) {
  if (t.scales.empty()) return data_loss("cpu ops: FP8 matrix " + t.name + " has no scales");
  if (!pack || keep_source) {
    return unimplemented("cpu ops: " + t.name +
                         " is FP8, which only matmul reads (no FP8 embedding table)");
  }
  const Weight w{t.type, t.data, t.rows(), t.cols(), t.scales};
  if (packed_.contains(t.data)) return w;
  const auto p0 = std::chrono::steady_clock::now();
  kernels::PackedWeight p = kernels::pack_weight_fp8(t.data, t.scales, t.rows(), t.cols(), &pool_);
  if (p.empty()) {
    return resource_exhausted("cpu ops: cannot pack FP8 matrix " + t.name +
                              " (out of memory, or a scale of 256 or more)");
  }
  CpuWeightStats::Packed& s = stats_.packed[std::string(kernels::dtype_name(t.type))];
  s.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - p0).count();
  ++s.matrices;
  s.source_bytes += t.nbytes;
  s.packed_bytes += p.bytes();
  packed_.emplace(t.data, std::move(p));
  if (release_source_) {
    const size_t n = release_mapped_pages(t.data, t.nbytes);
    stats_.released_bytes += n;
    if (n > 0) released_.emplace_back(t.data, t.nbytes);
  }
  return w;
}

void CpuOps::release_sources_again() {
  for (const auto& [data, n] : released_) release_mapped_pages(data, n);
}

Status CpuOps::alloc_kv_cache(const KvCacheSpec& spec) {
  if (spec.num_layers <= 0 || spec.num_blocks <= 0 || spec.num_kv_heads <= 0 ||
      spec.block_size <= 0 || spec.head_dim <= 0) {
    return invalid_argument("cpu ops: KV cache sizes must be positive");
  }
  if (!k_cache_.empty()) return failed_precondition("cpu ops: KV cache already allocated");
  if (spec.dtype == kernels::KvDtype::kFp8) {
    return unimplemented("cpu ops: an fp8 KV cache needs the CUDA backend");
  }
  // One allocation for every array (KV transfer registers it once), each array's start rounded
  // up to 64 bytes; alloc() counts floats.
  const int64_t rows = spec.num_blocks * spec.num_kv_heads * spec.block_size;
  const auto aligned = [](int64_t bytes) { return (bytes + 63) / 64 * 64; };
  const int64_t kv_bytes = rows * spec.head_dim * kernels::kv_dtype_bytes(spec.dtype);
  const int64_t scale_bytes = rows * kernels::kKvScaleBytes;
  const bool scaled = kernels::kv_dtype_scaled(spec.dtype);
  const int64_t per_layer = 2 * aligned(kv_bytes) + (scaled ? 2 * aligned(scale_bytes) : 0);
  LLMSERVE_ASSIGN_OR_RETURN(float* slab, alloc((per_layer * spec.num_layers + 3) / 4));
  auto* base = reinterpret_cast<uint8_t*>(slab);
  kv_memory_ = {slab, static_cast<uint64_t>(per_layer * spec.num_layers), {}};
  int64_t at = 0;
  const auto take = [&](int64_t bytes) {
    kv_memory_.arrays.push_back(
        {static_cast<uint64_t>(at), static_cast<uint64_t>(bytes / spec.num_blocks)});
    uint8_t* p = base + at;
    at += aligned(bytes);
    return p;
  };
  for (int64_t l = 0; l < spec.num_layers; ++l) {
    k_cache_.push_back(reinterpret_cast<float*>(take(kv_bytes)));
    v_cache_.push_back(reinterpret_cast<float*>(take(kv_bytes)));
    if (scaled) {
      k_scales_.push_back(reinterpret_cast<uint16_t*>(take(scale_bytes)));
      v_scales_.push_back(reinterpret_cast<uint16_t*>(take(scale_bytes)));
    }
  }
  kv_spec_ = spec;
  return Status::ok();
}

std::optional<KvHostMemory> CpuOps::kv_host_memory() const {
  if (kv_memory_.base == nullptr) return std::nullopt;
  return kv_memory_;
}

uint64_t CpuOps::kv_cache_bytes() const {
  return 2ull * static_cast<uint64_t>(kv_spec_.num_layers) *
         static_cast<uint64_t>(kv_spec_.num_blocks) * static_cast<uint64_t>(kv_spec_.num_kv_heads) *
         static_cast<uint64_t>(kv_spec_.block_size) *
         static_cast<uint64_t>(kernels::kv_head_row_bytes(kv_spec_.dtype, kv_spec_.head_dim));
}

Status CpuOps::begin_step(const ForwardBatch& batch) {
  if (k_cache_.empty()) return failed_precondition("cpu ops: no KV cache");
  batch_ = batch;
  kernels::rope_table(batch_.positions.data(), batch_.num_tokens(), rope_.inv_freq, rope_cos_sin_);
  if (!rope_.local_inv_freq.empty()) {
    kernels::rope_table(batch_.positions.data(), batch_.num_tokens(), rope_.local_inv_freq,
                        rope_local_cos_sin_);
  }
  if (rope_.cos_sin_scale != 1.0f) {
    for (float& v : rope_cos_sin_) v *= rope_.cos_sin_scale;
    for (float& v : rope_local_cos_sin_) v *= rope_.cos_sin_scale;
  }
  plan_precision_runs();
  rows_gathered_ = false;
  return Status::ok();
}

void CpuOps::plan_precision_runs() {
  runs_.clear();
  const int64_t T = batch_.num_tokens();
  if (precision_.prompt == precision_.output || batch_.prompt_rows.empty() || T == 0) {
    runs_.push_back({0, T, precision_.output});
    return;
  }
  for (int64_t r = 0; r < T; ++r) {
    const auto p = batch_.prompt_rows[r] ? precision_.prompt : precision_.output;
    if (runs_.empty() || runs_.back().precision != p) {
      runs_.push_back({r, r + 1, p});
    } else {
      runs_.back().end = r + 1;
    }
  }
}

std::span<const CpuOps::PrecisionRun> CpuOps::precision_runs(int64_t M) {
  if (!rows_gathered_ && M == batch_.num_tokens()) return runs_;
  return output_run(M);
}

std::span<const CpuOps::PrecisionRun> CpuOps::output_run(int64_t M) {
  single_run_ = {0, M, precision_.output};
  return {&single_run_, 1};
}

void CpuOps::embedding(const Weight& table, float* out) {
  kernels::embedding_lookup(table.type, table.data, table.cols, batch_.token_ids.data(),
                            batch_.num_tokens(), out);
}

void CpuOps::rms_norm(const float* x, const Weight& w, int64_t rows, float eps, float* y) {
  kernels::rms_norm(pool_, x, static_cast<const float*>(w.data), rows, w.cols, eps, y);
}

void CpuOps::add_rms_norm(float* residual, const float* x, const Weight& w, int64_t rows, float eps,
                          float* y) {
  kernels::add_rms_norm(pool_, residual, x, static_cast<const float*>(w.data), rows, w.cols, eps,
                        y);
}

void CpuOps::matmul(const float* x, int64_t M, const Weight& w, const Weight* bias, float* y) {
  matmul_in_runs(x, M, w, bias, y, precision_runs(M));
}

void CpuOps::matmul_multi(const float* x, int64_t M, std::span<const Weight* const> ws,
                          std::span<const Weight* const> biases, std::span<float* const> ys) {
  matmul_multi_in_runs(x, M, ws, biases, ys, precision_runs(M));
}

void CpuOps::matmul_in_runs(const float* x, int64_t M, const Weight& w, const Weight* bias,
                            float* y, std::span<const PrecisionRun> runs) {
  const auto packed = packed_.find(w.data);
  for (const PrecisionRun& run : runs) {
    const float* xr = x + run.begin * w.cols;
    float* yr = y + run.begin * w.rows;
    const int64_t rows = run.end - run.begin;
    if (packed != packed_.end()) {
      kernels::matmul_packed(pool_, xr, rows, packed->second, yr, run.precision);
    } else {
      kernels::matmul(pool_, xr, rows, w.cols, w.type, w.data, w.rows, yr, run.precision);
    }
  }
  if (bias != nullptr) {
    const auto* b = static_cast<const float*>(bias->data);
    for (int64_t m = 0; m < M; ++m) kernels::add(y + m * w.rows, b, y + m * w.rows, w.rows);
  }
}

void CpuOps::matmul_multi_in_runs(const float* x, int64_t M, std::span<const Weight* const> ws,
                                  std::span<const Weight* const> biases, std::span<float* const> ys,
                                  std::span<const PrecisionRun> runs) {
  constexpr size_t kMax = 8;
  const kernels::PackedWeight* packed[kMax];
  bool fused = ws.size() == ys.size() && !ws.empty() && ws.size() <= kMax && biases.empty();
  for (size_t i = 0; fused && i < ws.size(); ++i) {
    const auto it = packed_.find(ws[i]->data);
    fused = it != packed_.end() && ws[i]->cols == ws[0]->cols;
    if (fused) packed[i] = &it->second;
  }
  if (!fused) {
    for (size_t i = 0; i < ws.size() && i < ys.size(); ++i) {
      matmul_in_runs(x, M, *ws[i], i < biases.size() ? biases[i] : nullptr, ys[i], runs);
    }
    return;
  }
  float* yr[kMax];
  for (const PrecisionRun& run : runs) {
    for (size_t i = 0; i < ys.size(); ++i) yr[i] = ys[i] + run.begin * ws[i]->rows;
    kernels::matmul_packed_multi(pool_, x + run.begin * ws[0]->cols, run.end - run.begin,
                                 std::span(packed, ws.size()), std::span(yr, ys.size()),
                                 run.precision);
  }
}

void CpuOps::head_rms_norm(float* x, const Weight& w, int heads, int head_dim, float eps) {
  kernels::rms_norm(pool_, x, static_cast<const float*>(w.data), batch_.num_tokens() * heads,
                    head_dim, eps, x);
}

void CpuOps::rope(float* x, int heads, int head_dim, bool local) {
  const bool l = local && !rope_.local_inv_freq.empty();
  kernels::apply_rope_table(
      x, batch_.num_tokens(), heads, head_dim, (l ? rope_local_cos_sin_ : rope_cos_sin_).data(),
      static_cast<int>((l ? rope_.local_inv_freq : rope_.inv_freq).size()),
      rope_.interleaved ? kernels::RopePairing::kAdjacent : kernels::RopePairing::kHalves);
}

void CpuOps::set_input_rows(float* x, int64_t dim) {
  for (size_t t = 0; t < batch_.input_embeddings.size(); ++t) {
    const float* e = batch_.input_embeddings[t];
    if (e != nullptr) std::memcpy(x + static_cast<int64_t>(t) * dim, e, dim * sizeof(float));
  }
}

void CpuOps::scale(float* x, int64_t rows, int64_t cols, float s) {
  kernels::scale(x, rows * cols, s);
}

void CpuOps::add_normed(float* residual, const float* x, const Weight& w, int64_t rows, float eps) {
  kernels::add_normed(pool_, residual, x, static_cast<const float*>(w.data), rows, w.cols, eps);
}

void CpuOps::softcap(float* x, int64_t rows, int64_t cols, float cap) {
  kernels::softcap(x, rows * cols, cap);
}

void CpuOps::gelu_tanh_mul(const float* gate, const float* up, int64_t rows, int64_t cols,
                           float* out) {
  const int64_t n = rows * cols;
  constexpr int64_t kChunk = 8192;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  pool_.parallel_for(chunks, [&](int64_t b, int64_t e) {
    const int64_t lo = b * kChunk, hi = std::min(n, e * kChunk);
    kernels::gelu_tanh_mul(gate + lo, up + lo, out + lo, hi - lo);
  });
}

void CpuOps::rotate_heads(float* x, int heads, int head_dim) {
  kernels::hadamard_rows(pool_, x, batch_.num_tokens(), int64_t{heads} * head_dim, heads, head_dim);
}

void CpuOps::rotate_attention_heads(float* out, int heads, int head_dim) {
  rotate_heads(out, heads, head_dim);  // the CPU's attention ops write f32 rows
}

void CpuOps::write_kv(int64_t layer, const float* k, const float* v) {
  const kernels::KvCacheShape shape{kv_spec_.num_blocks, kv_spec_.num_kv_heads, kv_spec_.block_size,
                                    kv_spec_.head_dim, kv_spec_.dtype};
  const auto l = static_cast<size_t>(layer);
  kernels::write_kv(shape, k, v, batch_.slot_mapping.data(), batch_.num_tokens(), k_cache_[l],
                    v_cache_[l], k_scales_.empty() ? nullptr : k_scales_[l],
                    v_scales_.empty() ? nullptr : v_scales_[l]);
}

kernels::PagedKv CpuOps::paged_kv(int64_t layer, int64_t req_begin) const {
  const auto l = static_cast<size_t>(layer);
  return kernels::PagedKv{
      kernels::KvCacheShape{kv_spec_.num_blocks, kv_spec_.num_kv_heads, kv_spec_.block_size,
                            kv_spec_.head_dim, kv_spec_.dtype},
      k_cache_[l],
      v_cache_[l],
      batch_.block_tables.data() + req_begin * batch_.max_blocks_per_seq,
      batch_.max_blocks_per_seq,
      k_scales_.empty() ? nullptr : k_scales_[l],
      v_scales_.empty() ? nullptr : v_scales_[l],
      kv_spec_.window(layer),
      kv_spec_.symmetric_windows};
}

void CpuOps::prefill_attention(int64_t layer, const float* q, int num_heads, float scale,
                               int64_t req_begin, int64_t req_end, float* out) {
  // The kernel takes rows from 0: rebase the requests' rows to start at their first one.
  const int32_t row0 = batch_.query_start[static_cast<size_t>(req_begin)];
  const int64_t stride = static_cast<int64_t>(num_heads) * kv_spec_.head_dim;
  query_start_rebased_.clear();
  for (int64_t b = req_begin; b <= req_end; ++b) {
    query_start_rebased_.push_back(batch_.query_start[static_cast<size_t>(b)] - row0);
  }
  kernels::prefill_attention(pool_, paged_kv(layer, req_begin), q + row0 * stride,
                             query_start_rebased_.data(), batch_.seq_lens.data() + req_begin,
                             req_end - req_begin, num_heads, scale, out + row0 * stride,
                             batch_.attend_end.empty() ? nullptr : batch_.attend_end.data() + row0);
}

void CpuOps::decode_attention(int64_t layer, const float* q, int num_heads, float scale,
                              int64_t req_begin, int64_t req_end, float* out) {
  // Decode requests own one row each, row query_start[b].
  const int64_t row = batch_.query_start[static_cast<size_t>(req_begin)];
  const int64_t stride = static_cast<int64_t>(num_heads) * kv_spec_.head_dim;
  kernels::decode_attention(pool_, paged_kv(layer, req_begin), q + row * stride,
                            batch_.seq_lens.data() + req_begin, req_end - req_begin, num_heads,
                            scale, out + row * stride);
}

void CpuOps::silu_mul(const float* gate, const float* up, int64_t rows, int64_t cols, float* out) {
  const int64_t n = rows * cols;
  constexpr int64_t kChunk = 8192;
  if (n <= kChunk) {  // one or a few decode rows: a pool round trip costs more than the work
    kernels::silu_mul(gate, up, out, n);
    return;
  }
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  pool_.parallel_for(chunks, [&](int64_t b, int64_t e) {
    const int64_t lo = b * kChunk, hi = std::min(n, e * kChunk);
    kernels::silu_mul(gate + lo, up + lo, out + lo, hi - lo);
  });
}

void CpuOps::gather_sample_rows(const float* x, int64_t dim, float* out) {
  rows_gathered_ = true;
  for (size_t s = 0; s < batch_.sample_rows.size(); ++s) {
    std::memcpy(out + static_cast<int64_t>(s) * dim, x + batch_.sample_rows[s] * dim,
                static_cast<size_t>(dim) * sizeof(float));
  }
}

}  // namespace llmserve
