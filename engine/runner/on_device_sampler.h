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
  // Sampler::sample would (with eos_ids()) and appends each token to its state. Errors:
  // kResourceExhausted when the rows' sparse edits (logit_bias, masked ids, penalty tokens)
  // overflow the sampler's buffers, with no state changed, so the caller can sample on the host.
  virtual Result<std::vector<SampleResult>> sample(const float* logits,
                                                   std::span<const SampleRow> rows) = 0;
  virtual const std::vector<int32_t>& eos_ids() const = 0;
};

}  // namespace llmserve
