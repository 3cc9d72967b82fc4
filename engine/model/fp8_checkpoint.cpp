#include "engine/model/fp8_checkpoint.h"

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <vector>

#include "llmserve/kernels/dequantize.h"

namespace llmserve {
namespace {

using kernels::DType;
using nlohmann::json;

constexpr std::string_view kWhere = "config.json: quantization_config";

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// [rows, cols] of positive integers.
Status read_block(const json& v, const std::string& key, Fp8CheckpointConfig* c) {
  if (v.is_null()) return Status::ok();
  if (!v.is_array() || v.size() != 2 || !v[0].is_number_integer() || !v[1].is_number_integer() ||
      v[0].get<int64_t>() <= 0 || v[1].get<int64_t>() <= 0) {
    return invalid_argument(std::string(kWhere) + "." + key +
                            " must be [rows, cols] of positive integers");
  }
  c->block_rows = v[0].get<int64_t>();
  c->block_cols = v[1].get<int64_t>();
  return Status::ok();
}

Status read_compressed_tensors(const json& q, Fp8CheckpointConfig* c) {
  if (auto f = q.find("format"); f != q.end() && f->is_string()) {
    const std::string format = f->get<std::string>();
    if (format != "float-quantized" && format != "naive-quantized") {
      return unimplemented(std::string(kWhere) + ".format '" + format +
                           "' not supported (float-quantized FP8 is)");
    }
  }
  auto groups = q.find("config_groups");
  if (groups == q.end() || !groups->is_object() || groups->empty()) {
    return invalid_argument(std::string(kWhere) + ": compressed-tensors needs config_groups");
  }
  for (const auto& [name, g] : groups->items()) {
    const std::string where = std::string(kWhere) + ".config_groups." + name + ".weights";
    if (!g.is_object() || !g.contains("weights") || !g["weights"].is_object()) {
      return invalid_argument(where + " missing");
    }
    const json& w = g["weights"];
    const bool fp8 = w.value("type", "") == "float" && w.value("num_bits", 0) == 8;
    if (!fp8) {
      return unimplemented(where + ": only 8-bit float weights (FP8) are supported");
    }
    if (auto b = w.find("block_structure"); b != w.end()) {
      LLMSERVE_RETURN_IF_ERROR(read_block(*b, "config_groups." + name + ".block_structure", c));
    }
  }
  return Status::ok();
}

float scale_value(const SafetensorsTensor& t, size_t i) {
  const std::byte* p = t.data.data();
  if (t.type == DType::F32) {
    float f;
    std::memcpy(&f, p + 4 * i, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, p + 2 * i, 2);
  return t.type == DType::BF16 ? kernels::bf16_to_fp32(h) : kernels::fp16_to_fp32(h);
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

}  // namespace

Result<Fp8CheckpointConfig> read_fp8_checkpoint_config(std::string_view config_json) {
  const json j = json::parse(config_json.begin(), config_json.end(), nullptr, false);
  Fp8CheckpointConfig c;
  if (j.is_discarded() || !j.is_object()) return c;  // parse_config reports it
  auto qit = j.find("quantization_config");
  if (qit == j.end() || qit->is_null()) return c;
  const json& q = *qit;
  if (!q.is_object() || !q.contains("quant_method") || !q["quant_method"].is_string()) {
    return invalid_argument(std::string(kWhere) + " needs a string quant_method");
  }
  c.method = q["quant_method"].get<std::string>();
  try {
    if (c.method == "fp8") {
      if (auto f = q.find("fmt");
          f != q.end() && f->is_string() && f->get<std::string>() != "e4m3") {
        return unimplemented(std::string(kWhere) + ".fmt '" + f->get<std::string>() +
                             "' not supported (e4m3 is)");
      }
      if (auto b = q.find("weight_block_size"); b != q.end()) {
        LLMSERVE_RETURN_IF_ERROR(read_block(*b, "weight_block_size", &c));
      }
    } else if (c.method == "compressed-tensors") {
      LLMSERVE_RETURN_IF_ERROR(read_compressed_tensors(q, &c));
    } else if (c.method != "fbgemm_fp8") {
      return unimplemented(std::string(kWhere) + ".quant_method '" + c.method +
                           "' not supported (fp8, compressed-tensors FP8 and fbgemm_fp8 are)");
    }
  } catch (const std::exception& e) {
    return invalid_argument(std::string(kWhere) + ": " + e.what());
  }
  return c;
}

std::string fp8_scale_owner(std::string_view hf_name) {
  for (std::string_view suffix : {".weight_scale_inv", ".weight_scale"}) {
    if (ends_with(hf_name, suffix)) {
      return std::string(hf_name.substr(0, hf_name.size() - suffix.size())) + ".weight";
    }
  }
  return {};
}

bool is_fp8_activation_scale(std::string_view hf_name) {
  return ends_with(hf_name, ".input_scale") || ends_with(hf_name, ".input_scale_ub");
}

Result<std::unique_ptr<float[]>> fp8_scale_grid(const SafetensorsTensor& scale,
                                                const std::string& weight_name, int64_t N,
                                                int64_t K, const Fp8CheckpointConfig& config,
                                                kernels::Fp8Scales* grid) {
  const std::string where = "scale tensor '" + scale.name + "' of FP8 weight '" + weight_name +
                            "' [" + std::to_string(N) + ", " + std::to_string(K) + "]";
  if (scale.type != DType::F32 && scale.type != DType::BF16 && scale.type != DType::F16) {
    return data_loss(where + ": dtype " + std::string(kernels::dtype_name(scale.type)) +
                     " (F32, BF16 or F16 expected)");
  }
  int64_t elems = 1;
  for (int64_t d : scale.shape) elems *= d;
  const std::vector<int64_t>& s = scale.shape;
  kernels::Fp8Scales g;
  if (elems == 1 && s.size() <= 2) {
    g = {nullptr, N, K};  // per tensor
  } else if ((s.size() == 2 && s[0] == N && s[1] == 1) || (s.size() == 1 && s[0] == N)) {
    g = {nullptr, 1, K};  // per output row
  } else if (s.size() == 2 && config.block_rows > 0 &&
             s[0] == (N + config.block_rows - 1) / config.block_rows &&
             s[1] == (K + config.block_cols - 1) / config.block_cols) {
    g = {nullptr, config.block_rows, config.block_cols};
  } else {
    std::string want = "[] or [1] (per tensor), [" + std::to_string(N) + ", 1] (per row)";
    if (config.block_rows > 0) {
      want += " or [" + std::to_string((N + config.block_rows - 1) / config.block_rows) + ", " +
              std::to_string((K + config.block_cols - 1) / config.block_cols) + "] (blocks of " +
              std::to_string(config.block_rows) + " x " + std::to_string(config.block_cols) + ")";
    } else {
      want += "; a block grid needs quantization_config.weight_block_size";
    }
    return data_loss(where + " has shape " + shape_str(s) + ", expected " + want);
  }
  auto out = std::make_unique<float[]>(static_cast<size_t>(elems));
  for (int64_t i = 0; i < elems; ++i) {
    const float v = scale_value(scale, static_cast<size_t>(i));
    if (!std::isfinite(v) || v < 0.0f) {
      return data_loss(where + ": scale " + std::to_string(i) + " is " + std::to_string(v) +
                       " (must be finite and not negative)");
    }
    out[static_cast<size_t>(i)] = v;
  }
  g.data = out.get();
  *grid = g;
  return out;
}

}  // namespace llmserve
