#include "tests/unit/spec/tiny_draft.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "tests/unit/hf_tokenizer_json.h"

namespace llmserve::testing {
namespace {

using nlohmann::json;

constexpr int kHidden = 32, kHeads = 2, kKvHeads = 1, kHeadDim = 16, kFfn = 64, kLayers = 2;

struct Tensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> data;
};

Tensor random_tensor(std::string name, std::vector<int64_t> shape, std::mt19937& rng, float scale) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::normal_distribution<float> dist(0.0f, scale);
  Tensor t{std::move(name), std::move(shape), std::vector<float>(static_cast<size_t>(n))};
  for (float& x : t.data) x = dist(rng);
  return t;
}

Tensor ones(std::string name, int64_t n) {
  return {std::move(name), {n}, std::vector<float>(static_cast<size_t>(n), 1.0f)};
}

void write_safetensors(const std::string& path, const std::vector<Tensor>& tensors) {
  json header = json::object();
  size_t offset = 0;
  for (const Tensor& t : tensors) {
    const size_t bytes = t.data.size() * sizeof(float);
    header[t.name] = {
        {"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string h = header.dump();
  while (h.size() % 8 != 0) h += ' ';
  std::ofstream out(path, std::ios::binary);
  const uint64_t len = h.size();
  out.write(reinterpret_cast<const char*>(&len), 8);
  out.write(h.data(), static_cast<std::streamsize>(h.size()));
  for (const Tensor& t : tensors) {
    out.write(reinterpret_cast<const char*>(t.data.data()),
              static_cast<std::streamsize>(t.data.size() * sizeof(float)));
  }
}

}  // namespace

void write_tiny_draft(const std::string& dir, const TokenizerSpec& spec, int changed_token) {
  std::filesystem::create_directories(dir);
  const auto vocab = static_cast<int64_t>(spec.tokens.size());
  json cfg = {{"architectures", {"LlamaForCausalLM"}},
              {"model_type", "llama"},
              {"hidden_size", kHidden},
              {"intermediate_size", kFfn},
              {"num_hidden_layers", kLayers},
              {"num_attention_heads", kHeads},
              {"num_key_value_heads", kKvHeads},
              {"head_dim", kHeadDim},
              {"max_position_embeddings", 8192},
              {"rms_norm_eps", 1e-5},
              {"rope_theta", 10000.0},
              {"tie_word_embeddings", true},
              {"vocab_size", vocab},
              {"bos_token_id", spec.bos_id},
              {"eos_token_id", spec.eos_id},
              {"torch_dtype", "float32"}};
  std::ofstream(dir + "/config.json") << cfg.dump(2);

  std::mt19937 rng(42);
  std::vector<Tensor> t;
  t.push_back(random_tensor("model.embed_tokens.weight", {vocab, kHidden}, rng, 0.5f));
  for (int l = 0; l < kLayers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    t.push_back(ones(p + "input_layernorm.weight", kHidden));
    t.push_back(ones(p + "post_attention_layernorm.weight", kHidden));
    t.push_back(
        random_tensor(p + "self_attn.q_proj.weight", {kHeads * kHeadDim, kHidden}, rng, 0.2f));
    t.push_back(
        random_tensor(p + "self_attn.k_proj.weight", {kKvHeads * kHeadDim, kHidden}, rng, 0.2f));
    t.push_back(
        random_tensor(p + "self_attn.v_proj.weight", {kKvHeads * kHeadDim, kHidden}, rng, 0.2f));
    t.push_back(
        random_tensor(p + "self_attn.o_proj.weight", {kHidden, kHeads * kHeadDim}, rng, 0.2f));
    t.push_back(random_tensor(p + "mlp.gate_proj.weight", {kFfn, kHidden}, rng, 0.2f));
    t.push_back(random_tensor(p + "mlp.up_proj.weight", {kFfn, kHidden}, rng, 0.2f));
    t.push_back(random_tensor(p + "mlp.down_proj.weight", {kHidden, kFfn}, rng, 0.2f));
  }
  t.push_back(ones("model.norm.weight", kHidden));
  write_safetensors(dir + "/model.safetensors", t);

  write_hf_tokenizer_json(dir, spec, changed_token);
}

}  // namespace llmserve::testing
