// load_model: a .gguf file or an HF directory (config.json + safetensors) -> LoadedModel.
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "engine/model/fp8_checkpoint.h"
#include "engine/model/gemma3.h"
#include "engine/model/model_weights.h"
#include "engine/model/moe_tensors.h"
#include "engine/model/phi3.h"
#include "engine/model/safetensors_file.h"

namespace llmserve {

struct LoadedModelBuilder {
  static Result<std::unique_ptr<LoadedModel>> from_gguf(const std::string& path);
  static Result<std::unique_ptr<LoadedModel>> from_hf_dir(const std::string& dir);
  // Points each FP8 weight (canonical -> HF name) at the f32 grid of its scale tensor.
  static Status attach_fp8_scales(LoadedModel& m, const Fp8CheckpointConfig& config,
                                  const std::map<std::string, std::string>& weights,
                                  const std::map<std::string, SafetensorsTensor>& scales);
};

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

Result<std::string> read_small_file(const std::string& path) {
  LLMSERVE_ASSIGN_OR_RETURN(MappedFile map, MappedFile::open(path));
  if (map.size() > (64u << 20)) return invalid_argument(path + ": file too large");
  return std::string(reinterpret_cast<const char*>(map.bytes().data()), map.size());
}

bool is_plain_file_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\\') == std::string::npos && name.find('\0') == std::string::npos;
}

// Shard file names from model.safetensors.index.json, and the tensor -> shard map.
Status read_index(const std::string& path, std::vector<std::string>* shards,
                  std::map<std::string, std::string>* weight_map) {
  LLMSERVE_ASSIGN_OR_RETURN(std::string text, read_small_file(path));
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return data_loss(path + ": not a JSON object");
  auto wm = j.find("weight_map");
  if (wm == j.end() || !wm->is_object()) return data_loss(path + ": missing object 'weight_map'");
  std::set<std::string> unique;
  for (const auto& [name, file] : wm->items()) {
    if (!file.is_string() || !is_plain_file_name(file.get<std::string>())) {
      return data_loss(path + ": weight_map['" + name + "'] must be a file name in the directory");
    }
    unique.insert(file.get<std::string>());
    (*weight_map)[name] = file.get<std::string>();
  }
  shards->assign(unique.begin(), unique.end());
  return Status::ok();
}

}  // namespace

Status LoadedModelBuilder::attach_fp8_scales(
    LoadedModel& m, const Fp8CheckpointConfig& config,
    const std::map<std::string, std::string>& weights,
    const std::map<std::string, SafetensorsTensor>& scales) {
  for (const auto& [canonical, hf_name] : weights) {
    TensorView& t = m.tensors_[m.index_.at(canonical)];
    if (t.shape.size() != 2) {
      return unimplemented(m.path_ + ": FP8 tensor '" + hf_name + "' is not a matrix");
    }
    auto s = scales.find(hf_name);
    if (s == scales.end()) {
      return data_loss(m.path_ + ": FP8 weight '" + hf_name + "' has no " +
                       hf_name.substr(0, hf_name.size() - 7) +
                       ".weight_scale or .weight_scale_inv tensor");
    }
    LLMSERVE_ASSIGN_OR_RETURN(
        std::unique_ptr<float[]> grid,
        fp8_scale_grid(s->second, hf_name, t.rows(), t.cols(), config, &t.scales));
    m.fp8_scales_.push_back(std::move(grid));
  }
  return Status::ok();
}

Result<std::unique_ptr<LoadedModel>> LoadedModelBuilder::from_gguf(const std::string& path) {
  std::unique_ptr<LoadedModel> m(new LoadedModel());
  m->source_ = LoadedModel::Source::kGguf;
  m->path_ = path;
  LLMSERVE_ASSIGN_OR_RETURN(m->gguf_, GgufFile::open(path));
  LLMSERVE_ASSIGN_OR_RETURN(m->config_, model_config_from_gguf(*m->gguf_));
  m->tensors_.reserve(m->gguf_->tensors().size());
  for (const GgufTensorInfo& t : m->gguf_->tensors()) {
    TensorView v{t.name, t.type, t.shape(), t.data.data(), t.data.size(), {}};
    LLMSERVE_RETURN_IF_ERROR(m->add_split(std::move(v)));
  }
  LLMSERVE_RETURN_IF_ERROR(m->check_tensors());
  return m;
}

