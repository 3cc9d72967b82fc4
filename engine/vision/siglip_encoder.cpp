#include "engine/vision/siglip_encoder.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "llmserve/kernels/encoder.h"
#include "llmserve/kernels/matmul.h"

namespace llmserve::vision {
namespace {

// A matrix of `rows` x `cols` (any trailing shape flattened), viewed in its stored type.
Result<Linear> matrix(const VisionWeights& w, const std::string& name, int64_t rows, int64_t cols) {
  LLMSERVE_ASSIGN_OR_RETURN(const SafetensorsTensor* t, w.tower(name));
  int64_t n = 1;
  for (int64_t d : t->shape) n *= d;
  if (t->shape.empty() || t->shape[0] != rows || n != rows * cols) {
    return data_loss("vision tensor " + t->name + " does not have the shape [" +
                     std::to_string(rows) + ", " + std::to_string(cols) + "] the config implies");
  }
  if (!kernels::matmul_supports(t->type) ||
      kernels::dtype_info(static_cast<uint32_t>(t->type))->block_elems != 1) {
    return unimplemented("vision tensor " + t->name + ": element type not supported");
  }
  Linear l;
  l.type = t->type;
  l.weight = t->data.data();
  l.out = rows;
  l.in = cols;
  pack_linear(l);
  return l;
}

Result<std::vector<float>> vec(const VisionWeights& w, const std::string& name, int64_t n) {
  LLMSERVE_ASSIGN_OR_RETURN(const SafetensorsTensor* t, w.tower(name));
  return VisionWeights::to_f32(*t, n);
}

Result<Linear> linear_with_bias(const VisionWeights& w, const std::string& prefix, int64_t out,
                                int64_t in) {
  LLMSERVE_ASSIGN_OR_RETURN(Linear l, matrix(w, prefix + ".weight", out, in));
  LLMSERVE_ASSIGN_OR_RETURN(l.bias, vec(w, prefix + ".bias", out));
  return l;
}

}  // namespace

Result<SiglipEncoder> SiglipEncoder::create(const VisionConfig& cfg, const VisionWeights& w) {
  SiglipEncoder e;
  e.cfg_ = cfg;
  const int64_t H = cfg.hidden, F = cfg.intermediate, P = cfg.patch_size;
  LLMSERVE_ASSIGN_OR_RETURN(e.patch_,
                            linear_with_bias(w, "embeddings.patch_embedding", H, 3 * P * P));
  LLMSERVE_ASSIGN_OR_RETURN(e.position_,
                            vec(w, "embeddings.position_embedding.weight", cfg.num_patches() * H));
  for (int64_t l = 0; l < cfg.num_layers; ++l) {
    const std::string p = "encoder.layers." + std::to_string(l) + ".";
    Layer L;
    LLMSERVE_ASSIGN_OR_RETURN(L.ln1_w, vec(w, p + "layer_norm1.weight", H));
    LLMSERVE_ASSIGN_OR_RETURN(L.ln1_b, vec(w, p + "layer_norm1.bias", H));
    LLMSERVE_ASSIGN_OR_RETURN(L.ln2_w, vec(w, p + "layer_norm2.weight", H));
    LLMSERVE_ASSIGN_OR_RETURN(L.ln2_b, vec(w, p + "layer_norm2.bias", H));
    LLMSERVE_ASSIGN_OR_RETURN(L.q, linear_with_bias(w, p + "self_attn.q_proj", H, H));
    LLMSERVE_ASSIGN_OR_RETURN(L.k, linear_with_bias(w, p + "self_attn.k_proj", H, H));
    LLMSERVE_ASSIGN_OR_RETURN(L.v, linear_with_bias(w, p + "self_attn.v_proj", H, H));
    LLMSERVE_ASSIGN_OR_RETURN(L.o, linear_with_bias(w, p + "self_attn.out_proj", H, H));
    LLMSERVE_ASSIGN_OR_RETURN(L.fc1, linear_with_bias(w, p + "mlp.fc1", F, H));
    LLMSERVE_ASSIGN_OR_RETURN(L.fc2, linear_with_bias(w, p + "mlp.fc2", H, F));
    e.layers_.push_back(std::move(L));
  }
  LLMSERVE_ASSIGN_OR_RETURN(e.post_w_, vec(w, "post_layernorm.weight", H));
  LLMSERVE_ASSIGN_OR_RETURN(e.post_b_, vec(w, "post_layernorm.bias", H));
  return e;
}

void SiglipEncoder::encode(kernels::ThreadPool& pool, const float* pixels, float* out) {
  const int64_t H = cfg_.hidden, F = cfg_.intermediate, P = cfg_.patch_size;
  const int64_t side = cfg_.patches_per_side(), N = cfg_.num_patches(), S = cfg_.image_size;
  const int64_t K = 3 * P * P;
  patches_.resize(static_cast<size_t>(N * K));
  h_.resize(static_cast<size_t>(N * H));
  q_.resize(h_.size());
  k_.resize(h_.size());
  v_.resize(h_.size());
  attn_.resize(h_.size());
  mlp_.resize(static_cast<size_t>(N * F));
  // Patch p = (py, px) flattened as the conv weight is: (channel, ky, kx).
  pool.parallel_for(N, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const int64_t py = p / side, px = p % side;
      float* dst = patches_.data() + p * K;
      for (int64_t c = 0; c < 3; ++c) {
        for (int64_t ky = 0; ky < P; ++ky) {
          const float* src = pixels + (c * S + py * P + ky) * S + px * P;
          std::copy_n(src, P, dst + (c * P + ky) * P);
        }
      }
    }
  });
  float* x = out;  // the residual stream lives in the output
  linear(pool, patches_.data(), N, patch_, x);
  pool.parallel_for(N, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin * H; i < end * H; ++i) x[i] += position_[static_cast<size_t>(i)];
  });
  const float scale = 1.0f / std::sqrt(static_cast<float>(cfg_.head_dim()));
  for (const Layer& L : layers_) {
    kernels::layer_norm(pool, x, L.ln1_w.data(), L.ln1_b.data(), N, H, cfg_.layer_norm_eps,
                        h_.data());
    const Linear* qkv[] = {&L.q, &L.k, &L.v};
    float* qkv_out[] = {q_.data(), k_.data(), v_.data()};
    linears(pool, h_.data(), N, qkv, qkv_out);
    full_attention(pool, q_.data(), k_.data(), v_.data(), N, cfg_.num_heads, cfg_.head_dim(), scale,
                   attn_.data());
    linear(pool, attn_.data(), N, L.o, h_.data());
    pool.parallel_for(N, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin * H; i < end * H; ++i) x[i] += h_[static_cast<size_t>(i)];
    });
    kernels::layer_norm(pool, x, L.ln2_w.data(), L.ln2_b.data(), N, H, cfg_.layer_norm_eps,
                        h_.data());
    linear(pool, h_.data(), N, L.fc1, mlp_.data());
    gelu_tanh(pool, mlp_.data(), N * F);
    linear(pool, mlp_.data(), N, L.fc2, h_.data());
    pool.parallel_for(N, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin * H; i < end * H; ++i) x[i] += h_[static_cast<size_t>(i)];
    });
  }
  kernels::layer_norm(pool, x, post_w_.data(), post_b_.data(), N, H, cfg_.layer_norm_eps, x);
}

}  // namespace llmserve::vision
