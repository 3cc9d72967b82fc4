#include "engine/pooling/pooling_config.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/model/bert_config.h"
#include "engine/model/gguf_file.h"
#include "engine/model/safetensors_file.h"
#include "llmserve/kernels/dequantize.h"

namespace llmserve {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

Result<json> read_json(const fs::path& p) {
  std::ifstream in(p);
  if (!in) return not_found("pooling: cannot open " + p.string());
  json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return invalid_argument("pooling: " + p.string() + " is not valid JSON");
  return j;
}

// 1_Pooling/config.json: sentence-transformers 6 writes "pooling_mode": "lasttoken"; earlier
// versions (and the Hub's Qwen3-Embedding) one boolean per mode.
Result<PoolingType> pooling_type_of(const json& cfg, const fs::path& where) {
  std::vector<std::string> modes;
  if (cfg.contains("pooling_mode") && cfg["pooling_mode"].is_string()) {
    modes.push_back(cfg["pooling_mode"].get<std::string>());
  }
  for (const char* m : {"cls_token", "mean_tokens", "max_tokens", "mean_sqrt_len_tokens",
                        "weightedmean_tokens", "lasttoken"}) {
    const std::string key = std::string("pooling_mode_") + m;
    if (cfg.contains(key) && cfg[key].is_boolean() && cfg[key].get<bool>()) modes.push_back(m);
  }
  if (modes.size() != 1) {
    return invalid_argument("pooling: " + where.string() +
                            " must name exactly one pooling mode (found " +
                            std::to_string(modes.size()) + ")");
  }
  const std::string& m = modes[0];
  if (m == "lasttoken") return PoolingType::kLast;
  if (m == "mean" || m == "mean_tokens") return PoolingType::kMean;
  if (m == "cls" || m == "cls_token") return PoolingType::kCls;
  return unimplemented("pooling: " + where.string() + ": pooling mode '" + m +
                       "' is not supported (supported: lasttoken, mean, cls)");
}

Result<DenseLayer> read_dense(const fs::path& dir) {
  LLMSERVE_ASSIGN_OR_RETURN(json cfg, read_json(dir / "config.json"));
  DenseLayer d;
  d.in_features = cfg.value("in_features", int64_t{0});
  d.out_features = cfg.value("out_features", int64_t{0});
  const std::string act =
      cfg.value("activation_function", std::string("torch.nn.modules.linear.Identity"));
  if (act.ends_with(".Identity")) {
    d.activation = DenseActivation::kIdentity;
  } else if (act.ends_with(".Tanh")) {
    d.activation = DenseActivation::kTanh;
  } else {
    return unimplemented("pooling: " + dir.string() + ": activation '" + act +
                         "' is not supported (supported: Identity, Tanh)");
  }
  if (d.in_features <= 0 || d.out_features <= 0) {
    return invalid_argument("pooling: " + dir.string() + ": bad in/out_features");
  }
  LLMSERVE_ASSIGN_OR_RETURN(auto st, SafetensorsFile::open((dir / "model.safetensors").string()));
  for (const SafetensorsTensor& t : st->tensors()) {
    const bool is_w = t.name == "linear.weight", is_b = t.name == "linear.bias";
    if (!is_w && !is_b) continue;
    const int64_t want = is_w ? d.in_features * d.out_features : d.out_features;
    int64_t n = 1;
    for (int64_t s : t.shape) n *= s;
    if (n != want || !kernels::dtype_can_dequantize(t.type) ||
        t.data.size() < kernels::row_bytes(t.type, n)) {
      return invalid_argument("pooling: " + dir.string() + ": tensor " + t.name +
                              " has the wrong shape or type");
    }
    std::vector<float>& dst = is_w ? d.weight : d.bias;
    dst.resize(static_cast<size_t>(n));
    kernels::dequantize_row(t.type, t.data.data(), dst.data(), n);
  }
  if (d.weight.empty()) return invalid_argument("pooling: " + dir.string() + ": no linear.weight");
  return d;
}

// dense_2.weight then dense_3.weight when the GGUF has them: [out, in] matrices, chained.
Status read_gguf_dense(const LoadedModel& model, std::vector<DenseLayer>& out) {
  for (const char* name : {"dense_2.weight", "dense_3.weight"}) {
    const TensorView* t = model.tensor(name);
    if (t == nullptr) continue;
    const std::string where = "pooling: " + model.path() + ": tensor " + name;
    if (t->shape.size() != 2 || t->rows() <= 0 || t->cols() <= 0 ||
        !kernels::dtype_can_dequantize(t->type)) {
      return invalid_argument(where + " must be a matrix of a readable type");
    }
    const size_t row_bytes = kernels::row_bytes(t->type, t->cols());
    if (t->nbytes < row_bytes * static_cast<size_t>(t->rows())) {
      return invalid_argument(where + " is shorter than its shape");
    }
    DenseLayer d;
    d.in_features = t->cols();
    d.out_features = t->rows();
    d.weight.resize(static_cast<size_t>(d.in_features * d.out_features));
    for (int64_t r = 0; r < d.out_features; ++r) {
      kernels::dequantize_row(t->type, t->data + static_cast<size_t>(r) * row_bytes,
                              d.weight.data() + r * d.in_features, d.in_features);
    }
    if (!out.empty() && out.back().out_features != d.in_features) {
      return invalid_argument(where + " takes " + std::to_string(d.in_features) +
                              " features; the layer before gives " +
                              std::to_string(out.back().out_features));
    }
    out.push_back(std::move(d));
  }
  return Status::ok();
}

}  // namespace

