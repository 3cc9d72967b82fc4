// GGUF reader: arbitrary bytes -> GgufFile::parse, then every accessor, the model config and the
// tokenizer spec built from the metadata. Any input must give a Status, never a crash.
#include <cstddef>
#include <cstdint>
#include <span>

#include "engine/model/gguf_file.h"
#include "engine/model/model_config.h"
#include "engine/tokenizer/tokenizer.h"

namespace {

uint64_t g_sink = 0;  // keeps results observable

void touch(const llmserve::GgufValue& v) {
  g_sink += v.to_string().size();
  g_sink += v.as_i64().value_or(0) + v.as_u64().value_or(0);
  g_sink += static_cast<uint64_t>(v.as_f64().value_or(0) != 0) + v.as_bool().value_or(false);
  if (auto s = v.as_string()) g_sink += s->size();
  if (v.type == llmserve::GgufType::kArray && v.count > 0) {
    for (uint64_t i : {uint64_t{0}, v.count - 1, v.count}) {
      g_sink += static_cast<uint64_t>(v.array_f64(i).value_or(0) != 0);
      g_sink += static_cast<uint64_t>(v.array_i64(i).value_or(0));
    }
    for (const auto& item : v.items) touch(item);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace llmserve;
  auto bytes = std::as_bytes(std::span(data, size));
  auto file = GgufFile::parse(bytes);
  if (!file.is_ok()) return 0;
  const GgufFile& f = **file;
  for (const auto& kv : f.metadata()) {
    touch(kv.value);
    g_sink += f.find(kv.key) != nullptr;
    g_sink += f.get_u32(kv.key).value_or(0) + f.get_i64(kv.key).value_or(0);
    g_sink += f.get_string_array(kv.key).has_value();
    if (auto a = f.get_f32_array(kv.key)) g_sink += a->size();
    if (auto a = f.get_i32_array(kv.key)) g_sink += a->size();
  }
  for (const auto& t : f.tensors()) {
    g_sink += f.find_tensor(t.name) != nullptr;
    g_sink += t.shape().size();
    if (!t.data.empty()) {  // the span must lie inside the input
      g_sink += static_cast<uint8_t>(t.data.front()) + static_cast<uint8_t>(t.data.back());
    }
  }
  if (auto cfg = model_config_from_gguf(f); cfg.is_ok()) {
    g_sink += cfg->validate().is_ok();
    g_sink += cfg->kv_bytes_formula(2).size();
  }
  if (auto spec = tokenizer_spec_from_gguf(f); spec.is_ok() && spec->tokens.size() <= 4096) {
    if (auto tok = Tokenizer::create(std::move(*spec)); tok.is_ok()) {
      auto ids = (*tok)->encode("Hello, world! 123 <|im_start|>", true, true);
      g_sink += (*tok)->decode(ids).size();
    }
  }
  return 0;
}
