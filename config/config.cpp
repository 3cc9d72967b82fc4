#include "config/config.h"

#include <algorithm>

#include "config/config_keys.h"

namespace llmserve {

std::string_view to_string(LoadFormat v) {
  switch (v) {
    case LoadFormat::kAuto:
      return "auto";
    case LoadFormat::kGguf:
      return "gguf";
    case LoadFormat::kSafetensors:
      return "safetensors";
    case LoadFormat::kDummy:
      return "dummy";
  }
  return "?";
}

std::string_view to_string(CpuMatmulPrecision v) {
  switch (v) {
    case CpuMatmulPrecision::kByFormat:
      return "by_format";
    case CpuMatmulPrecision::kAuto:
      return "auto";
    case CpuMatmulPrecision::kQ8x2:
      return "q8x2";
    case CpuMatmulPrecision::kQ8:
      return "q8";
  }
  return "by_format";
}

std::string_view to_string(CpuIsa v) {
  return v == CpuIsa::kAvx2 ? "avx2" : v == CpuIsa::kAvx512 ? "avx512" : "auto";
}

std::string_view to_string(KvCacheDtype v) {
  switch (v) {
    case KvCacheDtype::kF32:
      return "f32";
    case KvCacheDtype::kInt8:
      return "int8";
    case KvCacheDtype::kFp8:
      return "fp8";
    case KvCacheDtype::kF16:
      break;
  }
  return "f16";
}

std::string_view to_string(DeviceKind v) {
  switch (v) {
    case DeviceKind::kAuto:
      return "auto";
    case DeviceKind::kCpu:
      return "cpu";
    case DeviceKind::kCuda:
      return "cuda";
  }
  return "?";
}

std::string_view to_string(LogLevel v) {
  switch (v) {
    case LogLevel::kTrace:
      return "trace";
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
  }
  return "?";
}

std::string_view to_string(SpeculativeMethod v) {
  switch (v) {
    case SpeculativeMethod::kNgram:
      return "ngram";
    case SpeculativeMethod::kDraft:
      return "draft";
    default:
      return "none";
  }
}

std::string_view to_string(LogFormat v) {
  switch (v) {
    case LogFormat::kText:
      return "text";
    case LogFormat::kJson:
      return "json";
  }
  return "?";
}

std::string describe(const Config& config) {
  size_t width = 0;
  for (const ConfigKey& k : config_keys()) width = std::max(width, k.full_name().size());
  std::string out = "effective configuration:\n";
  for (const ConfigKey& k : config_keys()) {
    const std::string name = k.full_name();
    std::string value = k.get(config);
    if (k.secret && !value.empty()) {
      const size_t n = std::count(value.begin(), value.end(), ',') + 1;
      value = "<" + std::to_string(n) + (n == 1 ? " key" : " keys") + " hidden>";
    } else if (k.type == KeyType::kString || k.type == KeyType::kStringList) {
      value = "\"" + value + "\"";
    }
    const auto src = config.sources.find(name);
    out += "  " + name + std::string(width - name.size(), ' ') + " = " + value;
    out += "  (" + (src == config.sources.end() ? std::string("default") : src->second) + ")\n";
  }
  return out;
}

}  // namespace llmserve
