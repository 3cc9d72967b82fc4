// Verification of speculative drafts (DESIGN §6) over SampleRow chains: rows of one sample at
// consecutive positions, sharing its state, each but the last carrying the draft for the next
// position. A row is kept while every earlier row of its chain drew its draft; later rows get
// token_id -1. Sampling one row at a time (the host) follows this directly. A sampler that draws
// every row at once (a device) needs each row's state as if the drafts before it were accepted:
// ParallelChains gives row j of a chain a copy of the state advanced over drafts 0..j-1 (one RNG
// draw and one appended token each), and afterwards cuts the chain and hands the last kept
// row's state back to the sample.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <vector>

#include "engine/runner/sampler.h"
#include "engine/runner/sampling_state.h"

namespace llmserve {

// Samples rows in order with `sampler`, skipping what follows a rejected draft in its chain.
std::vector<SampleResult> sample_chains(Sampler& sampler, std::span<const float> logits,
                                        std::span<const SampleRow> rows);

// Marks every row after a rejected draft in its chain as not kept (token_id -1, no logprob).
void cut_chains(std::span<const SampleRow> rows, std::vector<SampleResult>& results);

class ParallelChains {
 public:
  // Rows with independent states: the first row of each chain keeps the sample's state, later
  // ones get advanced copies. The span stays valid until the next prepare().
  std::span<const SampleRow> prepare(std::span<const SampleRow> rows);
  // After the rows returned by prepare() were sampled into `results`: cuts the chains and moves
  // each chain's last kept state into the sample's state.
  void finish(std::vector<SampleResult>& results);

 private:
  std::span<const SampleRow> original_;
  std::vector<SampleRow> rows_;
  std::deque<SamplingState> copies_;  // stable addresses for rows_[i].state
};

}  // namespace llmserve
