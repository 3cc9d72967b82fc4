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
  // Sampler::sample would (eos_ids as the Sampler's) and appends each token to its state.
  virtual Result<std::vector<SampleResult>> sample(const float* logits,
                                                   std::span<const SampleRow> rows,
                                                   std::span<const int32_t> eos_ids) = 0;
};

}  // namespace llmserve
