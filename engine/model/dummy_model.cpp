#include "engine/model/dummy_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

#include "engine/model/model_weights.h"
#include "llmserve/kernels/dequantize.h"

namespace llmserve {
namespace {

constexpr uint64_t kAlign = 32;

struct Preset {
  const char* name;
  int64_t hidden, layers, heads, kv_heads, ffn, vocab, context;
  float theta;
  float llama3_factor;  // 0: no rope scaling
  bool tied;
};

constexpr Preset kPresets[] = {
    {"llama-3.1-8b", 4096, 32, 32, 8, 14336, 128256, 131072, 500000.0f, 8.0f, false},
    {"llama-3.2-1b", 2048, 16, 32, 8, 8192, 128256, 131072, 500000.0f, 32.0f, true},
    {"tiny", 256, 2, 4, 2, 512, 1000, 4096, 10000.0f, 0.0f, false},
};

const Preset* find_preset(std::string_view name) {
  for (const Preset& p : kPresets) {
    if (name == p.name) return &p;
  }
  return nullptr;
}

// Little-endian GGUF v3 serialisation into a byte vector (header only; data is appended after).
class Writer {
 public:
  template <typename T>
  void raw(T v) {
    const auto* p = reinterpret_cast<const unsigned char*>(&v);
    out.insert(out.end(), p, p + sizeof(T));
  }
  void str(std::string_view s) {
    raw<uint64_t>(s.size());
    out.insert(out.end(), s.begin(), s.end());
  }
  void kv_u32(std::string_view k, uint32_t v) { str(k), raw<uint32_t>(4), raw(v); }
  void kv_f32(std::string_view k, float v) { str(k), raw<uint32_t>(6), raw(v); }
  void kv_str(std::string_view k, std::string_view v) { str(k), raw<uint32_t>(8), str(v); }
  std::vector<unsigned char> out;
};

struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;  // PyTorch order
  bool norm;
};

std::vector<TensorSpec> tensor_specs(const Preset& p) {
  const int64_t hd = p.hidden / p.heads, q = p.heads * hd, kv = p.kv_heads * hd;
  std::vector<TensorSpec> t = {{"token_embd.weight", {p.vocab, p.hidden}, false},
                               {"output_norm.weight", {p.hidden}, true}};
  if (!p.tied) t.push_back({"output.weight", {p.vocab, p.hidden}, false});
  for (int64_t i = 0; i < p.layers; ++i) {
    auto b = [i](const char* s) { return block_tensor_name(i, s); };
    t.push_back({b("attn_norm.weight"), {p.hidden}, true});
    t.push_back({b("attn_q.weight"), {q, p.hidden}, false});
    t.push_back({b("attn_k.weight"), {kv, p.hidden}, false});
    t.push_back({b("attn_v.weight"), {kv, p.hidden}, false});
    t.push_back({b("attn_output.weight"), {p.hidden, q}, false});
    t.push_back({b("ffn_norm.weight"), {p.hidden}, true});
    t.push_back({b("ffn_gate.weight"), {p.ffn, p.hidden}, false});
    t.push_back({b("ffn_up.weight"), {p.ffn, p.hidden}, false});
    t.push_back({b("ffn_down.weight"), {p.hidden, p.ffn}, false});
  }
  return t;
}

uint64_t elements(const std::vector<int64_t>& s) {
  uint64_t n = 1;
  for (int64_t d : s) n *= static_cast<uint64_t>(d);
  return n;
}

}  // namespace

std::vector<std::string> dummy_model_presets() {
  std::vector<std::string> v;
  for (const Preset& p : kPresets) v.emplace_back(p.name);
  return v;
}

Result<ModelConfig> dummy_model_config(std::string_view preset) {
  const Preset* p = find_preset(preset);
  if (p == nullptr)
    return invalid_argument("dummy model: unknown preset '" + std::string(preset) + "'");
  ModelConfig c;
  c.architecture = "llama";
  c.hidden_size = p->hidden;
  c.num_layers = p->layers;
  c.num_heads = p->heads;
  c.num_kv_heads = p->kv_heads;
  c.head_dim = p->hidden / p->heads;
  c.ffn_size = p->ffn;
  c.vocab_size = p->vocab;
  c.rms_norm_eps = 1e-5f;
  c.rope_theta = p->theta;
  if (p->llama3_factor > 0) {
    c.rope_scaling.type = RopeScalingType::kLlama3;
    c.rope_scaling.factor = p->llama3_factor;
  }
  c.rope_interleaved = true;  // llama-architecture GGUF
  c.tie_word_embeddings = p->tied;
  c.max_context = p->context;
  return c;
}

