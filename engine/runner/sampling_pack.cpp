#include "engine/runner/sampling_pack.h"

#include <algorithm>
#include <string>
#include <utility>

#include "engine/grammar/token_bitmask.h"

namespace llmserve {
namespace {

namespace kc = kernels::cuda;

bool in_vocab(int32_t id, int32_t vocab_size) {
  return id >= 0 && id < vocab_size;
}

Status check_room(size_t used, int32_t limit, const char* what) {
  if (used <= static_cast<size_t>(limit)) return Status::ok();
  return resource_exhausted("device sampler: " + std::to_string(used) + " " + what +
                            " in one step, over max_sparse_entries " + std::to_string(limit));
}

void pack_masks(const SamplingParams& p, const SamplingState& st, std::span<const int32_t> eos_ids,
                int32_t vocab_size, std::vector<int32_t>& masked) {
  if (st.num_generated() >= p.min_tokens) return;
  for (int32_t id : p.stop_token_ids) {
    if (in_vocab(id, vocab_size)) masked.push_back(id);
  }
  if (p.ignore_eos) return;
  for (int32_t id : eos_ids) {
    if (in_vocab(id, vocab_size)) masked.push_back(id);
  }
}

// The union of the prompt set (when the repetition penalty is on) and the generated ids, by id.
void pack_penalties(const SamplingParams& p, const SamplingState& st, int32_t vocab_size,
                    std::vector<std::pair<int32_t, int32_t>>& outputs,
                    std::vector<kc::PenaltyToken>& penalties) {
  const bool repetition = p.repetition_penalty != 1.0f;
  if (!repetition && p.presence_penalty == 0.0f && p.frequency_penalty == 0.0f) return;
  outputs.clear();
  for (const auto& [id, count] : st.output_counts()) {
    if (count > 0 && in_vocab(id, vocab_size)) outputs.emplace_back(id, count);
  }
  std::sort(outputs.begin(), outputs.end());
  static const std::vector<int32_t> kNone;
  const std::vector<int32_t>& prompt = repetition ? st.prompt_set() : kNone;
  size_t i = 0, j = 0;
  while (i < prompt.size() || j < outputs.size()) {
    if (i < prompt.size() && !in_vocab(prompt[i], vocab_size)) {
      ++i;
      continue;
    }
    const bool take_prompt =
        i < prompt.size() && (j == outputs.size() || prompt[i] <= outputs[j].first);
    const bool take_output =
        j < outputs.size() && (i == prompt.size() || outputs[j].first <= prompt[i]);
    kc::PenaltyToken t{};
    t.id = take_prompt ? prompt[i] : outputs[j].first;
    t.in_prompt = take_prompt ? 1 : 0;
    t.output_count = take_output ? outputs[j].second : 0;
    penalties.push_back(t);
    i += take_prompt;
    j += take_output;
  }
}

}  // namespace

Status SamplingPackLimits::validate() const {
  if (max_rows < 1) {
    return invalid_argument("device sampler: max_rows must be >= 1, got " +
                            std::to_string(max_rows));
  }
  if (max_sparse_entries < 0) {
    return invalid_argument("device sampler: max_sparse_entries must be >= 0, got " +
                            std::to_string(max_sparse_entries));
  }
  if (max_top_logprobs < 0 || max_top_logprobs > kc::kMaxTopLogprobs) {
    return invalid_argument("device sampler: max_top_logprobs must be in [0, " +
                            std::to_string(kc::kMaxTopLogprobs) + "], got " +
                            std::to_string(max_top_logprobs));
  }
  return Status::ok();
}

void SamplingPack::clear() {
  rows.clear();
  biases.clear();
  masked.clear();
  penalties.clear();
  grammar_masks.clear();
  num_grammar_rows = 0;
  max_num_top = 0;
}

Status pack_sampling_rows(std::span<const SampleRow> rows, std::span<const int32_t> eos_ids,
                          int32_t vocab_size, const SamplingPackLimits& limits, SamplingPack& out) {
  out.clear();
  LLMSERVE_RETURN_IF_ERROR(limits.validate());
  if (vocab_size < 1) {
    return invalid_argument("device sampler: vocab_size must be >= 1, got " +
                            std::to_string(vocab_size));
  }
  if (rows.size() > static_cast<size_t>(limits.max_rows)) {
    return resource_exhausted("device sampler: " + std::to_string(rows.size()) +
                              " rows, over max_rows " + std::to_string(limits.max_rows));
  }
  out.rows.reserve(rows.size());
  std::vector<std::pair<int32_t, int32_t>> outputs;
  for (size_t r = 0; r < rows.size(); ++r) {
    if (rows[r].params == nullptr || rows[r].state == nullptr) {
      return invalid_argument("device sampler: row " + std::to_string(r) +
                              " has no params or state");
    }
    const SamplingParams& p = *rows[r].params;
    SamplingState& st = *rows[r].state;
    if (p.logprobs > limits.max_top_logprobs) {
      return resource_exhausted("device sampler: row " + std::to_string(r) + " asks for " +
                                std::to_string(p.logprobs) + " logprobs, over max_top_logprobs " +
                                std::to_string(limits.max_top_logprobs));
    }
    kc::SamplingRow d;
    d.greedy = p.temperature < Sampler::kGreedyTemperature ? 1 : 0;
    d.inv_temperature = d.greedy ? 1.0f : 1.0f / p.temperature;
    d.top_k = p.top_k;
    d.top_p = p.top_p;
    d.min_p = p.min_p;
    d.repetition_penalty = p.repetition_penalty;
    d.presence_penalty = p.presence_penalty;
    d.frequency_penalty = p.frequency_penalty;
    d.num_logprobs = p.logprobs < 0 ? -1 : p.logprobs;
    d.rng_key = st.rng().key();
    d.rng_counter = static_cast<uint64_t>(st.num_generated());
    out.max_num_top = std::max(out.max_num_top, d.num_logprobs);

    d.bias_offset = static_cast<int32_t>(out.biases.size());
    for (const auto& [id, value] : p.logit_bias) {
      if (in_vocab(id, vocab_size)) out.biases.push_back({id, value});
    }
    LLMSERVE_RETURN_IF_ERROR(
        check_room(out.biases.size(), limits.max_sparse_entries, "logit_bias entries"));
    d.bias_count = static_cast<int32_t>(out.biases.size()) - d.bias_offset;

    d.mask_offset = static_cast<int32_t>(out.masked.size());
    pack_masks(p, st, eos_ids, vocab_size, out.masked);
    LLMSERVE_RETURN_IF_ERROR(
        check_room(out.masked.size(), limits.max_sparse_entries, "masked token ids"));
    d.mask_count = static_cast<int32_t>(out.masked.size()) - d.mask_offset;

    d.penalty_offset = static_cast<int32_t>(out.penalties.size());
    pack_penalties(p, st, vocab_size, outputs, out.penalties);
    LLMSERVE_RETURN_IF_ERROR(
        check_room(out.penalties.size(), limits.max_sparse_entries, "penalty tokens"));
    d.penalty_count = static_cast<int32_t>(out.penalties.size()) - d.penalty_offset;

    if (st.constrained()) {  // a grammar, or the close a reasoning budget forces
      const auto words = static_cast<size_t>(token_bitmask_words(vocab_size));
      d.grammar_mask = out.num_grammar_rows++;
      out.grammar_masks.resize(out.grammar_masks.size() + words);
      st.fill_next_token_mask(
          std::span<uint32_t>(out.grammar_masks.data() + out.grammar_masks.size() - words, words));
    }
    out.rows.push_back(d);
  }
  return Status::ok();
}

}  // namespace llmserve
