#include "engine/vision/image_encoder.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace llmserve::vision {

Result<std::unique_ptr<ImageEncoder>> ImageEncoder::create(const std::string& dir,
                                                           const ImageEncoderOptions& options) {
  if (options.threads < 1) return invalid_argument("image encoder: threads must be >= 1");
  LLMSERVE_ASSIGN_OR_RETURN(std::unique_ptr<VisionModel> model, VisionModel::load(dir));
  std::unique_ptr<ImageEncoder> enc(new ImageEncoder(std::move(model), options));
  // A mid-grey image of the tower's size: every scratch buffer reaches its size now.
  const VisionConfig& cfg = enc->config();
  RgbImage grey;
  grey.width = grey.height = static_cast<int>(cfg.image_size);
  grey.pixels.assign(static_cast<size_t>(cfg.image_size * cfg.image_size * 3), 128);
  LLMSERVE_ASSIGN_OR_RETURN(std::vector<float> f, enc->model_->encode_image(enc->pool_, grey));
  if (static_cast<int64_t>(f.size()) != cfg.mm_tokens_per_image * cfg.text_hidden) {
    return internal_error("image encoder: the warm-up image gave " + std::to_string(f.size()) +
                          " floats");
  }
  enc->scratch_bytes_ = enc->model_->scratch_bytes();
  return enc;
}

Result<ImageFeatures> ImageEncoder::features(const RgbImage& image, uint64_t content_hash) {
  if (ImageFeatures hit = cache_.get(content_hash)) return hit;
  std::lock_guard<std::mutex> lock(encode_mu_);
  // Another thread may have encoded the same image while this one waited.
  if (ImageFeatures hit = cache_.get(content_hash)) return hit;
  const auto t0 = std::chrono::steady_clock::now();
  LLMSERVE_ASSIGN_OR_RETURN(std::vector<float> f, model_->encode_image(pool_, image));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto out = std::make_shared<const std::vector<float>>(std::move(f));
  cache_.put(content_hash, out);
  std::lock_guard<std::mutex> stats_lock(stats_mu_);
  ++encoded_;
  encode_seconds_ += s;
  return ImageFeatures(out);
}

ImageEncoderStats ImageEncoder::stats() const {
  ImageEncoderStats s;
  s.cache = cache_.stats();
  std::lock_guard<std::mutex> lock(stats_mu_);
  s.encoded = encoded_;
  s.encode_seconds = encode_seconds_;
  return s;
}

bool has_vision_tower(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) return false;
  std::ifstream f(path + "/config.json", std::ios::binary);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  const nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, false);
  return j.is_object() && j.contains("vision_config") && j["vision_config"].is_object();
}

}  // namespace llmserve::vision
