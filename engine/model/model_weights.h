// A source-independent view of a loaded model: its config and its weight tensors under
// canonical (GGUF) names, backed by memory maps of the .gguf or .safetensors files.
//
// Canonical names: token_embd.weight, output_norm.weight, output.weight (absent when tied),
// blk.{i}.attn_norm.weight, blk.{i}.attn_{q,k,v,output}.weight, blk.{i}.attn_{q,k,v}.bias,
// blk.{i}.ffn_norm.weight, blk.{i}.ffn_{gate,up,down}.weight. A llama3-scaled GGUF carries its
// RoPE scaling as rope_freqs.weight ([head_dim / 2] F32 divisors of the inverse frequencies)
// instead of metadata; when that tensor is present it replaces config().rope_scaling.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/core/status.h"
#include "engine/model/gguf_file.h"
#include "engine/model/mapped_file.h"
#include "engine/model/model_config.h"
#include "llmserve/kernels/dtype.h"
#include "llmserve/kernels/fp8.h"

namespace llmserve {

struct TensorView {
  std::string name;  // canonical name
  DType type = DType::F32;
  // PyTorch order: a matrix is [rows, cols] = [out_features, in_features]; rows are contiguous,
  // each row_bytes(type, cols) bytes.
  std::vector<int64_t> shape;
  const std::byte* data = nullptr;
  size_t nbytes = 0;
  // F8_E4M3 matrices: the scale grid (f32, owned by the LoadedModel; fp8_checkpoint.h).
  kernels::Fp8Scales scales;

  int64_t num_elements() const;
  int64_t rows() const { return shape.size() < 2 ? 1 : num_elements() / shape.back(); }
  int64_t cols() const { return shape.empty() ? 1 : shape.back(); }
};

// "blk.3.attn_q.weight" = block_tensor_name(3, "attn_q.weight").
std::string block_tensor_name(int64_t layer, std::string_view suffix);
// HF / safetensors name -> canonical name ("model.layers.3.self_attn.q_proj.weight" ->
// "blk.3.attn_q.weight"); empty when the name is not one a Llama-family model uses.
std::string canonical_tensor_name(std::string_view hf_name);
// The same for a model of `architecture` (gemma3: its four norms per layer, and the text model's
// tensors of a Gemma3ForConditionalGeneration checkpoint).
std::string canonical_tensor_name(std::string_view hf_name, std::string_view architecture);

class LoadedModel {
 public:
  enum class Source { kGguf, kSafetensors };

  const ModelConfig& config() const { return config_; }
  Source source() const { return source_; }
  const std::string& path() const { return path_; }
  const TensorView* tensor(std::string_view canonical_name) const;
  const std::vector<TensorView>& tensors() const { return tensors_; }  // file order
  const GgufFile* gguf() const { return gguf_.get(); }                 // null for HF directories
  // The HF directory holding tokenizer.json / tokenizer_config.json; empty for GGUF.
  const std::string& tokenizer_dir() const { return tokenizer_dir_; }

  uint64_t parameter_count() const;  // sum of element counts of all tensors
  uint64_t weight_bytes() const;     // sum of stored bytes of all tensors

  // Every tensor the Llama graph needs is present with the shape the config implies.
  Status check_tensors() const;

  // Points tensor `name` at `data` (nbytes of `type`, same shape), a kernels::host_alloc buffer
  // the model then owns (model.quantize: engine/model/quantize_model.h). NOT_FOUND for an
  // unknown name; the buffer is freed either way.
  Status replace_tensor_data(std::string_view name, DType type, void* data, size_t nbytes);
  // The same for an F8_E4M3 copy and its scale grid (another host_alloc buffer the model owns).
  Status replace_tensor_fp8(std::string_view name, void* data, size_t nbytes, float* scales,
                            int64_t block_rows, int64_t block_cols);

 private:
  friend Result<std::unique_ptr<LoadedModel>> load_model(const std::string& path);
  friend struct LoadedModelBuilder;
  Status add_tensor(TensorView view);
  Status add_split(TensorView view);  // a fused tensor as its parts (phi3.h), else as is

  ModelConfig config_;
  Source source_ = Source::kGguf;
  std::string path_;
  std::string tokenizer_dir_;
  std::unique_ptr<GgufFile> gguf_;
  std::vector<MappedFile> maps_;  // safetensors shards
  struct HostFree {
    void operator()(void* p) const;
  };
  std::vector<std::unique_ptr<void, HostFree>> owned_;  // replace_tensor_data's buffers
  std::vector<std::unique_ptr<float[]>> fp8_scales_;    // f32 copies of checkpoint scales
  std::vector<TensorView> tensors_;
  std::unordered_map<std::string, size_t> index_;
};

// path: a .gguf file, or an HF directory with config.json and model.safetensors or sharded
// model-0000x-of-0000y.safetensors listed in model.safetensors.index.json.
Result<std::unique_ptr<LoadedModel>> load_model(const std::string& path);

}  // namespace llmserve
