// Builds GGUF files in memory for tests: metadata of any type, tensors with caller-given bytes,
// and a tiny random Llama model. Header-only; reuse it from tokenizer / graph tests:
//   auto bytes = llmserve::testing::GgufBuilder().add_string("general.architecture", "llama")
//                    .add_f32_tensor("x", {4}, {1, 2, 3, 4}).build();
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "llmserve/kernels/dtype.h"

namespace llmserve::testing {

class GgufBuilder {
 public:
  enum Type : uint32_t {
    kU8 = 0,
    kI8 = 1,
    kU16 = 2,
    kI16 = 3,
    kU32 = 4,
    kI32 = 5,
    kF32 = 6,
    kBool = 7,
    kString = 8,
    kArray = 9,
    kU64 = 10,
    kI64 = 11,
    kF64 = 12,
  };

  GgufBuilder& version(uint32_t v) {
    version_ = v;
    return *this;
  }
  // Adds general.alignment and aligns the tensor data to it.
  GgufBuilder& alignment(uint32_t a) {
    alignment_ = a;
    return add_u32("general.alignment", a);
  }

  GgufBuilder& add_u8(std::string_view k, uint8_t v) { return scalar(k, kU8, v); }
  GgufBuilder& add_i8(std::string_view k, int8_t v) { return scalar(k, kI8, v); }
  GgufBuilder& add_u16(std::string_view k, uint16_t v) { return scalar(k, kU16, v); }
  GgufBuilder& add_i16(std::string_view k, int16_t v) { return scalar(k, kI16, v); }
  GgufBuilder& add_u32(std::string_view k, uint32_t v) { return scalar(k, kU32, v); }
  GgufBuilder& add_i32(std::string_view k, int32_t v) { return scalar(k, kI32, v); }
  GgufBuilder& add_u64(std::string_view k, uint64_t v) { return scalar(k, kU64, v); }
  GgufBuilder& add_i64(std::string_view k, int64_t v) { return scalar(k, kI64, v); }
  GgufBuilder& add_f32(std::string_view k, float v) { return scalar(k, kF32, v); }
  GgufBuilder& add_f64(std::string_view k, double v) { return scalar(k, kF64, v); }
  GgufBuilder& add_bool(std::string_view k, bool v) { return scalar(k, kBool, uint8_t{v}); }
  GgufBuilder& add_string(std::string_view k, std::string_view v) {
    key(k, kString);
    str(kv_, v);
    ++n_kv_;
    return *this;
  }
  GgufBuilder& add_string_array(std::string_view k, const std::vector<std::string>& v) {
    key(k, kArray);
    put<uint32_t>(kv_, kString);
    put<uint64_t>(kv_, v.size());
    for (const auto& s : v) str(kv_, s);
    ++n_kv_;
    return *this;
  }
  template <typename T>
  GgufBuilder& add_array(std::string_view k, Type elem, const std::vector<T>& v) {
    key(k, kArray);
    put<uint32_t>(kv_, elem);
    put<uint64_t>(kv_, v.size());
    for (const T& x : v) put<T>(kv_, x);
    ++n_kv_;
    return *this;
  }
  GgufBuilder& add_i32_array(std::string_view k, const std::vector<int32_t>& v) {
    return add_array(k, kI32, v);
  }
  GgufBuilder& add_f32_array(std::string_view k, const std::vector<float>& v) {
    return add_array(k, kF32, v);
  }
  // Arbitrary value bytes after the type word (for nested arrays and malformed values).
  GgufBuilder& add_raw_kv(std::string_view k, uint32_t type, const std::vector<uint8_t>& value) {
    key(k, type);
    kv_.insert(kv_.end(), value.begin(), value.end());
    ++n_kv_;
    return *this;
  }

  // ne in GGUF order (row length first). data must hold the tensor's bytes exactly.
  GgufBuilder& add_tensor(std::string_view name, kernels::DType type, std::vector<int64_t> ne,
                          std::vector<uint8_t> data) {
    tensors_.push_back({std::string(name), static_cast<uint32_t>(type), std::move(ne),
                        std::move(data), std::nullopt});
    return *this;
  }
  GgufBuilder& add_f32_tensor(std::string_view name, std::vector<int64_t> ne,
                              const std::vector<float>& v) {
    std::vector<uint8_t> d(v.size() * 4);
    std::memcpy(d.data(), v.data(), d.size());
    return add_tensor(name, kernels::DType::F32, std::move(ne), std::move(d));
  }

  // Writes `offset` as the last-added tensor's data offset instead of the computed one.
  GgufBuilder& override_last_offset(uint64_t offset) {
    tensors_.back().offset_override = offset;
    return *this;
  }

