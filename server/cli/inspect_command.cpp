// `llmserve inspect --model PATH`: config, tensor table, parameter count, weight bytes and the
// KV-cache bytes per token of a .gguf file or an HF directory.
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include "engine/model/model_weights.h"
#include "engine/model/moe_tensors.h"
#include "server/cli/command.h"

namespace llmserve::cli {
namespace {

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string human(uint64_t n, const char* unit) {
  char buf[64];
  const double v = static_cast<double>(n);
  if (v >= 1e9)
    std::snprintf(buf, sizeof(buf), "%.2f G%s", v / 1e9, unit);
  else if (v >= 1e6)
    std::snprintf(buf, sizeof(buf), "%.2f M%s", v / 1e6, unit);
  else if (v >= 1e3)
    std::snprintf(buf, sizeof(buf), "%.2f K%s", v / 1e3, unit);
  else
    std::snprintf(buf, sizeof(buf), "%llu %s", static_cast<unsigned long long>(n), unit);
  return buf;
}

void print_config(std::ostream& os, const ModelConfig& c) {
  os << "config:\n"
     << "  architecture:        " << c.architecture << "\n"
     << "  hidden_size:         " << c.hidden_size << "\n"
     << "  num_layers:          " << c.num_layers << "\n"
     << "  num_heads:           " << c.num_heads << "\n"
     << "  num_kv_heads:        " << c.num_kv_heads << "\n"
     << "  head_dim:            " << c.head_dim << "\n"
     << "  ffn_size:            " << c.ffn_size << "\n"
     << "  vocab_size:          " << c.vocab_size << "\n"
     << "  max_context:         " << c.max_context << "\n"
     << "  rms_norm_eps:        " << c.rms_norm_eps << "\n"
     << "  rope_theta:          " << c.rope_theta << "\n"
     << "  rope_scaling:        " << rope_scaling_name(c.rope_scaling.type);
  if (c.rope_scaling.type == RopeScalingType::kLinear) {
    os << " (factor " << c.rope_scaling.factor << ")";
  } else if (c.rope_scaling.type == RopeScalingType::kLlama3) {
    os << " (factor " << c.rope_scaling.factor << ", low_freq_factor "
       << c.rope_scaling.low_freq_factor << ", high_freq_factor " << c.rope_scaling.high_freq_factor
       << ", original_max_position " << c.rope_scaling.original_max_position << ")";
  }
  os << "\n"
     << "  rope_pairing:        "
     << (c.rope_interleaved ? "interleaved (adjacent pairs)" : "halves (NeoX)") << "\n"
     << "  tie_word_embeddings: " << (c.tie_word_embeddings ? "true" : "false") << "\n"
     << "  attention_bias:      " << (c.attention_bias ? "true" : "false") << "\n"
     << "  qk_norm:             " << (c.qk_norm ? "true" : "false") << "\n"
     << "  bos / eos / pad ids: " << c.bos_id << " / " << c.eos_id << " / " << c.pad_id << "\n";
  if (c.rope_dim > 0 && c.rope_dim != c.head_dim) {
    os << "  rope_dim:            " << c.rope_dim << " of head_dim " << c.head_dim << "\n";
  }
  if (c.rope_scaling.type == RopeScalingType::kLongrope) {
    os << "  longrope:            original context " << c.rope_scaling.original_max_position
       << ", attention factor " << c.rope_scaling.attention_factor << "\n";
  }
  if (c.sandwich_norms) {
    os << "  gemma:               embedding scale " << c.embedding_scale << ", attention scale "
       << c.attention_scale << ", final soft-cap " << c.final_logit_softcap << ", GeGLU\n";
  }
  if (!c.local_layers.empty()) {
    int64_t local = 0;
    for (uint8_t l : c.local_layers) local += l != 0;
    os << "  local layers:        " << local << " of " << c.num_layers << " (window "
       << c.local_window << ", rope_theta " << c.rope_local_theta << ")\n";
  }
  if (c.num_experts > 0) {
    os << "  experts:             " << c.num_experts << " of expert_ffn_size " << c.expert_ffn_size
       << ", " << c.num_experts_used << " per token (top-k weights "
       << (c.norm_topk_prob ? "renormalised" : "as the softmax gives them") << ")\n";
    if (!c.dense_layers.empty()) {
      os << "  dense layers:       ";
      for (int64_t l : c.dense_layers) os << " " << l;
      os << "\n";
    }
  }
}

void print_tensors(std::ostream& os, const LoadedModel& m) {
  size_t width = 4;
  for (const TensorView& t : m.tensors()) width = std::max(width, t.name.size());
  os << "tensors (" << m.tensors().size() << "):\n";
  char line[512];
  std::snprintf(line, sizeof(line), "  %-*s  %-5s  %s\n", static_cast<int>(width), "name", "type",
                "shape");
  os << line;
  for (const TensorView& t : m.tensors()) {
    std::snprintf(line, sizeof(line), "  %-*s  %-5s  %s\n", static_cast<int>(width), t.name.c_str(),
                  std::string(kernels::dtype_name(t.type)).c_str(), shape_string(t.shape).c_str());
    os << line;
  }
}

int run_inspect(const std::string& path, bool show_metadata) {
  auto loaded = load_model(path);
  if (!loaded.is_ok()) {
    std::cerr << "error: " << loaded.status().to_string() << "\n";
    return 1;
  }
  const LoadedModel& m = **loaded;
  const ModelConfig& c = m.config();
  std::ostringstream os;
  os << "model: " << path << " (";
  if (const GgufFile* g = m.gguf()) {
    os << "GGUF v" << g->version() << ", " << g->metadata().size() << " metadata keys";
  } else {
    os << "HF safetensors";
  }
  os << ", " << m.tensors().size() << " tensors)\n";
  print_config(os, c);
  if (show_metadata && m.gguf() != nullptr) {
    os << "metadata:\n";
    for (const GgufKeyValue& kv : m.gguf()->metadata()) {
      os << "  " << kv.key << " = " << kv.value.to_string() << "\n";
    }
  }
  print_tensors(os, m);
  const uint64_t active = active_parameter_count(m);
  os << "parameters:   " << m.parameter_count() << " (" << human(m.parameter_count(), "") << ")\n"
     << "active/token: " << active << " (" << human(active, "") << ")\n"
     << "weight bytes: " << m.weight_bytes() << " (" << human(m.weight_bytes(), "B") << ")\n"
     << "KV cache per token:\n"
     << "  f16:  " << c.kv_bytes_formula(kernels::KvDtype::kF16) << "\n"
     << "  f32:  " << c.kv_bytes_formula(kernels::KvDtype::kF32) << "\n"
     << "  int8: " << c.kv_bytes_formula(kernels::KvDtype::kInt8) << "\n"
     << "  fp8:  " << c.kv_bytes_formula(kernels::KvDtype::kFp8) << " (CUDA)\n"
     << "  at max_context " << c.max_context << ": f16 "
     << human(c.kv_bytes_per_token(2) * static_cast<uint64_t>(c.max_context), "B") << ", int8 "
     << human(c.kv_bytes_per_token(kernels::KvDtype::kInt8) * static_cast<uint64_t>(c.max_context),
              "B")
     << " per sequence\n";
  std::cout << os.str();
  return 0;
}

}  // namespace

void add_inspect_command(CLI::App& root, int& exit_code) {
  auto* cmd = root.add_subcommand("inspect", "Print a model's config, tensors, sizes and KV cost");
  auto model = std::make_shared<std::string>();
  auto metadata = std::make_shared<bool>(false);
  cmd->add_option("--model", *model, "a .gguf file or an HF model directory")->required();
  cmd->add_flag("--metadata", *metadata, "also print every GGUF metadata key");
  cmd->callback([model, metadata, &exit_code] { exit_code = run_inspect(*model, *metadata); });
}

}  // namespace llmserve::cli
