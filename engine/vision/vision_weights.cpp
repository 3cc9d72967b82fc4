#include "engine/vision/vision_weights.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "llmserve/kernels/dequantize.h"

namespace llmserve::vision {

Result<VisionWeights> VisionWeights::open(const std::string& dir) {
  std::vector<std::string> paths;
  const std::string single = dir + "/model.safetensors";
  if (std::filesystem::exists(single)) {
    paths.push_back(single);
  } else {
    const std::string index = dir + "/model.safetensors.index.json";
    std::ifstream f(index, std::ios::binary);
    if (!f) return not_found(dir + " has no model.safetensors nor " + index);
    std::ostringstream ss;
    ss << f.rdbuf();
    const nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, false);
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object()) {
      return data_loss(index + ": missing object 'weight_map'");
    }
    std::set<std::string> shards;
    for (const auto& [name, file] : j["weight_map"].items()) {
      if (!file.is_string() || file.get<std::string>().find('/') != std::string::npos) {
        return data_loss(index + ": weight_map['" + name + "'] must be a file name");
      }
      shards.insert(file.get<std::string>());
    }
    for (const std::string& s : shards) paths.push_back(dir + "/" + s);
  }
  VisionWeights w;
  for (const std::string& p : paths) {
    LLMSERVE_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsFile> f, SafetensorsFile::open(p));
    w.files_.push_back(std::move(f));
  }
  return w;
}

VisionWeights VisionWeights::from_tensors(std::vector<SafetensorsTensor> tensors,
                                          std::shared_ptr<const void> owner) {
  VisionWeights w;
  w.tensors_ = std::move(tensors);
  w.owner_ = std::move(owner);
  return w;
}

Result<const SafetensorsTensor*> VisionWeights::find(
    std::string_view name, std::initializer_list<std::string_view> prefixes) const {
  for (std::string_view prefix : prefixes) {
    std::string full(prefix);
    full += name;
    for (const auto& f : files_) {
      for (const SafetensorsTensor& t : f->tensors()) {
        if (t.name == full) return &t;
      }
    }
    for (const SafetensorsTensor& t : tensors_) {
      if (t.name == full) return &t;
    }
  }
  return not_found("vision model has no tensor " + std::string(*prefixes.begin()) +
                   std::string(name));
}

Result<const SafetensorsTensor*> VisionWeights::tower(std::string_view name) const {
  return find(name, {"vision_tower.vision_model.", "model.vision_tower.vision_model.",
                     "vision_tower.", "model.vision_tower."});
}

Result<const SafetensorsTensor*> VisionWeights::projector(std::string_view name) const {
  return find(name, {"multi_modal_projector.", "model.multi_modal_projector."});
}

Result<std::vector<float>> VisionWeights::to_f32(const SafetensorsTensor& t, int64_t expect) {
  int64_t n = 1;
  for (int64_t d : t.shape) n *= d;
  if (n != expect) {
    return data_loss("tensor " + t.name + " has " + std::to_string(n) + " elements, expected " +
                     std::to_string(expect));
  }
  if (!kernels::dtype_can_dequantize(t.type)) {
    return unimplemented("tensor " + t.name + ": element type not supported for vision weights");
  }
  std::vector<float> out(static_cast<size_t>(n));
  kernels::dequantize_row(t.type, t.data.data(), out.data(), n);
  return out;
}

}  // namespace llmserve::vision
