#include "engine/vision/vision_config.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace llmserve::vision {
namespace {

using nlohmann::json;

Status get_int(const json& j, const char* key, const std::string& where, int64_t& out) {
  if (!j.contains(key) || j[key].is_null()) return Status::ok();
  if (!j[key].is_number_integer())
    return invalid_argument(where + "." + key + " must be an integer");
  out = j[key].get<int64_t>();
  if (out <= 0) return invalid_argument(where + "." + key + " must be positive");
  return Status::ok();
}

}  // namespace

int64_t VisionConfig::tokens_per_side() const {
  return static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(mm_tokens_per_image))));
}

Result<VisionConfig> VisionConfig::from_json(const std::string& text, const std::string& origin) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return invalid_argument(origin + ": not a JSON object");
  const std::string type = j.value("model_type", std::string());
  if (type != "gemma3") {
    return unimplemented(origin + ": model_type '" + type + "' has no vision support (gemma3 has)");
  }
  if (!j.contains("vision_config") || !j["vision_config"].is_object()) {
    return invalid_argument(origin + ": no vision_config object");
  }
  const json& v = j["vision_config"];
  const std::string vw = origin + ": vision_config";
  VisionConfig c;
  LLMSERVE_RETURN_IF_ERROR(get_int(v, "hidden_size", vw, c.hidden));
  LLMSERVE_RETURN_IF_ERROR(get_int(v, "intermediate_size", vw, c.intermediate));
  LLMSERVE_RETURN_IF_ERROR(get_int(v, "num_hidden_layers", vw, c.num_layers));
  LLMSERVE_RETURN_IF_ERROR(get_int(v, "num_attention_heads", vw, c.num_heads));
  LLMSERVE_RETURN_IF_ERROR(get_int(v, "image_size", vw, c.image_size));
  LLMSERVE_RETURN_IF_ERROR(get_int(v, "patch_size", vw, c.patch_size));
  LLMSERVE_RETURN_IF_ERROR(get_int(v, "num_channels", vw, c.num_channels));
  if (v.contains("layer_norm_eps") && v["layer_norm_eps"].is_number()) {
    c.layer_norm_eps = v["layer_norm_eps"].get<float>();
  }
  const std::string act = v.value("hidden_act", std::string("gelu_pytorch_tanh"));
  if (act != "gelu_pytorch_tanh") {
    return unimplemented(vw + ".hidden_act '" + act + "' is not supported (gelu_pytorch_tanh is)");
  }
  if (v.value("vision_use_head", false)) {
    return unimplemented(vw + ".vision_use_head true is not supported");
  }
  if (c.num_channels != 3) return unimplemented(vw + ".num_channels must be 3");
  if (c.image_size % c.patch_size != 0) {
    return invalid_argument(vw + ".image_size is not a multiple of patch_size");
  }
  if (c.hidden % c.num_heads != 0) {
    return invalid_argument(vw + ".hidden_size is not a multiple of num_attention_heads");
  }
  const std::string w = origin;
  LLMSERVE_RETURN_IF_ERROR(get_int(j, "mm_tokens_per_image", w, c.mm_tokens_per_image));
  const int64_t side = c.tokens_per_side();
  if (side * side != c.mm_tokens_per_image || c.patches_per_side() % side != 0) {
    return invalid_argument(origin + ": mm_tokens_per_image " +
                            std::to_string(c.mm_tokens_per_image) +
                            " is not a square whose side divides the patches per side " +
                            std::to_string(c.patches_per_side()));
  }
  int64_t id = c.image_token_id;
  LLMSERVE_RETURN_IF_ERROR(get_int(j, "image_token_index", w, id));
  c.image_token_id = static_cast<int32_t>(id);
  id = c.boi_token_id;
  LLMSERVE_RETURN_IF_ERROR(get_int(j, "boi_token_index", w, id));
  c.boi_token_id = static_cast<int32_t>(id);
  id = c.eoi_token_id;
  LLMSERVE_RETURN_IF_ERROR(get_int(j, "eoi_token_index", w, id));
  c.eoi_token_id = static_cast<int32_t>(id);
  if (!j.contains("text_config") || !j["text_config"].is_object()) {
    return invalid_argument(origin + ": no text_config object");
  }
  LLMSERVE_RETURN_IF_ERROR(
      get_int(j["text_config"], "hidden_size", origin + ": text_config", c.text_hidden));
  if (c.text_hidden <= 0) return invalid_argument(origin + ": text_config.hidden_size missing");
  return c;
}

Result<VisionConfig> VisionConfig::from_dir(const std::string& dir) {
  const std::string path = dir + "/config.json";
  std::ifstream f(path, std::ios::binary);
  if (!f) return not_found("cannot open " + path);
  std::ostringstream ss;
  ss << f.rdbuf();
  return from_json(ss.str(), path);
}

}  // namespace llmserve::vision