  std::vector<uint8_t> build() const {
    std::vector<uint8_t> out;
    put<uint32_t>(out, 0x46554747u);
    put<uint32_t>(out, version_);
    put<uint64_t>(out, tensors_.size());
    put<uint64_t>(out, n_kv_);
    out.insert(out.end(), kv_.begin(), kv_.end());
    uint64_t offset = 0;
    for (const auto& t : tensors_) {
      str(out, t.name);
      put<uint32_t>(out, static_cast<uint32_t>(t.ne.size()));
      for (int64_t n : t.ne) put<uint64_t>(out, static_cast<uint64_t>(n));
      put<uint32_t>(out, t.type);
      put<uint64_t>(out, t.offset_override ? *t.offset_override : offset);
      offset = align(offset + t.data.size());
    }
    out.resize(align(out.size()), 0);
    for (const auto& t : tensors_) {
      out.insert(out.end(), t.data.begin(), t.data.end());
      out.resize(align(out.size()), 0);
    }
    return out;
  }

  bool write(const std::string& path) const {
    const auto bytes = build();
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
    return static_cast<bool>(f);
  }

 private:
  struct Tensor {
    std::string name;
    uint32_t type;
    std::vector<int64_t> ne;
    std::vector<uint8_t> data;
    std::optional<uint64_t> offset_override;
  };
  template <typename T>
  static void put(std::vector<uint8_t>& out, T v) {
    uint8_t b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out.insert(out.end(), b, b + sizeof(T));
  }
  static void str(std::vector<uint8_t>& out, std::string_view s) {
    put<uint64_t>(out, s.size());
    out.insert(out.end(), s.begin(), s.end());
  }
  void key(std::string_view k, uint32_t type) {
    str(kv_, k);
    put<uint32_t>(kv_, type);
  }
  template <typename T>
  GgufBuilder& scalar(std::string_view k, Type type, T v) {
    key(k, type);
    put<T>(kv_, v);
    ++n_kv_;
    return *this;
  }
  uint64_t align(uint64_t x) const { return (x + alignment_ - 1) / alignment_ * alignment_; }

  uint32_t version_ = 3;
  uint64_t alignment_ = 32;
  uint64_t n_kv_ = 0;
  std::vector<uint8_t> kv_;
  std::vector<Tensor> tensors_;
};

// A tiny llama-architecture model with random F32 weights (normal(0, scale), seeded) and a
// vocabulary of "t0".."t{vocab-1}".
struct TinyLlamaSpec {
  int64_t hidden = 32, heads = 4, kv_heads = 2, ffn = 64, layers = 2, vocab = 16, context = 128;
  float rope_theta = 10000.0f, rms_eps = 1e-5f, scale = 0.1f;
  bool tied = true;
  uint32_t seed = 1;
};

inline GgufBuilder tiny_llama_gguf(const TinyLlamaSpec& s) {
  GgufBuilder b;
  b.add_string("general.architecture", "llama")
      .add_u32("llama.block_count", static_cast<uint32_t>(s.layers))
      .add_u32("llama.context_length", static_cast<uint32_t>(s.context))
      .add_u32("llama.embedding_length", static_cast<uint32_t>(s.hidden))
      .add_u32("llama.feed_forward_length", static_cast<uint32_t>(s.ffn))
      .add_u32("llama.attention.head_count", static_cast<uint32_t>(s.heads))
      .add_u32("llama.attention.head_count_kv", static_cast<uint32_t>(s.kv_heads))
      .add_f32("llama.rope.freq_base", s.rope_theta)
      .add_f32("llama.attention.layer_norm_rms_epsilon", s.rms_eps)
      .add_u32("tokenizer.ggml.bos_token_id", 1)
      .add_u32("tokenizer.ggml.eos_token_id", 2);
  std::vector<std::string> toks;
  for (int64_t i = 0; i < s.vocab; ++i) toks.push_back("t" + std::to_string(i));
  b.add_string_array("tokenizer.ggml.tokens", toks);
  std::mt19937 rng(s.seed);
  std::normal_distribution<float> dist(0.0f, s.scale);
  auto mat = [&](const std::string& name, int64_t rows, int64_t cols) {
    std::vector<float> v(static_cast<size_t>(rows * cols));
    for (float& x : v) x = dist(rng);
    b.add_f32_tensor(name, {cols, rows}, v);
  };
  auto norm = [&](const std::string& name) {
    std::vector<float> v(static_cast<size_t>(s.hidden));
    for (float& x : v) x = 1.0f + dist(rng);
    b.add_f32_tensor(name, {s.hidden}, v);
  };
  const int64_t hd = s.hidden / s.heads;
  mat("token_embd.weight", s.vocab, s.hidden);
  for (int64_t i = 0; i < s.layers; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    norm(p + "attn_norm.weight");
    mat(p + "attn_q.weight", s.heads * hd, s.hidden);
    mat(p + "attn_k.weight", s.kv_heads * hd, s.hidden);
    mat(p + "attn_v.weight", s.kv_heads * hd, s.hidden);
    mat(p + "attn_output.weight", s.hidden, s.heads * hd);
    norm(p + "ffn_norm.weight");
    mat(p + "ffn_gate.weight", s.ffn, s.hidden);
    mat(p + "ffn_up.weight", s.ffn, s.hidden);
    mat(p + "ffn_down.weight", s.hidden, s.ffn);
  }
  norm("output_norm.weight");
  if (!s.tied) mat("output.weight", s.vocab, s.hidden);
  return b;
}

}  // namespace llmserve::testing
