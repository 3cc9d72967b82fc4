#include "engine/runner/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/runner/logits_processor.h"

namespace llmserve {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Logit descending, then id ascending: a strict total order over non-NaN rows, so partial
// sorts and nth_element give the same set and order on every run.
struct ByLogitDesc {
  const float* logits;
  bool operator()(int32_t a, int32_t b) const {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  }
};

}  // namespace

Sampler::Sampler(int32_t vocab_size, std::vector<int32_t> eos_ids)
    : vocab_size_(vocab_size), eos_ids_(std::move(eos_ids)) {
  work_.reserve(vocab_size);
  cand_.reserve(vocab_size);
  weights_.reserve(vocab_size);
  ids_.reserve(vocab_size);
}

SampleResult Sampler::sample(std::span<const float> logits, const SamplingParams& params,
                             SamplingState& state) {
  work_.assign(logits.begin(), logits.end());
  apply_logits_processors(work_, params, state, eos_ids_);
  state.rng().set_counter(static_cast<uint64_t>(state.num_generated()));
  const double u = state.rng().next_uniform();
  int32_t token = params.temperature < kGreedyTemperature ? argmax(work_) : draw(params, u);
  if (token < 0) token = argmax(logits);  // everything masked: fall back to the raw argmax
  if (token < 0) token = 0;
  SampleResult result;
  result.token_id = token;
  if (params.logprobs >= 0) result.logprob = logprobs(logits, token, params.logprobs);
  state.append(token);
  return result;
}

std::vector<SampleResult> Sampler::sample_batch(std::span<const SampleRow> rows) {
  std::vector<SampleResult> out;
  out.reserve(rows.size());
  for (const SampleRow& row : rows) {
    out.push_back(sample(std::span<const float>(row.logits, static_cast<size_t>(vocab_size_)),
                         *row.params, *row.state));
  }
  return out;
}

int32_t Sampler::argmax(std::span<const float> logits) const {
  int32_t best = -1;
  float best_value = kNegInf;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (logits[i] > best_value) {
      best_value = logits[i];
      best = static_cast<int32_t>(i);
    }
  }
  return best;
}

int32_t Sampler::draw(const SamplingParams& params, double u) {
  cand_.clear();
  for (int32_t i = 0; i < static_cast<int32_t>(work_.size()); ++i) {
    if (work_[i] > kNegInf) cand_.push_back(i);
  }
  if (cand_.empty()) return -1;
  const float temperature = params.temperature;
  bool sorted = false;
  if (params.top_k > 0 && static_cast<size_t>(params.top_k) < cand_.size()) {
    select_top_k(params.top_k);
    sorted = true;
  }
  float max_logit = kNegInf;
  for (int32_t id : cand_) max_logit = std::max(max_logit, work_[id]);
  if (std::isinf(max_logit)) return argmax(work_);
  if (params.top_p < 1.0f) {
    select_top_p(params.top_p, temperature, max_logit, sorted);
  }
  weights_.clear();
  double total = 0;
  const float min_weight = params.min_p;  // min_p * p_max, with p_max's weight being 1
  size_t kept = 0;
  for (int32_t id : cand_) {
    const float w = std::exp((work_[id] - max_logit) / temperature);
    if (w < min_weight) continue;
    cand_[kept++] = id;
    weights_.push_back(w);
    total += w;
  }
  cand_.resize(kept);
  const double target = u * total;
  double cum = 0;
  for (size_t j = 0; j < cand_.size(); ++j) {
    cum += weights_[j];
    if (cum > target) return cand_[j];
  }
  return cand_.back();
}

void Sampler::select_top_k(int32_t k) {
  ByLogitDesc cmp{work_.data()};
  std::nth_element(cand_.begin(), cand_.begin() + k, cand_.end(), cmp);
  cand_.resize(static_cast<size_t>(k));
  std::sort(cand_.begin(), cand_.end(), cmp);
}

void Sampler::select_top_p(float top_p, float temperature, float max_logit, bool sorted) {
  auto weight = [&](int32_t id) { return std::exp((work_[id] - max_logit) / temperature); };
  double z = 0;
  for (int32_t id : cand_) z += weight(id);
  const double limit = static_cast<double>(top_p) * z;
  ByLogitDesc cmp{work_.data()};
  size_t sorted_end = sorted ? cand_.size() : 0;
  size_t kept = 0;
  double cum = 0;
  // Keep the smallest descending prefix whose mass reaches top_p: a token stays while the
  // mass before it is below the limit. Sort lazily, growing the sorted prefix 4x at a time.
  while (kept < cand_.size() && cum < limit) {
    if (kept == sorted_end) {
      size_t next = std::min(cand_.size(), std::max<size_t>(64, sorted_end * 4));
      std::partial_sort(cand_.begin() + sorted_end, cand_.begin() + next, cand_.end(), cmp);
      sorted_end = next;
    }
    cum += weight(cand_[kept]);
    ++kept;
  }
  cand_.resize(std::max<size_t>(kept, 1));
}

TokenLogprob Sampler::logprobs(std::span<const float> raw, int32_t token, int32_t n) {
  float max_logit = kNegInf;
  for (float v : raw) max_logit = std::max(max_logit, v);
  double z = 0;
  for (float v : raw) {
    if (v > kNegInf) z += std::exp(static_cast<double>(v) - max_logit);
  }
  const double log_z = static_cast<double>(max_logit) + std::log(z);
  TokenLogprob out;
  out.token_id = token;
  out.logprob = static_cast<float>(raw[token] - log_z);
  if (n > 0) {
    ids_.clear();
    for (int32_t i = 0; i < static_cast<int32_t>(raw.size()); ++i) {
      if (!std::isnan(raw[i])) ids_.push_back(i);
    }
    const size_t top = std::min(ids_.size(), static_cast<size_t>(n));
    std::partial_sort(ids_.begin(), ids_.begin() + top, ids_.end(), ByLogitDesc{raw.data()});
    out.top.reserve(top);
    for (size_t j = 0; j < top; ++j) {
      out.top.push_back({ids_[j], static_cast<float>(raw[ids_[j]] - log_z)});
    }
  }
  return out;
}

}  // namespace llmserve
