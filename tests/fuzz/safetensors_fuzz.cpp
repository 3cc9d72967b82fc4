// Safetensors header + HF config.json. The first input byte picks the parser: even -> the bytes
// are a safetensors file; odd -> the rest is config.json text. Errors are Statuses, never crashes.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "engine/model/model_config.h"
#include "engine/model/safetensors_file.h"

namespace {
uint64_t g_sink = 0;  // keeps results observable
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace llmserve;
  if (size == 0) return 0;
  const bool config = (data[0] & 1) != 0;
  ++data;
  --size;
  if (config) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    if (auto cfg = model_config_from_hf_json(text); cfg.is_ok()) {
      g_sink += cfg->validate().is_ok();
      g_sink += cfg->kv_bytes_per_token(2);
    }
    return 0;
  }
  auto file = SafetensorsFile::parse(std::as_bytes(std::span(data, size)), "fuzz");
  if (!file.is_ok()) return 0;
  for (const auto& t : (*file)->tensors()) {
    g_sink += t.name.size() + t.shape.size();
    if (!t.data.empty()) {  // the span must lie inside the input
      g_sink += static_cast<uint8_t>(t.data.front()) + static_cast<uint8_t>(t.data.back());
    }
  }
  return 0;
}
