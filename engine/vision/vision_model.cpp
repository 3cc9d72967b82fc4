#include "engine/vision/vision_model.h"

namespace llmserve::vision {

Result<std::unique_ptr<VisionModel>> VisionModel::load(const std::string& dir) {
  LLMSERVE_ASSIGN_OR_RETURN(VisionConfig cfg, VisionConfig::from_dir(dir));
  LLMSERVE_ASSIGN_OR_RETURN(ImagePreprocessor pre, ImagePreprocessor::from_dir(dir));
  if (pre.height != cfg.image_size || pre.width != cfg.image_size) {
    return invalid_argument(dir + ": the image processor's size " + std::to_string(pre.width) +
                            " x " + std::to_string(pre.height) +
                            " differs from vision_config.image_size " +
                            std::to_string(cfg.image_size));
  }
  LLMSERVE_ASSIGN_OR_RETURN(VisionWeights w, VisionWeights::open(dir));
  LLMSERVE_ASSIGN_OR_RETURN(SiglipEncoder e, SiglipEncoder::create(cfg, w));
  LLMSERVE_ASSIGN_OR_RETURN(Gemma3Projector p, Gemma3Projector::create(cfg, w));
  return std::unique_ptr<VisionModel>(
      new VisionModel(cfg, pre, std::move(w), std::move(e), std::move(p)));
}

Result<std::unique_ptr<VisionModel>> VisionModel::load_mmproj(const std::string& path,
                                                              const MmprojTokenIds& ids) {
  LLMSERVE_ASSIGN_OR_RETURN(Mmproj m, read_mmproj(path, ids));
  LLMSERVE_ASSIGN_OR_RETURN(SiglipEncoder e, SiglipEncoder::create(m.config, m.weights));
  LLMSERVE_ASSIGN_OR_RETURN(Gemma3Projector p, Gemma3Projector::create(m.config, m.weights));
  return std::unique_ptr<VisionModel>(
      new VisionModel(m.config, m.preprocessor, std::move(m.weights), std::move(e), std::move(p)));
}

std::vector<float> VisionModel::encode_pixels(kernels::ThreadPool& pool, const float* pixels,
                                              std::vector<float>* vision_hidden) {
  hidden_.resize(static_cast<size_t>(cfg_.num_patches() * cfg_.hidden));
  encoder_.encode(pool, pixels, hidden_.data());
  std::vector<float> out(static_cast<size_t>(cfg_.mm_tokens_per_image * cfg_.text_hidden));
  projector_.project(pool, hidden_.data(), out.data());
  if (vision_hidden != nullptr) *vision_hidden = hidden_;
  return out;
}

Result<std::vector<float>> VisionModel::encode_image(kernels::ThreadPool& pool,
                                                     const RgbImage& image) {
  LLMSERVE_ASSIGN_OR_RETURN(std::vector<float> pixels, pre_.process(image));
  return encode_pixels(pool, pixels.data());
}

}  // namespace llmserve::vision
