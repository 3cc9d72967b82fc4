#include "engine/vision/gemma3_projector.h"

#include <cmath>

#include "llmserve/kernels/matmul.h"

namespace llmserve::vision {

Result<Gemma3Projector> Gemma3Projector::create(const VisionConfig& cfg, const VisionWeights& w) {
  Gemma3Projector p;
  p.cfg_ = cfg;
  const int64_t Hv = cfg.hidden, Ht = cfg.text_hidden;
  LLMSERVE_ASSIGN_OR_RETURN(const SafetensorsTensor* norm, w.projector("mm_soft_emb_norm.weight"));
  LLMSERVE_ASSIGN_OR_RETURN(p.norm_, VisionWeights::to_f32(*norm, Hv));
  for (float& v : p.norm_) v += 1.0f;
  LLMSERVE_ASSIGN_OR_RETURN(const SafetensorsTensor* proj,
                            w.projector("mm_input_projection_weight"));
  if (proj->shape.size() != 2 || proj->shape[0] != Hv || proj->shape[1] != Ht) {
    return data_loss("vision tensor " + proj->name + " does not have the shape [" +
                     std::to_string(Hv) + ", " + std::to_string(Ht) + "] the config implies");
  }
  LLMSERVE_ASSIGN_OR_RETURN(std::vector<float> m, VisionWeights::to_f32(*proj, Hv * Ht));
  p.proj_t_.resize(m.size());
  for (int64_t i = 0; i < Hv; ++i) {
    for (int64_t j = 0; j < Ht; ++j) p.proj_t_[j * Hv + i] = m[i * Ht + j];
  }
  return p;
}

void Gemma3Projector::project(kernels::ThreadPool& pool, const float* vision, float* out) {
  const int64_t Hv = cfg_.hidden, side = cfg_.patches_per_side(), tside = cfg_.tokens_per_side();
  const int64_t k = side / tside, T = tside * tside;
  pooled_.resize(static_cast<size_t>(T * Hv));
  const float eps = cfg_.layer_norm_eps;
  pool.parallel_for(T, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t ty = t / tside, tx = t % tside;
      float* dst = pooled_.data() + t * Hv;
      for (int64_t c = 0; c < Hv; ++c) {
        float sum = 0.0f;
        for (int64_t dy = 0; dy < k; ++dy) {
          for (int64_t dx = 0; dx < k; ++dx) {
            sum += vision[((ty * k + dy) * side + tx * k + dx) * Hv + c];
          }
        }
        dst[c] = sum / static_cast<float>(k * k);
      }
      double ss = 0.0;
      for (int64_t c = 0; c < Hv; ++c) ss += static_cast<double>(dst[c]) * dst[c];
      const float inv = 1.0f / std::sqrt(static_cast<float>(ss / Hv) + eps);
      for (int64_t c = 0; c < Hv; ++c) dst[c] = dst[c] * inv * norm_[static_cast<size_t>(c)];
    }
  });
  kernels::matmul(pool, pooled_.data(), T, Hv, kernels::DType::F32, proj_t_.data(),
                  cfg_.text_hidden, out);
}

}  // namespace llmserve::vision
