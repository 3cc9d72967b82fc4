#include "engine/runner/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/grammar/token_bitmask.h"
#include "engine/runner/logits_processor.h"
#include "llmserve/kernels/softmax.h"

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

// The n best ids of `logits` (ByLogitDesc; -inf and NaN skipped) into `out`, unordered. One
// pass with a heap whose front is the worst kept: most ids lose one comparison to the front.
void top_n_by_heap(std::span<const float> logits, size_t n, std::vector<int32_t>& out) {
  ByLogitDesc cmp{logits.data()};
  out.clear();
  for (int32_t i = 0; i < static_cast<int32_t>(logits.size()); ++i) {
    if (!(logits[i] > kNegInf)) continue;
    if (out.size() < n) {
      out.push_back(i);
      std::push_heap(out.begin(), out.end(), cmp);
    } else if (cmp(i, out.front())) {
      std::pop_heap(out.begin(), out.end(), cmp);
      out.back() = i;
      std::push_heap(out.begin(), out.end(), cmp);
    }
  }
}

}  // namespace

Sampler::Sampler(int32_t vocab_size, std::vector<int32_t> eos_ids)
    : vocab_size_(vocab_size), eos_ids_(std::move(eos_ids)) {
  work_.reserve(vocab_size);
  cand_.reserve(vocab_size);
  weights_.resize(vocab_size);
  ids_.reserve(vocab_size);
}

SampleResult Sampler::sample(std::span<const float> logits, const SamplingParams& params,
                             SamplingState& state) {
  const bool greedy = params.temperature < kGreedyTemperature;
  const bool constrained = state.constrained();  // a grammar, or a reasoning budget's close
  const bool processed = constrained || logits_processors_active(params, state);
  if (!greedy || processed) {
    work_.assign(logits.begin(), logits.end());
    if (constrained) {
      mask_.resize(static_cast<size_t>(token_bitmask_words(vocab_size_)));
      state.fill_next_token_mask(mask_);
      apply_token_bitmask(work_, mask_);
    }
    apply_logits_processors(work_, params, state, eos_ids_);
  }
  state.rng().set_counter(static_cast<uint64_t>(state.num_generated()));
  const double u = state.rng().next_uniform();
  int32_t token =
      greedy ? argmax(processed ? std::span<const float>(work_) : logits) : draw(params, u);
  if (token < 0 && constrained) {  // the grammar's (or budget's) choices beat min_tokens masking
    work_.assign(logits.begin(), logits.end());
    apply_token_bitmask(work_, mask_);
    token = argmax(work_);
  }
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
  return static_cast<int32_t>(
      kernels::argmax_above(logits.data(), static_cast<int64_t>(logits.size()), kNegInf));
}

int32_t Sampler::draw(const SamplingParams& params, double u) {
  if (weights_.size() < work_.size()) weights_.resize(work_.size());
  cand_.clear();
  bool by_id = false;  // cand_ in ascending id order
  if (params.top_k > 0 && params.top_k <= kHeapTopK) {
    top_n_by_heap(work_, static_cast<size_t>(params.top_k), cand_);
  } else {
    for (int32_t i = 0; i < static_cast<int32_t>(work_.size()); ++i) {
      if (work_[i] > kNegInf) cand_.push_back(i);
    }
    by_id = true;
    if (params.top_k > 0 && static_cast<size_t>(params.top_k) < cand_.size()) {
      select_top_k(params.top_k);
      by_id = false;
    }
  }
  if (cand_.empty()) return -1;
  float max_logit = kNegInf;
  for (int32_t id : cand_) max_logit = std::max(max_logit, work_[id]);
  if (std::isinf(max_logit)) return argmax(work_);
  // Weights relative to the top token (whose weight is 1), temperature applied.
  const float inv_t = 1.0f / params.temperature;
  for (int32_t id : cand_) weights_[id] = std::exp((work_[id] - max_logit) * inv_t);
  if (params.top_p < 1.0f) {
    select_top_p(params.top_p);
    by_id = false;
  }
  // min_p keeps p >= min_p * p_max, i.e. weight >= min_p.
  size_t kept = 0;
  for (int32_t id : cand_) {
    if (!(weights_[id] < params.min_p)) cand_[kept++] = id;
  }
  cand_.resize(kept);
  if (!by_id) sort_candidates_by_id();
  double total = 0;
  for (int32_t id : cand_) total += weights_[id];
  const double target = u * total;
  double cum = 0;
  for (int32_t id : cand_) {
    cum += weights_[id];
    if (cum > target) return id;
  }
  return cand_.back();
}

