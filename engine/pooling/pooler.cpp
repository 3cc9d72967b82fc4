#include "engine/pooling/pooler.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "engine/model/bert_config.h"
#include "llmserve/kernels/dequantize.h"

namespace llmserve {
namespace {

std::vector<float> dense_forward(const DenseLayer& d, const std::vector<float>& x) {
  std::vector<float> y(static_cast<size_t>(d.out_features));
  for (int64_t o = 0; o < d.out_features; ++o) {
    const float* w = d.weight.data() + o * d.in_features;
    double acc = d.bias.empty() ? 0.0 : d.bias[static_cast<size_t>(o)];
    for (int64_t i = 0; i < d.in_features; ++i) acc += double{w[i]} * x[static_cast<size_t>(i)];
    const auto v = static_cast<float>(acc);
    y[static_cast<size_t>(o)] = d.activation == DenseActivation::kTanh ? std::tanh(v) : v;
  }
  return y;
}

}  // namespace

Result<std::unique_ptr<Pooler>> Pooler::create(const LoadedModel& model, PoolingConfig config) {
  const ModelConfig& cfg = model.config();
  if (!config.dense.empty() && config.dense.front().in_features != cfg.hidden_size) {
    return invalid_argument("pooling: the first Dense layer does not take the hidden size");
  }
  if (is_encoder_only(cfg)) {  // the encoder's rows come after its last LayerNorm already
    return std::unique_ptr<Pooler>(
        new Pooler(std::move(config), cfg.hidden_size, cfg.rms_norm_eps, {}));
  }
  const TensorView* norm = model.tensor("output_norm.weight");
  if (norm == nullptr || norm->num_elements() != cfg.hidden_size ||
      !kernels::dtype_can_dequantize(norm->type)) {
    return invalid_argument("pooling: the model has no usable output_norm.weight");
  }
  if (config.rank && (config.rank->yes.size() != static_cast<size_t>(cfg.hidden_size) ||
                      config.rank->no.size() != static_cast<size_t>(cfg.hidden_size))) {
    return invalid_argument("pooling: the reranker's yes / no rows are not of the hidden size");
  }
  if (!config.dense.empty() && config.dense.front().in_features != cfg.hidden_size) {
    return invalid_argument("pooling: the first Dense layer does not take the hidden size");
  }
  std::vector<float> w(static_cast<size_t>(cfg.hidden_size));
  kernels::dequantize_row(norm->type, norm->data, w.data(), cfg.hidden_size);
  return std::unique_ptr<Pooler>(
      new Pooler(std::move(config), cfg.hidden_size, cfg.rms_norm_eps, std::move(w)));
}

Status Pooler::check_dimensions(int32_t dimensions) const {
  if (dimensions < 0 || dimensions > width()) {
    return invalid_argument("dimensions must be between 1 and " + std::to_string(width()) +
                            " for this model; got " + std::to_string(dimensions));
  }
  return Status::ok();
}

void Pooler::final_norm(std::span<float> row) const {
  if (norm_.empty()) return;  // an encoder: no final norm
  double ss = 0;
  for (float v : row) ss += double{v} * v;
  const float inv =
      1.0f / std::sqrt(static_cast<float>(ss / static_cast<double>(row.size())) + eps_);
  for (size_t i = 0; i < row.size(); ++i) row[i] = row[i] * inv * norm_[i];
}

float Pooler::rank_score(const std::vector<float>& x) const {
  double yes = 0, no = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    yes += double{config_.rank->yes[i]} * x[i];
    no += double{config_.rank->no[i]} * x[i];
  }
  // softmax([yes, no])[0], the model card's exp(log_softmax([no, yes])[1]).
  return static_cast<float>(1.0 / (1.0 + std::exp(no - yes)));
}

std::vector<float> Pooler::pool(std::span<const float> rows, int64_t n, int32_t dimensions) const {
  const auto H = static_cast<size_t>(hidden_);
  std::vector<float> x(H), row(H);
  auto normed = [&](int64_t r) {
    std::copy_n(rows.data() + static_cast<size_t>(r) * H, H, row.begin());
    final_norm(row);
  };
  switch (config_.type) {
    case PoolingType::kLast:
      normed(n - 1);
      x = row;
      break;
    case PoolingType::kCls:
      normed(0);
      x = row;
      break;
    case PoolingType::kMean: {
      std::vector<double> sum(H, 0.0);
      for (int64_t r = 0; r < n; ++r) {  // position order: the same sum in every batch
        normed(r);
        for (size_t i = 0; i < H; ++i) sum[i] += row[i];
      }
      for (size_t i = 0; i < H; ++i) x[i] = static_cast<float>(sum[i] / static_cast<double>(n));
      break;
    }
  }
  if (config_.rank) return {rank_score(x)};
  for (const DenseLayer& d : config_.dense) x = dense_forward(d, x);
  if (dimensions > 0 && static_cast<size_t>(dimensions) < x.size()) {
    x.resize(static_cast<size_t>(dimensions));
  }
  if (config_.normalize) {
    double ss = 0;
    for (float v : x) ss += double{v} * v;
    // sentence-transformers' Normalize: x / max(||x||, 1e-12).
    const double norm = std::max(std::sqrt(ss), 1e-12);
    for (float& v : x) v = static_cast<float>(v / norm);
  }
  return x;
}

}  // namespace llmserve
