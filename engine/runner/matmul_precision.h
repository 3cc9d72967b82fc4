// engine.cpu_matmul_precision: the activation precision of the CPU's integer matmuls by the role
// of a row's token (ForwardBatch::prompt_rows): the request's prompt, compute-bound in large
// chunks, or its output (generated tokens and drafts, bandwidth-bound decode rows, where a second
// pass costs next to nothing). A token's precision depends on its role only, never on the batch,
// the chunking or a recompute after preemption.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/status.h"
#include "engine/model/model_weights.h"
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
  friend constexpr bool operator==(const MatmulPrecision&, const MatmulPrecision&) = default;
};

// "auto" (q8x2 output rows, q8 prompt rows), "q8x2" or "q8" (every row); nullopt when unknown.
std::optional<MatmulPrecision> parse_matmul_precision(std::string_view s);

// The config value: "by_format" gives nullopt (chosen from the weights once they are loaded:
// matmul_precision_for_weights), the others parse_matmul_precision's; an error naming the value
// when it is none of them.
Result<std::optional<MatmulPrecision>> parse_matmul_precision_setting(std::string_view s);

// by_format: "q8" (every row in one pass, llama.cpp's activation precision) when K-quants
// (Q2_K..Q6_K) hold more bytes than the other quantized formats among the matrices (tensors of 2
// or more dimensions), "q8x2" otherwise (float weights never quantize their activations).
MatmulPrecision matmul_precision_for_weights(const std::vector<TensorView>& tensors);

// "auto", "q8x2" or "q8" for the three named settings, else "prompt <p> / output <p>".
std::string matmul_precision_name(const MatmulPrecision& p);

}  // namespace llmserve
