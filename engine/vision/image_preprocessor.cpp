#include "engine/vision/image_preprocessor.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace llmserve::vision {
namespace {

using nlohmann::json;

Result<std::string> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return not_found("cannot open " + path);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Status read_triple(const json& j, const char* key, const std::string& origin,
                   std::array<double, 3>& out) {
  if (!j.contains(key)) return Status::ok();
  const json& v = j[key];
  if (v.is_number()) {
    out.fill(v.get<double>());
    return Status::ok();
  }
  if (!v.is_array() || v.size() != 3 || !v[0].is_number() || !v[1].is_number() ||
      !v[2].is_number()) {
    return invalid_argument(origin + ": " + key + " must be a number or 3 numbers");
  }
  for (size_t i = 0; i < 3; ++i) out[i] = v[i].get<double>();
  return Status::ok();
}

}  // namespace

Result<ImagePreprocessor> ImagePreprocessor::from_json(const std::string& text,
                                                       const std::string& origin) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return invalid_argument(origin + ": not a JSON object");
  ImagePreprocessor p;
  auto get_bool = [&](const char* key, bool& out) -> Status {
    if (!j.contains(key) || j[key].is_null()) return Status::ok();
    if (!j[key].is_boolean()) return invalid_argument(origin + ": " + key + " must be a boolean");
    out = j[key].get<bool>();
    return Status::ok();
  };
  LLMSERVE_RETURN_IF_ERROR(get_bool("do_resize", p.do_resize));
  LLMSERVE_RETURN_IF_ERROR(get_bool("do_rescale", p.do_rescale));
  LLMSERVE_RETURN_IF_ERROR(get_bool("do_normalize", p.do_normalize));
  bool pan_and_scan = false;
  LLMSERVE_RETURN_IF_ERROR(get_bool("do_pan_and_scan", pan_and_scan));
  if (pan_and_scan) return unimplemented(origin + ": do_pan_and_scan true is not supported yet");
  if (j.contains("size")) {
    const json& s = j["size"];
    if (!s.is_object() || !s.contains("height") || !s.contains("width") ||
        !s["height"].is_number_integer() || !s["width"].is_number_integer()) {
      return invalid_argument(origin + ": size must be {\"height\": int, \"width\": int}");
    }
    p.height = s["height"].get<int>();
    p.width = s["width"].get<int>();
    if (p.height < 1 || p.width < 1 || p.height > 8192 || p.width > 8192) {
      return invalid_argument(origin + ": size out of range [1, 8192]");
    }
  }
  if (j.contains("resample") && !j["resample"].is_null()) {
    if (!j["resample"].is_number_integer()) {
      return invalid_argument(origin + ": resample must be an integer");
    }
    const int r = j["resample"].get<int>();
    if (r != 1 && r != 2 && r != 3) {
      return unimplemented(origin + ": resample " + std::to_string(r) +
                           " is not supported (1 lanczos, 2 bilinear, 3 bicubic are)");
    }
    p.resample = static_cast<ResampleFilter>(r);
  }
  if (j.contains("rescale_factor")) {
    if (!j["rescale_factor"].is_number()) {
      return invalid_argument(origin + ": rescale_factor must be a number");
    }
    p.rescale_factor = j["rescale_factor"].get<double>();
  }
  LLMSERVE_RETURN_IF_ERROR(read_triple(j, "image_mean", origin, p.mean));
  LLMSERVE_RETURN_IF_ERROR(read_triple(j, "image_std", origin, p.std));
  for (double s : p.std) {
    if (s == 0.0) return invalid_argument(origin + ": image_std has a zero");
  }
  return p;
}

Result<ImagePreprocessor> ImagePreprocessor::from_dir(const std::string& dir) {
  const std::string pre = dir + "/preprocessor_config.json";
  if (auto text = read_file(pre); text.is_ok()) return from_json(*text, pre);
  const std::string proc = dir + "/processor_config.json";
  LLMSERVE_ASSIGN_OR_RETURN(std::string text, read_file(proc));
  json j = json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("image_processor") || !j["image_processor"].is_object()) {
    return not_found(dir + " has no preprocessor_config.json and " + proc +
                     " has no image_processor object");
  }
  return from_json(j["image_processor"].dump(), proc + " image_processor");
}

Result<std::vector<float>> ImagePreprocessor::process(const RgbImage& image) const {
  RgbImage sized;
  const RgbImage* img = &image;
  if (do_resize) {
    sized = resize_image(image, width, height, resample);
    img = &sized;
  } else if (image.width != width || image.height != height) {
    return invalid_argument("image of " + std::to_string(image.width) + " x " +
                            std::to_string(image.height) + " pixels, the model takes " +
                            std::to_string(width) + " x " + std::to_string(height) +
                            " and its processor does not resize");
  }
  const size_t plane = static_cast<size_t>(width) * height;
  std::vector<float> out(3 * plane);
  for (int c = 0; c < 3; ++c) {
    // As the HF processors: x * rescale_factor in double stored as f32, then (x - mean) / std in
    // f32.
    const double scale = do_rescale ? rescale_factor : 1.0;
    const float m = do_normalize ? static_cast<float>(mean[c]) : 0.0f;
    const float s = do_normalize ? static_cast<float>(std[c]) : 1.0f;
    for (size_t i = 0; i < plane; ++i) {
      const float x = static_cast<float>(img->pixels[i * 3 + c] * scale);
      out[c * plane + i] = (x - m) / s;
    }
  }
  return out;
}

}  // namespace llmserve::vision