const char* pooling_type_name(PoolingType t) {
  switch (t) {
    case PoolingType::kLast:
      return "last";
    case PoolingType::kMean:
      return "mean";
    case PoolingType::kCls:
      return "cls";
  }
  return "?";
}

Result<std::optional<PoolingConfig>> load_sentence_transformers_config(const std::string& dir_s) {
  const fs::path dir(dir_s);
  if (!fs::exists(dir / "modules.json")) return std::optional<PoolingConfig>();
  LLMSERVE_ASSIGN_OR_RETURN(json modules, read_json(dir / "modules.json"));
  if (!modules.is_array()) return invalid_argument("pooling: modules.json is not a list");
  PoolingConfig pc;
  pc.normalize = false;
  pc.source = (dir / "modules.json").string();
  bool pooled = false;
  for (const json& m : modules) {
    const std::string type = m.value("type", std::string());
    const fs::path sub = dir / m.value("path", std::string());
    const auto kind = [&type](std::string_view cls) {
      return type.ends_with(std::string(".") + std::string(cls));
    };
    if (kind("Transformer")) continue;
    if (kind("Pooling")) {
      LLMSERVE_ASSIGN_OR_RETURN(json cfg, read_json(sub / "config.json"));
      LLMSERVE_ASSIGN_OR_RETURN(pc.type, pooling_type_of(cfg, sub / "config.json"));
      pooled = true;
    } else if (kind("Dense")) {
      if (!pooled) return unimplemented("pooling: a Dense module before Pooling");
      LLMSERVE_ASSIGN_OR_RETURN(DenseLayer d, read_dense(sub));
      pc.dense.push_back(std::move(d));
    } else if (kind("Normalize")) {
      pc.normalize = true;
    } else {
      return unimplemented("pooling: modules.json names module '" + type +
                           "', which is not supported (supported: Transformer, Pooling, Dense, "
                           "Normalize)");
    }
  }
  if (!pooled) return invalid_argument("pooling: modules.json has no Pooling module");
  for (size_t i = 1; i < pc.dense.size(); ++i) {
    if (pc.dense[i].in_features != pc.dense[i - 1].out_features) {
      return invalid_argument("pooling: Dense layers' widths do not chain");
    }
  }
  if (fs::exists(dir / "config_sentence_transformers.json")) {
    LLMSERVE_ASSIGN_OR_RETURN(json st, read_json(dir / "config_sentence_transformers.json"));
    if (st.contains("prompts") && st["prompts"].is_object()) {
      for (const auto& [name, text] : st["prompts"].items()) {
        if (text.is_string()) pc.prompts[name] = text.get<std::string>();
      }
    }
    if (st.contains("default_prompt_name") && st["default_prompt_name"].is_string()) {
      pc.default_prompt_name = st["default_prompt_name"].get<std::string>();
    }
  }
  return std::optional<PoolingConfig>(std::move(pc));
}

