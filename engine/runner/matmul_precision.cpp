#include "engine/runner/matmul_precision.h"

namespace llmserve {

std::optional<MatmulPrecision> parse_matmul_precision(std::string_view s) {
  if (s == "auto") return MatmulPrecision{kernels::ActPrecision::kQ8x2, kernels::ActPrecision::kQ8};
  const auto one = kernels::parse_act_precision(s);
  if (!one) return std::nullopt;
  return MatmulPrecision{*one, *one};
}

}  // namespace llmserve
