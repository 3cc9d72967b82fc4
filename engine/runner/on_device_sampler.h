// Sampling where the logits are (a device backend's sampler, e.g. the CUDA DeviceSampler):
// the same results as Sampler over the same logits, without copying the logits to the host.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/core/status.h"
#include "engine/runner/sampler.h"

namespace llmserve {

struct OnDeviceSampler {
  virtual ~OnDeviceSampler() = default;
  // logits: backend memory [rows.size(), vocab]. Samples row s with rows[s].params / state as
  // Sampler::sample would (with the eos ids given at creation) and appends each token to its
  // state.
  virtual Result<std::vector<SampleResult>> sample(const float* logits,
                                                   std::span<const SampleRow> rows) = 0;
  // Whether the rows' sparse edits (logit_bias, masked ids, penalty tokens) fit this sampler's
  // buffers; when not, the caller samples those rows on the host.
  virtual bool fits(std::span<const SampleRow> rows) const = 0;
  virtual const std::vector<int32_t>& eos_ids() const = 0;
};

}  // namespace llmserve
