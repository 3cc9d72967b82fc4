// model.quantize: at start-up, a loaded model's F32 / F16 / BF16 matmul weights are quantized to
// Q8_0, Q4_0 or Q4_K (kernels/quantize_weights.h) into kernels::host_alloc buffers the
// LoadedModel owns, so that the CPU backend repacks and runs them as it would a file of that type.
//
// Which tensors: the 2-D matmul weights blk.N.attn_{q,k,v,output}.weight,
// blk.N.ffn_{gate,up,down}.weight and output.weight (an untied LM head). The token embedding
// stays as stored (it is read by row; a tied LM head is that same table). With q4_0 and q4_k the
// output.weight becomes Q8_0, as llama.cpp keeps it at higher precision (Q6_K) in its 4-bit
// mixes: its error lands directly in the logits. Tensors already quantized (a Q4_1 GGUF) stay as
// they are, and so do tensors whose row length is not a multiple of the target's block (32; 256
// for Q4_K); both are counted and logged. A converted tensor's source pages in the file mapping
// are released once its copy exists (release_mapped_pages: they are not held twice).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "engine/core/status.h"
#include "engine/model/model_weights.h"
#include "llmserve/kernels/dtype.h"
#include "llmserve/kernels/thread_pool.h"

namespace llmserve {

// "" -> nullopt (off); "q8_0" / "q4_0" / "q4_k" -> the type; INVALID_ARGUMENT naming
// model.quantize otherwise.
Result<std::optional<kernels::DType>> parse_model_quantize(std::string_view name);

// The type tensor `name` gets under model.quantize `target`, or nullopt when it is not one the
// option converts (embeddings, norms, biases). Ignores the tensor's stored type and shape.
std::optional<kernels::DType> quantize_target_for(std::string_view name, kernels::DType target);

struct QuantizeReport {
  int64_t quantized = 0;          // tensors converted
  int64_t already_quantized = 0;  // stored quantized: left as they are
  int64_t shape_kept = 0;         // row length not a multiple of the block: left as they are
  uint64_t bytes_before = 0;      // stored bytes of the converted tensors
  uint64_t bytes_after = 0;       // ... and of their quantized copies
  uint64_t released_bytes = 0;    // their file-mapped source pages dropped from the RSS
  double seconds = 0;
  std::string summary() const;  // one log line
};

// Converts the model's tensors as above, rows split over `pool`, and logs the report (and one
// line per tensor left as stored for its shape). RESOURCE_EXHAUSTED when a copy cannot be
// allocated.
Result<QuantizeReport> quantize_model_weights(LoadedModel& model, kernels::DType target,
                                              kernels::ThreadPool& pool);

}  // namespace llmserve
