#include "engine/vision/mmproj_gguf.h"

#include <memory>
#include <utility>
#include <vector>

#include "engine/model/gguf_file.h"
#include "llmserve/kernels/dequantize.h"

namespace llmserve::vision {
namespace {

constexpr const char* kTower = "vision_tower.vision_model.";
constexpr const char* kProjector = "multi_modal_projector.";

// The mapped file and the one tensor converted at load, kept alive by the weights.
struct MmprojOwner {
  std::unique_ptr<GgufFile> file;
  std::vector<float> soft_emb_norm;
};

Result<int64_t> positive(const GgufFile& f, const std::string& path, const char* key) {
  const std::optional<uint64_t> v = f.get_u64(key);
  if (!v || *v == 0 || *v > (uint64_t{1} << 20)) {  // keeps every shape product in int64
    return invalid_argument(path + ": mmproj key " + key +
                            " is missing or not a count in [1, 2^20]");
  }
  return static_cast<int64_t>(*v);
}

Status read_triple(const GgufFile& f, const std::string& path, const char* key,
                   std::array<double, 3>& out) {
  if (f.find(key) == nullptr) return Status::ok();
  const std::optional<std::vector<float>> v = f.get_f32_array(key);
  if (!v || v->size() != 3) return invalid_argument(path + ": " + key + " must hold 3 numbers");
  for (size_t i = 0; i < 3; ++i) out[i] = (*v)[i];
  return Status::ok();
}

Result<VisionConfig> read_config(const GgufFile& f, const std::string& path,
                                 const MmprojTokenIds& ids) {
  const auto arch = f.get_string("general.architecture");
  if (!arch || *arch != "clip") {
    return invalid_argument(path + ": general.architecture is not 'clip' (not an mmproj file)");
  }
  if (!f.get_bool("clip.has_vision_encoder").value_or(false)) {
    return invalid_argument(path + ": clip.has_vision_encoder is not true");
  }
  auto projector = f.get_string("clip.vision.projector_type");
  if (!projector) projector = f.get_string("clip.projector_type");
  if (!projector || *projector != "gemma3") {
    return unimplemented(path + ": clip.projector_type '" + std::string(projector.value_or("")) +
                         "' is not supported (gemma3 is)");
  }
  VisionConfig c;
  LLMSERVE_ASSIGN_OR_RETURN(c.hidden, positive(f, path, "clip.vision.embedding_length"));
  LLMSERVE_ASSIGN_OR_RETURN(c.intermediate, positive(f, path, "clip.vision.feed_forward_length"));
  LLMSERVE_ASSIGN_OR_RETURN(c.num_layers, positive(f, path, "clip.vision.block_count"));
  LLMSERVE_ASSIGN_OR_RETURN(c.num_heads, positive(f, path, "clip.vision.attention.head_count"));
  LLMSERVE_ASSIGN_OR_RETURN(c.image_size, positive(f, path, "clip.vision.image_size"));
  LLMSERVE_ASSIGN_OR_RETURN(c.patch_size, positive(f, path, "clip.vision.patch_size"));
  LLMSERVE_ASSIGN_OR_RETURN(c.text_hidden, positive(f, path, "clip.vision.projection_dim"));
  c.layer_norm_eps = f.get_f32("clip.vision.attention.layer_norm_epsilon").value_or(1e-6f);
  if (!f.get_bool("clip.use_gelu").value_or(true)) {
    return unimplemented(path + ": clip.use_gelu false is not supported (SigLIP's tanh GELU is)");
  }
  if (c.image_size % c.patch_size != 0) {
    return invalid_argument(path + ": clip.vision.image_size is not a multiple of patch_size");
  }
  if (c.hidden % c.num_heads != 0) {
    return invalid_argument(path +
                            ": clip.vision.embedding_length is not a multiple of the head count");
  }
  int64_t scale = 4;  // llama.cpp's default for Gemma 3 (896 px / 14 -> 64 per side -> 16)
  if (f.find("clip.vision.projector.scale_factor") != nullptr) {
    LLMSERVE_ASSIGN_OR_RETURN(scale, positive(f, path, "clip.vision.projector.scale_factor"));
  }
  if (c.patches_per_side() % scale != 0) {
    return invalid_argument(path + ": clip.vision.projector.scale_factor " + std::to_string(scale) +
                            " does not divide the patches per side " +
                            std::to_string(c.patches_per_side()));
  }
  const int64_t side = c.patches_per_side() / scale;
  c.mm_tokens_per_image = side * side;
  c.image_token_id = ids.image_token_id;
  c.boi_token_id = ids.boi_token_id;
  c.eoi_token_id = ids.eoi_token_id;
  return c;
}

// The GGUF tensor under its HF name, shape in PyTorch order, checked against `shape`.
Result<SafetensorsTensor> view(const GgufFile& f, const std::string& path, const std::string& gguf,
                               std::string hf, const std::vector<int64_t>& shape) {
  const GgufTensorInfo* t = f.find_tensor(gguf);
  if (t == nullptr) return not_found(path + ": mmproj has no tensor " + gguf);
  SafetensorsTensor s;
  s.name = std::move(hf);
  s.type = t->type;
  s.shape = t->shape();
  s.data = t->data;
  int64_t want = 1, have = 1;
  for (int64_t d : shape) want *= d;
  for (int64_t d : s.shape) have *= d;
  if (want != have || s.shape.empty() || s.shape[0] != shape[0]) {
    return data_loss(path + ": mmproj tensor " + gguf +
                     " does not have the shape the clip.* keys imply");
  }
  return s;
}

}  // namespace

Result<Mmproj> read_mmproj(const std::string& path, const MmprojTokenIds& ids) {
  auto owner = std::make_shared<MmprojOwner>();
  LLMSERVE_ASSIGN_OR_RETURN(owner->file, GgufFile::open(path));
  const GgufFile& f = *owner->file;
  LLMSERVE_ASSIGN_OR_RETURN(VisionConfig c, read_config(f, path, ids));

  ImagePreprocessor pre;
  pre.height = pre.width = static_cast<int>(c.image_size);
  pre.resample = ResampleFilter::kBilinear;  // Gemma3ImageProcessor's resample (2)
  LLMSERVE_RETURN_IF_ERROR(read_triple(f, path, "clip.vision.image_mean", pre.mean));
  LLMSERVE_RETURN_IF_ERROR(read_triple(f, path, "clip.vision.image_std", pre.std));
  for (double s : pre.std) {
    if (s == 0) return invalid_argument(path + ": clip.vision.image_std has a zero");
  }

  const int64_t H = c.hidden, F = c.intermediate, P = c.patch_size, T = c.text_hidden;
  std::vector<SafetensorsTensor> out;
  auto add = [&](const std::string& gguf, const std::string& hf,
                 const std::vector<int64_t>& shape) -> Status {
    LLMSERVE_ASSIGN_OR_RETURN(SafetensorsTensor t, view(f, path, gguf, hf, shape));
    out.push_back(std::move(t));
    return Status::ok();
  };
  const std::string tw = kTower;
  LLMSERVE_RETURN_IF_ERROR(
      add("v.patch_embd.weight", tw + "embeddings.patch_embedding.weight", {H, 3, P, P}));
  LLMSERVE_RETURN_IF_ERROR(add("v.patch_embd.bias", tw + "embeddings.patch_embedding.bias", {H}));
  LLMSERVE_RETURN_IF_ERROR(add("v.position_embd.weight",
                               tw + "embeddings.position_embedding.weight", {c.num_patches(), H}));
  struct Pair {
    const char* gguf;
    const char* hf;
    int64_t rows, cols;  // cols 0: a vector
  };
  const Pair per_layer[] = {
      {"ln1", "layer_norm1", H, 0},         {"ln2", "layer_norm2", H, 0},
      {"attn_q", "self_attn.q_proj", H, H}, {"attn_k", "self_attn.k_proj", H, H},
      {"attn_v", "self_attn.v_proj", H, H}, {"attn_out", "self_attn.out_proj", H, H},
      {"ffn_up", "mlp.fc1", F, H},          {"ffn_down", "mlp.fc2", H, F},
  };
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string g = "v.blk." + std::to_string(l) + ".";
    const std::string h = tw + "encoder.layers." + std::to_string(l) + ".";
    for (const Pair& p : per_layer) {
      const std::vector<int64_t> w =
          p.cols == 0 ? std::vector<int64_t>{p.rows} : std::vector<int64_t>{p.rows, p.cols};
      LLMSERVE_RETURN_IF_ERROR(add(g + p.gguf + ".weight", h + p.hf + ".weight", w));
      LLMSERVE_RETURN_IF_ERROR(add(g + p.gguf + ".bias", h + p.hf + ".bias", {p.rows}));
    }
  }
  LLMSERVE_RETURN_IF_ERROR(add("v.post_ln.weight", tw + "post_layernorm.weight", {H}));
  LLMSERVE_RETURN_IF_ERROR(add("v.post_ln.bias", tw + "post_layernorm.bias", {H}));
  LLMSERVE_RETURN_IF_ERROR(add("mm.input_projection.weight",
                               std::string(kProjector) + "mm_input_projection_weight", {H, T}));

  // The converter stores Gemma3RMSNorm's 1 + w; the projector applies (1 + w) itself.
  LLMSERVE_ASSIGN_OR_RETURN(SafetensorsTensor norm,
                            view(f, path, "mm.soft_emb_norm.weight",
                                 std::string(kProjector) + "mm_soft_emb_norm.weight", {H}));
  LLMSERVE_ASSIGN_OR_RETURN(std::vector<float> w, VisionWeights::to_f32(norm, H));
  for (float& x : w) x -= 1.0f;
  owner->soft_emb_norm = std::move(w);
  norm.type = kernels::DType::F32;
  norm.shape = {H};
  norm.data = std::as_bytes(std::span<const float>(owner->soft_emb_norm));
  out.push_back(std::move(norm));

  return Mmproj{c, pre, VisionWeights::from_tensors(std::move(out), std::move(owner))};
}

}  // namespace llmserve::vision