Result<std::unique_ptr<LoadedModel>> LoadedModelBuilder::from_hf_dir(const std::string& dir) {
  std::unique_ptr<LoadedModel> m(new LoadedModel());
  m->source_ = LoadedModel::Source::kSafetensors;
  m->path_ = dir;
  m->tokenizer_dir_ = dir;
  const fs::path root(dir);
  LLMSERVE_ASSIGN_OR_RETURN(std::string cfg_text, read_small_file((root / "config.json").string()));
  auto cfg = model_config_from_hf_json(cfg_text);
  if (!cfg.is_ok()) {
    return Status(cfg.status().code(), dir + "/" + cfg.status().message());
  }
  m->config_ = std::move(cfg).value();
  auto fp8 = read_fp8_checkpoint_config(cfg_text);
  if (!fp8.is_ok()) return Status(fp8.status().code(), dir + "/" + fp8.status().message());

  std::vector<std::string> shards;
  std::map<std::string, std::string> weight_map;
  std::error_code ec;
  const fs::path index = root / "model.safetensors.index.json";
  if (fs::exists(index, ec)) {
    LLMSERVE_RETURN_IF_ERROR(read_index(index.string(), &shards, &weight_map));
  } else {
    shards.push_back("model.safetensors");
  }
  std::set<std::string> seen;
  std::map<std::string, SafetensorsTensor> fp8_scales;  // by the HF name of the weight they scale
  std::map<std::string, std::string> fp8_weights;       // canonical name -> HF name
  for (const std::string& shard : shards) {
    LLMSERVE_ASSIGN_OR_RETURN(auto st, SafetensorsFile::open((root / shard).string()));
    for (const SafetensorsTensor& t : st->tensors()) {
      if (auto it = weight_map.find(t.name); it != weight_map.end() && it->second != shard) {
        continue;  // the index places this tensor in another shard
      }
      seen.insert(t.name);
      if (std::string owner = fp8_scale_owner(t.name); !owner.empty()) {
        fp8_scales.emplace(std::move(owner), t);
        continue;
      }
      if (is_fp8_activation_scale(t.name)) continue;
      std::vector<TensorView> experts;
      const TensorView raw{t.name, t.type, t.shape, t.data.data(), t.data.size(), {}};
      LLMSERVE_ASSIGN_OR_RETURN(const bool moe, hf_moe_tensor_views(t.name, raw, &experts));
      if (moe) {
        if (t.type == DType::F8_E4M3 && experts.size() != 1) {
          return unimplemented(dir + ": FP8 fused expert tensor '" + t.name +
                               "' is not supported (one tensor per expert is)");
        }
        for (TensorView& v : experts) {
          if (t.type == DType::F8_E4M3) fp8_weights.emplace(v.name, t.name);
          LLMSERVE_RETURN_IF_ERROR(m->add_tensor(std::move(v)));
        }
        continue;
      }
      std::string name = canonical_tensor_name(t.name, m->config_.architecture);
      if (name.empty()) continue;  // not used by the graph (e.g. rotary_emb.inv_freq)
      if (name == "output.weight" && m->config_.tie_word_embeddings) continue;
      if (t.type == DType::F8_E4M3) {
        if (m->config_.architecture == "phi3") {
          return unimplemented(dir + ": FP8 weights of phi3's fused tensors (" + t.name +
                               ") are not supported");
        }
        fp8_weights.emplace(name, t.name);
      }
      LLMSERVE_RETURN_IF_ERROR(m->add_split(
          TensorView{std::move(name), t.type, t.shape, t.data.data(), t.data.size(), {}}));
    }
    m->maps_.push_back(st->release_map());
  }
  LLMSERVE_RETURN_IF_ERROR(attach_fp8_scales(*m, fp8.value(), fp8_weights, fp8_scales));
  if (m->config_.architecture == "gemma3") LLMSERVE_RETURN_IF_ERROR(shift_gemma3_norms(*m));
  for (const auto& [name, shard] : weight_map) {
    if (!seen.contains(name)) {
      return data_loss(index.string() + ": tensor '" + name + "' not found in " + shard);
    }
  }
  LLMSERVE_RETURN_IF_ERROR(m->check_tensors());
  return m;
}

Status LoadedModel::add_split(TensorView view) {
  if (config_.architecture == "phi3") {
    LLMSERVE_ASSIGN_OR_RETURN(std::vector<TensorView> parts, split_phi3_tensor(view, config_));
    for (TensorView& p : parts) LLMSERVE_RETURN_IF_ERROR(add_tensor(std::move(p)));
    if (!parts.empty()) return Status::ok();
  }
  return add_tensor(std::move(view));
}

Result<std::unique_ptr<LoadedModel>> load_model(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status))
    return not_found("model path '" + path + "' not found");
  if (std::filesystem::is_directory(status)) return LoadedModelBuilder::from_hf_dir(path);
  return LoadedModelBuilder::from_gguf(path);
}

}  // namespace llmserve
