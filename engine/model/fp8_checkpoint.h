// HF FP8 checkpoints (docs/QUANTIZE.md, "FP8 checkpoints"): config.json's quantization_config
// and the scale tensor beside each F8_E4M3 weight, read into the f32 scale grid of
// kernels::Fp8Scales.
//
// Accepted quantization_config.quant_method values:
//   "fp8"                (transformers' FineGrainedFP8, Qwen3-FP8, DeepSeek-V3; also AutoFP8's
//                         per-tensor files): weight_block_size [rows, cols] when blocked, "fmt"
//                         "e4m3" when given; scales `<module>.weight_scale_inv` (block grid) or
//                         `<module>.weight_scale` (per tensor).
//   "compressed-tensors" (llm-compressor, RedHatAI / neuralmagic -FP8): every config_groups entry's
//                         weights of type "float" and 8 bits, strategy tensor / channel / block
//                         (block_structure); format float-quantized or naive-quantized; scales
//                         `<module>.weight_scale`.
//   "fbgemm_fp8"         (Meta's Llama-3.1-FP8): `<module>.weight_scale` per output row.
// The scale tensor's shape decides its layout: one element per tensor; [N, 1] or [N] per output
// row; [ceil(N / rows), ceil(K / cols)] blocks of the configured block (the last block of a row or
// column ragged). Activation scales (`input_scale`, fbgemm's upper bound) are not used: the
// activations stay f32 (CPU), the weights are the only quantized operand.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "engine/core/status.h"
#include "engine/model/safetensors_file.h"
#include "llmserve/kernels/fp8.h"

namespace llmserve {

struct Fp8CheckpointConfig {
  std::string method;                      // empty: config.json has no quantization_config
  int64_t block_rows = 0, block_cols = 0;  // the configured block; 0 when none
};

// config.json (text) -> its FP8 quantization_config. UNIMPLEMENTED naming the key for another
// method (gptq, awq, bitsandbytes, ...), an int or 4-bit compressed-tensors scheme, or an fmt
// other than e4m3; INVALID_ARGUMENT for a malformed block size.
Result<Fp8CheckpointConfig> read_fp8_checkpoint_config(std::string_view config_json);

// "model.layers.0.mlp.up_proj.weight_scale(_inv)" -> "model.layers.0.mlp.up_proj.weight"; empty
// for other names.
std::string fp8_scale_owner(std::string_view hf_name);
// Activation scales the loader skips: "<module>.input_scale", "<module>.input_scale_ub".
bool is_fp8_activation_scale(std::string_view hf_name);

// The f32 scale grid of the F8_E4M3 weight `weight_name` [N, K] from its scale tensor (F32, BF16 or
// F16), with the block dimensions of its layout in *grid (grid->data points into the result).
// DATA_LOSS naming both tensors for a shape that fits no layout, a negative or non-finite
// scale, or another dtype.
Result<std::unique_ptr<float[]>> fp8_scale_grid(const SafetensorsTensor& scale,
                                                const std::string& weight_name, int64_t N,
                                                int64_t K, const Fp8CheckpointConfig& config,
                                                kernels::Fp8Scales* grid);

}  // namespace llmserve
