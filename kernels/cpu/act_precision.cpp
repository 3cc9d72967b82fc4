#include "llmserve/kernels/act_precision.h"

namespace llmserve::kernels {

std::string_view act_precision_name(ActPrecision p) {
  return p == ActPrecision::kQ8 ? "q8" : "q8x2";
}

std::optional<ActPrecision> parse_act_precision(std::string_view s) {
  if (s == "q8x2") return ActPrecision::kQ8x2;
  if (s == "q8") return ActPrecision::kQ8;
  return std::nullopt;
}

}  // namespace llmserve::kernels
