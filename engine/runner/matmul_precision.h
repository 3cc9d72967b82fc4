// engine.cpu_matmul_precision: the activation precision of the CPU's integer matmuls by the role
// of a row's token (ForwardBatch::prompt_rows): the request's prompt, compute-bound in large
// chunks, or its output (generated tokens and drafts, bandwidth-bound decode rows, where a second
// pass costs next to nothing). A token's precision depends on its role only, never on the batch,
// the chunking or a recompute after preemption.
#pragma once

#include <optional>
#include <string_view>

#include "llmserve/kernels/act_precision.h"

namespace llmserve {

struct MatmulPrecision {
  kernels::ActPrecision output = kernels::ActPrecision::kQ8x2;
  kernels::ActPrecision prompt = kernels::ActPrecision::kQ8x2;

  constexpr MatmulPrecision() = default;
  constexpr MatmulPrecision(kernels::ActPrecision output_rows, kernels::ActPrecision prompt_rows)
      : output(output_rows), prompt(prompt_rows) {}
  // Every row at p.
  constexpr MatmulPrecision(kernels::ActPrecision p)  // NOLINT(google-explicit-constructor)
      : output(p), prompt(p) {}
};

// "auto" (q8x2 output rows, q8 prompt rows), "q8x2" or "q8" (every row); nullopt when unknown.
std::optional<MatmulPrecision> parse_matmul_precision(std::string_view s);

}  // namespace llmserve
