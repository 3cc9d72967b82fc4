// Per-sample random numbers for sampling. Counter-based: draw k is a pure function of
// (key, k), so a request's draws never depend on other requests, the batch, or the thread.
// The sampler takes exactly one draw per sampled token (greedy included), so draw k belongs to
// output token k.
#pragma once

#include <cstdint>

namespace llmserve {

class RequestRng {
 public:
  explicit RequestRng(uint64_t seed = 0) : key_(mix(seed ^ 0x5851F42D4C957F2Dull)) {}

  // The seed for sample `index` of a request (n > 1): seed + index, so sample i of a request
  // seeded s draws exactly as a single request seeded s + i (the key mixes the seed, so
  // neighbouring seeds give unrelated streams).
  static uint64_t sample_seed(uint64_t seed, int32_t index) {
    return seed + static_cast<uint64_t>(index);
  }
  // The seed of a request without one: from the server seed and the engine's request id.
  static uint64_t derived_seed(uint64_t server_seed, uint64_t request_id) {
    return mix(mix(server_seed ^ 0xD1B54A32D192ED03ull) + request_id);
  }

  // Uniform in [0, 1) with 53 random bits; advances the counter by one.
  double next_uniform() {
    uint64_t z = mix(key_ + (counter_++) * 0x9E3779B97F4A7C15ull);
    z = mix(z ^ (key_ >> 17 | key_ << 47));
    return static_cast<double>(z >> 11) * 0x1.0p-53;
  }

  uint64_t key() const { return key_; }  // the mixed seed next_uniform() draws with
  uint64_t counter() const { return counter_; }
  void set_counter(uint64_t c) { counter_ = c; }

  // SplitMix64's finalizer (a bijection on 64 bits with full avalanche).
  static uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

 private:
  uint64_t key_;
  uint64_t counter_ = 0;
};

}  // namespace llmserve
