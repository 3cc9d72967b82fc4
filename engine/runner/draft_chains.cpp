#include "engine/runner/draft_chains.h"

namespace llmserve {

std::vector<SampleResult> sample_chains(Sampler& sampler, std::span<const float> logits,
                                        std::span<const SampleRow> rows) {
  const auto v = static_cast<size_t>(sampler.vocab_size());
  std::vector<SampleResult> out;
  out.reserve(rows.size());
  bool rejected = false;  // a draft of the current chain was not drawn
  for (size_t s = 0; s < rows.size(); ++s) {
    const SampleRow& row = rows[s];
    if (rejected) {
      out.push_back({});
      rejected = row.draft >= 0;  // the chain's last row ends the skipping
      continue;
    }
    if (row.score >= 0) {
      out.push_back(
          sampler.score(logits.subspan(s * v, v), row.score, row.params->prompt_logprobs));
      continue;
    }
    out.push_back(sampler.sample(logits.subspan(s * v, v), *row.params, *row.state));
    rejected = row.draft >= 0 && out.back().token_id != row.draft;
  }
  return out;
}

void cut_chains(std::span<const SampleRow> rows, std::vector<SampleResult>& results) {
  bool rejected = false;
  for (size_t s = 0; s < rows.size() && s < results.size(); ++s) {
    if (rejected) {
      results[s] = {};
      rejected = rows[s].draft >= 0;
      continue;
    }
    rejected = rows[s].draft >= 0 && results[s].token_id != rows[s].draft;
  }
}

std::span<const SampleRow> ParallelChains::prepare(std::span<const SampleRow> rows) {
  original_ = rows;
  rows_.assign(rows.begin(), rows.end());
  copies_.clear();
  for (size_t s = 1; s < rows.size(); ++s) {
    const SampleRow& prev = rows[s - 1];
    if (prev.draft < 0 || rows[s].state != prev.state) continue;
    // Row s continues prev's chain: prev's state (as prepared) after drawing prev.draft.
    SamplingState advanced = *rows_[s - 1].state;
    advanced.rng().set_counter(advanced.rng().counter() + 1);
    advanced.append(prev.draft);
    copies_.push_back(std::move(advanced));
    rows_[s].state = &copies_.back();
  }
  return rows_;
}

void ParallelChains::finish(std::vector<SampleResult>& results) {
  cut_chains(original_, results);
  for (size_t s = 1; s < original_.size() && s < results.size(); ++s) {
    if (results[s].token_id >= 0 && rows_[s].state != original_[s].state) {
      *original_[s].state = std::move(*rows_[s].state);  // a later kept row overwrites it
    }
  }
}

}  // namespace llmserve
