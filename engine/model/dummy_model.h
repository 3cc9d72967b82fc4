// Random-weight models of a known shape for benchmarks (`--load-format dummy`), so performance
// can be measured without downloading weights. The model is written as a small GGUF file whose
// BF16 tensors all view one shared pool of random values at different offsets (tensors may
// overlap), then opened with load_model like any other file: CPU and CUDA backends both run it.
//
//   LLMSERVE_ASSIGN_OR_RETURN(std::string path, write_dummy_gguf("llama-3.1-8b", dir, seed));
//   LLMSERVE_ASSIGN_OR_RETURN(auto model, load_model(path));
//
// The file is about the size of the largest tensor (1.1 GB for llama-3.1-8b, 0.5 GB for
// llama-3.2-1b, about 1 MB for "tiny"); weights are uniform with std 1/sqrt(in_features), norm
// weights are 1.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/status.h"
#include "engine/model/model_config.h"

namespace llmserve {

// "llama-3.1-8b", "llama-3.2-1b", and "tiny" (2 layers, hidden 256, vocab 1000; for tests).
std::vector<std::string> dummy_model_presets();
Result<ModelConfig> dummy_model_config(std::string_view preset);

// Writes <dir>/dummy-<preset>.gguf (replacing it) and returns its path.
Result<std::string> write_dummy_gguf(std::string_view preset, const std::string& dir,
                                     uint64_t seed = 0);

}  // namespace llmserve
