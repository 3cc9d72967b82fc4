// How matmul quantizes f32 activations for the integer dot products of quantized weights.
#pragma once

#include <optional>
#include <string_view>

namespace llmserve::kernels {

enum class ActPrecision {
  // Two 8-bit passes per block: x ~= d1 * q1 + d2 * q2, q2 quantizing the residual of q1 (error
  // <= |x|max / 64516, about 16 bits). Matches an f32 reference to ~1e-4; twice the integer work.
  kQ8x2,
  // One 8-bit pass (error <= |x|max / 254), as llama.cpp does: fastest, flips near-tie tokens.
  kQ8,
};

std::string_view act_precision_name(ActPrecision p);                  // "q8x2" or "q8"
std::optional<ActPrecision> parse_act_precision(std::string_view s);  // nullopt when unknown

}  // namespace llmserve::kernels
