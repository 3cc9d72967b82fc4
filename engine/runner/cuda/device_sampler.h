// Sampling on the device that holds the logits (DESIGN §5, §6): row i of the device logits is
// sampled exactly as Sampler::sample would sample it (kernels/cuda/sampling.h), and only the
// ids and the requested logprobs come back. Per call: one upload of the packed rows
// (sampling_pack.h), the kernel, one download, one stream sync. Not thread-safe.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/core/status.h"
#include "engine/runner/on_device_sampler.h"
#include "engine/runner/sampler.h"
#include "engine/runner/sampling_pack.h"

namespace llmserve {

class DeviceSampler final : public OnDeviceSampler {
 public:
  // Allocates every buffer once, on the current device: the processed-logits work buffer
  // [max_rows, vocab_size] f32, the packed-row upload and result download areas (device and
  // pinned host). stream: where sample() enqueues its work (the stream that writes the logits).
  static Result<std::unique_ptr<DeviceSampler>> create(int32_t vocab_size, int32_t max_rows,
                                                       std::vector<int32_t> eos_ids,
                                                       cudaStream_t stream,
                                                       int32_t max_sparse_entries,
                                                       int32_t max_top_logprobs = 20);
  ~DeviceSampler() override;
  DeviceSampler(const DeviceSampler&) = delete;
  DeviceSampler& operator=(const DeviceSampler&) = delete;

  // device_logits: [rows.size(), vocab_size] raw f32 logits on this device, ready in stream
  // order. Appends each chosen token to rows[i].state (RNG counter included, as
  // Sampler::sample); rows[i].logits is unused. Errors: packing bounds (sampling_pack.h), a null
  // pointer, CUDA failures.
  Result<std::vector<SampleResult>> sample(const float* device_logits,
                                           std::span<const SampleRow> rows) override;

  // The processed logits of the last sample(), [rows, vocab_size] on the device (for tests).
  const float* device_processed_logits() const { return work_; }
  int32_t vocab_size() const { return vocab_size_; }
  const SamplingPackLimits& limits() const { return limits_; }
  const std::vector<int32_t>& eos_ids() const override { return eos_ids_; }

 private:
  DeviceSampler(int32_t vocab_size, std::vector<int32_t> eos_ids, cudaStream_t stream,
                const SamplingPackLimits& limits);
  Status allocate();

  int32_t vocab_size_;
  std::vector<int32_t> eos_ids_;
  cudaStream_t stream_;
  SamplingPackLimits limits_;
  SamplingPack pack_;
  float* work_ = nullptr;                // device [max_rows, vocab]
  unsigned char* in_device_ = nullptr;   // packed rows + sparse arrays
  unsigned char* in_host_ = nullptr;     // pinned
  unsigned char* out_device_ = nullptr;  // SampledToken[rows], then top ids, then top logprobs
  unsigned char* out_host_ = nullptr;    // pinned
  size_t in_bytes_ = 0, out_bytes_ = 0;
};

}  // namespace llmserve
