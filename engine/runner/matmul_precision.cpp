#include "engine/runner/matmul_precision.h"

namespace llmserve {

namespace {

constexpr MatmulPrecision kAutoPrecision{kernels::ActPrecision::kQ8x2, kernels::ActPrecision::kQ8};

}  // namespace

std::optional<MatmulPrecision> parse_matmul_precision(std::string_view s) {
  if (s == "auto") return kAutoPrecision;
  const auto one = kernels::parse_act_precision(s);
  if (!one) return std::nullopt;
  return MatmulPrecision{*one, *one};
}

Result<std::optional<MatmulPrecision>> parse_matmul_precision_setting(std::string_view s) {
  if (s == "by_format") return std::optional<MatmulPrecision>{};
  const auto p = parse_matmul_precision(s);
  if (!p) {
    return invalid_argument(
        "engine.cpu_matmul_precision must be by_format, auto, q8x2 or q8, got '" + std::string(s) +
        "'");
  }
  return std::optional<MatmulPrecision>{*p};
}

MatmulPrecision matmul_precision_for_weights(const std::vector<TensorView>& tensors) {
  uint64_t k_quant_bytes = 0;
  uint64_t other_integer_bytes = 0;
  for (const TensorView& t : tensors) {
    if (t.shape.size() < 2 || !kernels::dtype_is_quantized(t.type)) continue;
    (kernels::dtype_is_k_quant(t.type) ? k_quant_bytes : other_integer_bytes) += t.nbytes;
  }
  return MatmulPrecision{k_quant_bytes > other_integer_bytes ? kernels::ActPrecision::kQ8
                                                             : kernels::ActPrecision::kQ8x2};
}

std::string matmul_precision_name(const MatmulPrecision& p) {
  if (p == kAutoPrecision) return "auto";
  if (p.prompt == p.output) return std::string(kernels::act_precision_name(p.prompt));
  return "prompt " + std::string(kernels::act_precision_name(p.prompt)) + " / output " +
         std::string(kernels::act_precision_name(p.output));
}

}  // namespace llmserve