void Sampler::sort_candidates_by_id() {
  // A large set is rebuilt from marks in one pass over the row, a small one sorted.
  const size_t n = work_.size();
  if (cand_.size() * 32 <= n) {
    std::sort(cand_.begin(), cand_.end());
    return;
  }
  if (marks_.size() < n) marks_.resize(n, 0);
  for (int32_t id : cand_) marks_[id] = 1;
  const size_t kept = cand_.size();
  cand_.resize(n);
  size_t k = 0;
  for (size_t i = 0; i < n; ++i) {  // branch-free: writes every id, advances past marked ones
    cand_[k] = static_cast<int32_t>(i);
    k += marks_[i];
    marks_[i] = 0;
  }
  cand_.resize(kept);
}

void Sampler::select_top_k(int32_t k) {
  std::nth_element(cand_.begin(), cand_.begin() + k, cand_.end(), ByLogitDesc{work_.data()});
  cand_.resize(static_cast<size_t>(k));
}

void Sampler::select_top_p(float top_p) {
  double z = 0;
  for (int32_t id : cand_) z += weights_[id];
  const double limit = static_cast<double>(top_p) * z;
  // A token lighter than (1 - top_p) * z / n has at least top_p of the mass ranked above it,
  // so it can never be kept: drop those first (most of the vocab in a peaked distribution).
  const double floor = (1.0 - top_p) * z / static_cast<double>(cand_.size());
  size_t n = 0;
  for (int32_t id : cand_) {
    if (weights_[id] >= floor) cand_[n++] = id;
  }
  cand_.resize(n);
  // Keep the shortest descending prefix whose mass reaches the limit (a token stays while the
  // mass ranked above it is below the limit). Weighted quickselect: O(vocab), no full sort.
  // Invariant: cand_[0, lo) is ranked above cand_[lo, hi), is all kept, and has mass `before`;
  // the kept count lies in (lo, hi].
  ByLogitDesc cmp{work_.data()};
  size_t lo = 0, hi = cand_.size();
  double before = 0;
  while (hi - lo > 32) {
    const size_t mid = lo + (hi - lo) / 2;
    std::nth_element(cand_.begin() + lo, cand_.begin() + mid, cand_.begin() + hi, cmp);
    double mass = 0;
    for (size_t j = lo; j < mid; ++j) mass += weights_[cand_[j]];
    if (before + mass >= limit) {
      hi = mid;
    } else {
      before += mass;
      lo = mid;
    }
  }
  std::sort(cand_.begin() + lo, cand_.begin() + hi, cmp);
  size_t kept = lo;
  while (kept < hi && before < limit) before += weights_[cand_[kept++]];
  cand_.resize(std::max<size_t>(kept, 1));
}

SampleResult Sampler::score(std::span<const float> logits, int32_t token, int32_t n) {
  SampleResult r;
  r.token_id = token;
  r.logprob = logprobs(logits, token, std::max(n, 0));
  const float v = logits[static_cast<size_t>(token)];
  int32_t higher = 0;
  for (float x : logits) higher += x > v;
  r.logprob->rank = higher + 1;
  return r;
}

TokenLogprob Sampler::logprobs(std::span<const float> raw, int32_t token, int32_t n) {
  float max_logit = kNegInf;
  for (float v : raw) max_logit = std::max(max_logit, v);
  double z = 0;
  for (float v : raw) {
    if (v > kNegInf) z += std::exp(v - max_logit);
  }
  const double log_z = static_cast<double>(max_logit) + std::log(z);
  TokenLogprob out;
  out.token_id = token;
  out.logprob = static_cast<float>(raw[token] - log_z);
  if (n > 0) {
    top_n_by_heap(raw, static_cast<size_t>(n), ids_);
    std::sort(ids_.begin(), ids_.end(), ByLogitDesc{raw.data()});
    const size_t top = ids_.size();
    out.top.reserve(top);
    for (size_t j = 0; j < top; ++j) {
      out.top.push_back({ids_[j], static_cast<float>(raw[ids_[j]] - log_z)});
    }
  }
  return out;
}

}  // namespace llmserve