Result<std::string> write_dummy_gguf(std::string_view preset, const std::string& dir,
                                     uint64_t seed) {
  const Preset* p = find_preset(preset);
  if (p == nullptr)
    return invalid_argument("dummy model: unknown preset '" + std::string(preset) + "'");
  const std::vector<TensorSpec> specs = tensor_specs(*p);

  Writer w;
  w.out.insert(w.out.end(), {'G', 'G', 'U', 'F'});
  w.raw<uint32_t>(3);
  w.raw<uint64_t>(specs.size());
  const bool scaled = p->llama3_factor > 0;
  w.raw<uint64_t>(scaled ? 14 : 10);
  w.kv_str("general.architecture", "llama");
  w.kv_str("general.name", std::string("dummy ") + p->name);
  w.kv_u32("llama.embedding_length", static_cast<uint32_t>(p->hidden));
  w.kv_u32("llama.block_count", static_cast<uint32_t>(p->layers));
  w.kv_u32("llama.attention.head_count", static_cast<uint32_t>(p->heads));
  w.kv_u32("llama.attention.head_count_kv", static_cast<uint32_t>(p->kv_heads));
  w.kv_u32("llama.feed_forward_length", static_cast<uint32_t>(p->ffn));
  w.kv_u32("llama.context_length", static_cast<uint32_t>(p->context));
  w.kv_f32("llama.rope.freq_base", p->theta);
  w.kv_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  if (scaled) {
    w.kv_str("llama.rope.scaling.type", "llama3");
    w.kv_f32("llama.rope.scaling.factor", p->llama3_factor);
    w.kv_f32("llama.rope.scaling.low_freq_factor", 1.0f);
    w.kv_f32("llama.rope.scaling.high_freq_factor", 4.0f);
  }
  // Data: [ones for norm weights][random pool]; matrices start at staggered pool offsets.
  uint64_t largest = 0;
  for (const TensorSpec& t : specs) largest = std::max(largest, elements(t.shape) * 2);
  const uint64_t ones_bytes = (static_cast<uint64_t>(p->hidden) * 2 + kAlign - 1) / kAlign * kAlign;
  const uint64_t slack = std::min<uint64_t>(largest, 8u << 20);
  for (size_t i = 0; i < specs.size(); ++i) {
    const TensorSpec& t = specs[i];
    w.str(t.name);
    w.raw<uint32_t>(static_cast<uint32_t>(t.shape.size()));
    for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it)
      w.raw<uint64_t>(static_cast<uint64_t>(*it));
    w.raw<uint32_t>(static_cast<uint32_t>(kernels::DType::BF16));
    const uint64_t off = t.norm ? 0 : ones_bytes + (i * 7919 * kAlign) % slack / kAlign * kAlign;
    w.raw<uint64_t>(off);
  }
  while (w.out.size() % kAlign != 0) w.out.push_back(0);

  const std::string path = dir + "/dummy-" + p->name + ".gguf";
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!f) return unavailable("dummy model: cannot write " + path);
  auto put = [&](const void* data, size_t n) -> Status {
    return std::fwrite(data, 1, n, f.get()) == n
               ? Status::ok()
               : unavailable("dummy model: write failed: " + path);
  };
  LLMSERVE_RETURN_IF_ERROR(put(w.out.data(), w.out.size()));
  std::vector<uint16_t> buf(ones_bytes / 2, kernels::fp32_to_bf16(1.0f));
  LLMSERVE_RETURN_IF_ERROR(put(buf.data(), ones_bytes));
  // Uniform in [-a, a] with a = sqrt(3 / hidden): std 1/sqrt(hidden). xorshift64* stream.
  const float a = std::sqrt(3.0f / static_cast<float>(p->hidden));
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
  const uint64_t pool = (largest + slack) / 2;
  buf.assign(1u << 20, 0);
  for (uint64_t done = 0; done < pool;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), pool - done));
    for (size_t i = 0; i < n; ++i) {
      s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
      const uint64_t r = s * 0x2545F4914F6CDD1Dull;
      const float u = static_cast<float>(r >> 40) * (1.0f / 16777216.0f);  // [0, 1)
      buf[i] = kernels::fp32_to_bf16((2.0f * u - 1.0f) * a);
    }
    LLMSERVE_RETURN_IF_ERROR(put(buf.data(), n * 2));
    done += n;
  }
  if (std::fflush(f.get()) != 0) return unavailable("dummy model: write failed: " + path);
  return path;
}

}  // namespace llmserve