Result<std::optional<PoolingConfig>> load_pooling_config(const LoadedModel& model) {
  const ModelConfig& cfg = model.config();
  std::optional<PoolingConfig> pc;
  if (model.source() == LoadedModel::Source::kSafetensors) {
    LLMSERVE_ASSIGN_OR_RETURN(pc, load_sentence_transformers_config(model.path()));
  } else if (const GgufFile* g = model.gguf()) {
    // llama.cpp: LLAMA_POOLING_TYPE_{NONE=0, MEAN=1, CLS=2, LAST=3, RANK=4}; its server
    // L2-normalises embeddings by default. The keys are under the file's own architecture
    // (gemma-embedding for EmbeddingGemma, which the config calls gemma3).
    const std::string arch(g->get_string("general.architecture").value_or(cfg.architecture));
    if (auto t = g->get_u32(arch + ".pooling_type")) {
      PoolingConfig p;
      p.source = model.path() + " (" + arch + ".pooling_type " + std::to_string(*t) + ")";
      if (*t == 1) {
        p.type = PoolingType::kMean;
      } else if (*t == 2) {
        p.type = PoolingType::kCls;
      } else if (*t == 3 || *t == 4) {
        p.type = PoolingType::kLast;
      }
      if (*t != 0) pc = std::move(p);
    }
    // EmbeddingGemma's 2_Dense / 3_Dense (convert_hf_to_gguf.py
    // --sentence-transformers-dense-modules): no bias, identity activation, after the pooling.
    if (pc && !pc->rank) {
      LLMSERVE_RETURN_IF_ERROR(read_gguf_dense(model, pc->dense));
      if (!pc->dense.empty()) pc->source += ", dense_2 / dense_3";
    }
  }
  if (!pc && (is_encoder_only(cfg) || cfg.bidirectional)) {
    // A plain BERT (or bidirectional decoder) folder or GGUF: mean pooling, as
    // sentence-transformers wraps a bare transformers model (not the decoders' last token),
    // normalised.
    PoolingConfig p;
    p.type = PoolingType::kMean;
    p.source = model.path() + " (an encoder without pooling metadata: mean)";
    pc = std::move(p);
  }
  // A model that asks for bidirectional attention the config reader did not take (only Gemma 3
  // has it) must not give plausible but wrong vectors.
  if (model.source() == LoadedModel::Source::kSafetensors && !cfg.bidirectional &&
      fs::exists(fs::path(model.path()) / "config.json")) {
    LLMSERVE_ASSIGN_OR_RETURN(json hf, read_json(fs::path(model.path()) / "config.json"));
    const auto flag = [&hf](const char* key) -> std::optional<bool> {
      auto it = hf.find(key);
      if (it == hf.end() || !it->is_boolean()) return std::nullopt;
      return it->get<bool>();
    };
    if (flag("use_bidirectional_attention").value_or(false) || !flag("is_causal").value_or(true)) {
      return unimplemented(
          "pooling: this " + cfg.architecture +
          " model needs bidirectional attention (use_bidirectional_attention / is_causal false "
          "in config.json), which only the gemma3 graph (EmbeddingGemma) implements");
    }
  }
  if (pc && !pc->dense.empty() && pc->dense.front().in_features != cfg.hidden_size) {
    return invalid_argument(
        "pooling: the first Dense layer takes " + std::to_string(pc->dense.front().in_features) +
        " features, the model's hidden size is " + std::to_string(cfg.hidden_size));
  }
  return pc;
}

}  // namespace llmserve
