// Images -> the text model's input embeddings for a serving engine: the checkpoint's VisionModel
// (processor, SigLIP tower, projector) on its own CPU thread pool, behind the EncoderCache. The
// front end's request threads call it before submitting (decoding and encoding never run on
// the engine's step loop); one image is encoded at a time. Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "engine/core/status.h"
#include "engine/vision/encoder_cache.h"
#include "engine/vision/image_decoder.h"
#include "engine/vision/vision_model.h"
#include "llmserve/kernels/thread_pool.h"

namespace llmserve::vision {

struct ImageEncoderOptions {
  int threads = 1;                     // the encoder's CPU threads
  uint64_t cache_bytes = 64ull << 20;  // EncoderCache budget
};

struct ImageEncoderStats {
  EncoderCacheStats cache;
  uint64_t encoded = 0;       // images run through the tower
  double encode_seconds = 0;  // their wall time
};

class ImageEncoder {
 public:
  // Loads the vision tower of the HF folder `dir` and encodes one blank image, so every scratch
  // buffer of the tower is allocated here (scratch_bytes()) and not while serving.
  static Result<std::unique_ptr<ImageEncoder>> create(const std::string& dir,
                                                      const ImageEncoderOptions& options);

  const VisionConfig& config() const { return model_->config(); }
  // Rows per image (mm_tokens_per_image) x text hidden floats per row.
  int64_t tokens_per_image() const { return config().mm_tokens_per_image; }

  // The projected features [tokens_per_image, text_hidden] of a decoded image whose
  // image_content_hash is `content_hash`: from the cache, or encoded now and cached.
  Result<ImageFeatures> features(const RgbImage& image, uint64_t content_hash);

  // Bytes of the tower's working memory (activations, attention scores), allocated at create.
  uint64_t scratch_bytes() const { return scratch_bytes_; }
  ImageEncoderStats stats() const;

 private:
  ImageEncoder(std::unique_ptr<VisionModel> model, const ImageEncoderOptions& options)
      : model_(std::move(model)), pool_(options.threads), cache_(options.cache_bytes) {}

  std::unique_ptr<VisionModel> model_;
  kernels::ThreadPool pool_;
  EncoderCache cache_;
  std::mutex encode_mu_;  // one image through the tower at a time (its scratch is shared)
  mutable std::mutex stats_mu_;
  uint64_t encoded_ = 0;
  double encode_seconds_ = 0;
  uint64_t scratch_bytes_ = 0;
};

// True when the HF folder `path` is a checkpoint with a vision tower (config.json has
// vision_config); false for a file (GGUF) or a text-only folder.
bool has_vision_tower(const std::string& path);

}  // namespace llmserve::vision
