#include "engine/runner/cuda/device_sampler.h"

#include <cstring>
#include <string>
#include <utility>

#include "engine/grammar/token_bitmask.h"
#include "engine/runner/cuda/cuda_device.h"
#include "llmserve/kernels/cuda/sampling.h"

namespace llmserve {
namespace {

namespace kc = kernels::cuda;

constexpr size_t align16(size_t n) {
  return (n + 15) & ~static_cast<size_t>(15);
}

// Byte offsets of one call's packed input (rows, biases, masked ids, penalty tokens, grammar
// bitmask words).
struct InLayout {
  size_t rows = 0, biases = 0, masked = 0, penalties = 0, grammar = 0, total = 0;
};
InLayout in_layout(size_t rows, size_t biases, size_t masked, size_t penalties,
                   size_t grammar_words) {
  InLayout l;
  l.biases = align16(rows * sizeof(kc::SamplingRow));
  l.masked = l.biases + align16(biases * sizeof(kc::LogitBias));
  l.penalties = l.masked + align16(masked * sizeof(int32_t));
  l.grammar = l.penalties + align16(penalties * sizeof(kc::PenaltyToken));
  l.total = l.grammar + align16(grammar_words * sizeof(uint32_t));
  return l;
}

// Byte offsets of one call's results: tokens, then [rows, stride] top ids and top logprobs.
struct OutLayout {
  size_t top_ids = 0, top_logprobs = 0, total = 0;
};
OutLayout out_layout(size_t rows, size_t stride) {
  OutLayout l;
  l.top_ids = align16(rows * sizeof(kc::SampledToken));
  l.top_logprobs = l.top_ids + align16(rows * stride * sizeof(int32_t));
  l.total = l.top_logprobs + align16(rows * stride * sizeof(float));
  return l;
}

template <typename T>
void put(unsigned char* base, size_t at, const std::vector<T>& v) {
  if (!v.empty()) std::memcpy(base + at, v.data(), v.size() * sizeof(T));
}

}  // namespace

Result<std::unique_ptr<DeviceSampler>> DeviceSampler::create(int32_t vocab_size, int32_t max_rows,
                                                             std::vector<int32_t> eos_ids,
                                                             cudaStream_t stream,
                                                             int32_t max_sparse_entries,
                                                             int32_t max_top_logprobs) {
  if (vocab_size < 1 || vocab_size > kc::kMaxSamplingVocab) {
    return invalid_argument("device sampler: vocab_size must be in [1, " +
                            std::to_string(kc::kMaxSamplingVocab) + "], got " +
                            std::to_string(vocab_size));
  }
  SamplingPackLimits limits;
  limits.max_rows = max_rows;
  limits.max_sparse_entries = max_sparse_entries;
  limits.max_top_logprobs = max_top_logprobs;
  LLMSERVE_RETURN_IF_ERROR(limits.validate());
  std::unique_ptr<DeviceSampler> s(
      new DeviceSampler(vocab_size, std::move(eos_ids), stream, limits));
  LLMSERVE_RETURN_IF_ERROR(s->allocate());
  return s;
}

DeviceSampler::DeviceSampler(int32_t vocab_size, std::vector<int32_t> eos_ids, cudaStream_t stream,
                             const SamplingPackLimits& limits)
    : vocab_size_(vocab_size), eos_ids_(std::move(eos_ids)), stream_(stream), limits_(limits) {}

DeviceSampler::~DeviceSampler() {
  cudaFree(work_);
  cudaFree(in_device_);
  cudaFree(out_device_);
  cudaFreeHost(in_host_);
  cudaFreeHost(out_host_);
}

Status DeviceSampler::allocate() {
  const size_t rows = static_cast<size_t>(limits_.max_rows);
  const size_t sparse = static_cast<size_t>(limits_.max_sparse_entries);
  // Every row may carry a grammar's bitmask.
  const size_t words = rows * static_cast<size_t>(token_bitmask_words(vocab_size_));
  in_bytes_ = in_layout(rows, sparse, sparse, sparse, words).total;
  out_bytes_ = out_layout(rows, static_cast<size_t>(limits_.max_top_logprobs)).total;
  const size_t work_bytes = rows * static_cast<size_t>(vocab_size_) * sizeof(float);
  LLMSERVE_RETURN_IF_ERROR(
      cuda_status(cudaMalloc(reinterpret_cast<void**>(&work_), work_bytes),
                  "cudaMalloc (sampler work, " + std::to_string(work_bytes) + " bytes)"));
  LLMSERVE_RETURN_IF_ERROR(
      cuda_status(cudaMalloc(reinterpret_cast<void**>(&in_device_), in_bytes_), "cudaMalloc"));
  LLMSERVE_RETURN_IF_ERROR(
      cuda_status(cudaMalloc(reinterpret_cast<void**>(&out_device_), out_bytes_), "cudaMalloc"));
  LLMSERVE_RETURN_IF_ERROR(cuda_status(
      cudaMallocHost(reinterpret_cast<void**>(&in_host_), in_bytes_), "cudaMallocHost"));
  LLMSERVE_RETURN_IF_ERROR(cuda_status(
      cudaMallocHost(reinterpret_cast<void**>(&out_host_), out_bytes_), "cudaMallocHost"));
  return Status::ok();
}

Result<std::vector<SampleResult>> DeviceSampler::sample(const float* device_logits,
                                                        std::span<const SampleRow> rows) {
  std::vector<SampleResult> results;
  if (rows.empty()) return results;
  if (device_logits == nullptr) return invalid_argument("device sampler: null logits");
  LLMSERVE_RETURN_IF_ERROR(pack_sampling_rows(rows, eos_ids_, vocab_size_, limits_, pack_));
  const size_t n = rows.size();
  const size_t stride = static_cast<size_t>(pack_.max_num_top);
  const InLayout in = in_layout(n, pack_.biases.size(), pack_.masked.size(), pack_.penalties.size(),
                                pack_.grammar_masks.size());
  const OutLayout out = out_layout(n, stride);
  put(in_host_, in.rows, pack_.rows);
  put(in_host_, in.biases, pack_.biases);
  put(in_host_, in.masked, pack_.masked);
  put(in_host_, in.penalties, pack_.penalties);
  put(in_host_, in.grammar, pack_.grammar_masks);
  LLMSERVE_RETURN_IF_ERROR(
      cuda_status(cudaMemcpyAsync(in_device_, in_host_, in.total, cudaMemcpyHostToDevice, stream_),
                  "cudaMemcpyAsync (sampler rows)"));

  kc::SamplingLaunch p;
  p.logits = device_logits;
  p.work = work_;
  p.rows = reinterpret_cast<const kc::SamplingRow*>(in_device_ + in.rows);
  p.biases = reinterpret_cast<const kc::LogitBias*>(in_device_ + in.biases);
  p.masked = reinterpret_cast<const int32_t*>(in_device_ + in.masked);
  p.penalties = reinterpret_cast<const kc::PenaltyToken*>(in_device_ + in.penalties);
  p.grammar_masks = reinterpret_cast<const uint32_t*>(in_device_ + in.grammar);
  p.mask_words = pack_.num_grammar_rows > 0 ? token_bitmask_words(vocab_size_) : 0;
  p.out = reinterpret_cast<kc::SampledToken*>(out_device_);
  p.top_ids = reinterpret_cast<int32_t*>(out_device_ + out.top_ids);
  p.top_logprobs = reinterpret_cast<float*>(out_device_ + out.top_logprobs);
  p.num_rows = static_cast<int32_t>(n);
  p.vocab_size = vocab_size_;
  p.top_stride = static_cast<int32_t>(stride);
  LLMSERVE_RETURN_IF_ERROR(cuda_status(kc::sample_rows(p, stream_), "sample_rows"));
  const size_t down = stride > 0 ? out.total : n * sizeof(kc::SampledToken);
  LLMSERVE_RETURN_IF_ERROR(
      cuda_status(cudaMemcpyAsync(out_host_, out_device_, down, cudaMemcpyDeviceToHost, stream_),
                  "cudaMemcpyAsync (sampled tokens)"));
  LLMSERVE_RETURN_IF_ERROR(
      cuda_status(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (sampler)"));

  const auto* tokens = reinterpret_cast<const kc::SampledToken*>(out_host_);
  const auto* top_ids = reinterpret_cast<const int32_t*>(out_host_ + out.top_ids);
  const auto* top_lps = reinterpret_cast<const float*>(out_host_ + out.top_logprobs);
  results.resize(n);
  for (size_t r = 0; r < n; ++r) {
    const kc::SampledToken& t = tokens[r];
    if (t.token_id < 0 || t.token_id >= vocab_size_ || t.num_top < 0 ||
        static_cast<size_t>(t.num_top) > stride) {
      return internal_error("device sampler: row " + std::to_string(r) + " returned token " +
                            std::to_string(t.token_id) + " with " + std::to_string(t.num_top) +
                            " top logprobs");
    }
    results[r].token_id = t.token_id;
    if (rows[r].params->logprobs >= 0) {
      TokenLogprob lp;
      lp.token_id = t.token_id;
      lp.logprob = t.logprob;
      lp.top.reserve(static_cast<size_t>(t.num_top));
      for (int32_t j = 0; j < t.num_top; ++j) {
        lp.top.push_back({top_ids[r * stride + j], top_lps[r * stride + j]});
      }
      results[r].logprob = std::move(lp);
    }
  }
  // As Sampler::sample: the draw used counter num_generated, leaving it one past.
  for (size_t r = 0; r < n; ++r) {
    SamplingState& st = *rows[r].state;
    st.rng().set_counter(static_cast<uint64_t>(st.num_generated()) + 1);
    st.append(results[r].token_id);
  }
  return results;
}

}  // namespace llmserve
