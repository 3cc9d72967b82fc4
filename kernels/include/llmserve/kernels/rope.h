// Rotary position embedding over q or k laid out [T, heads, head_dim], per-token positions.
#pragma once

#include <cstdint>
#include <vector>

namespace llmserve::kernels {

enum class RopePairing {
  kAdjacent,  // rotates (x[2i], x[2i+1]): GGUF llama layout
  kHalves,    // rotates (x[i], x[i + d/2]): HF / NeoX layout
};

struct RopeScaling {
  enum class Kind { kNone, kLinear, kLlama3 } kind = Kind::kNone;
  float factor = 1.0f;
  float low_freq_factor = 1.0f;            // llama3
  float high_freq_factor = 4.0f;           // llama3
  float original_max_positions = 8192.0f;  // llama3
};

// inv_freq[i] = theta^(-2i/rot_dim) for i < rot_dim/2, then scaled (linear: / factor; llama3:
// the smooth wavelength-dependent rule of Llama 3.1). Computed once per model.
std::vector<float> rope_inv_freq(int rot_dim, float theta, const RopeScaling& scaling = {});

// Rotates the first 2 * inv_freq.size() dims of every head of x[T, heads, head_dim] in place by
// angle positions[t] * inv_freq[i] (angle computed in f32, as HF does).
void apply_rope(float* x, int64_t T, int heads, int head_dim, const int32_t* positions,
                const std::vector<float>& inv_freq, RopePairing pairing);

// The angles' cosines and sines for T positions, computed once and applied to many tensors (q and
// k of every layer): cos_sin[t * 2h + i] = cos, cos_sin[t * 2h + h + i] = sin of
// positions[t] * inv_freq[i], h = inv_freq.size(). Resizes cos_sin to T * 2h.
void rope_table(const int32_t* positions, int64_t T, const std::vector<float>& inv_freq,
                std::vector<float>& cos_sin);
// apply_rope with the angles of rope_table (same results, bit for bit); half = inv_freq.size().
void apply_rope_table(float* x, int64_t T, int heads, int head_dim, const float* cos_sin, int half,
                      RopePairing pairing);

}  // namespace llmserve::kernels
