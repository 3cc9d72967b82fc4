#include "server/common/default_sampling.h"

#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "server/common/field_checks.h"

namespace llmserve {

namespace {

constexpr const char* kKey = "model.default_sampling";

// Range checks as a request's own fields get (SamplingParams::validate).
Status check_value(std::string_view key, double v) {
  if (key == "temperature") return check_number_range(key, v, 0.0, 100.0);
  if (key == "top_p") return check_number_range(key, v, 0.0, 1.0, /*lo_open=*/true);
  if (key == "min_p") return check_number_range(key, v, 0.0, 1.0);
  if (key == "repetition_penalty") return check_number_range(key, v, 0.0, 10.0, true);
  if (key == "top_k") {
    if (v != static_cast<double>(static_cast<int64_t>(v))) {
      return field_error(key, "must be an integer, got " + format_number(v));
    }
    return check_int_range(key, static_cast<int64_t>(v), -1, 1 << 30);
  }
  return field_error(key,
                     "is not a sampling default (temperature, top_p, top_k, min_p, "
                     "repetition_penalty)");
}

Status set_value(std::string_view key, double v, SamplingDefaults* out) {
  LLMSERVE_RETURN_IF_ERROR(check_value(key, v));
  if (key == "temperature") out->temperature = v;
  if (key == "top_p") out->top_p = v;
  if (key == "min_p") out->min_p = v;
  if (key == "repetition_penalty") out->repetition_penalty = v;
  if (key == "top_k") out->top_k = static_cast<int32_t>(v);
  return Status::ok();
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

bool SamplingDefaults::empty() const {
  return items().empty();
}

void SamplingDefaults::apply(SamplingParams* p) const {
  if (temperature) p->temperature = static_cast<float>(*temperature);
  if (top_p) p->top_p = static_cast<float>(*top_p);
  if (top_k) p->top_k = *top_k;
  if (min_p) p->min_p = static_cast<float>(*min_p);
  if (repetition_penalty) p->repetition_penalty = static_cast<float>(*repetition_penalty);
}

std::vector<std::pair<std::string, double>> SamplingDefaults::items() const {
  std::vector<std::pair<std::string, double>> out;
  if (temperature) out.emplace_back("temperature", *temperature);
  if (top_p) out.emplace_back("top_p", *top_p);
  if (top_k) out.emplace_back("top_k", *top_k);
  if (min_p) out.emplace_back("min_p", *min_p);
  if (repetition_penalty) out.emplace_back("repetition_penalty", *repetition_penalty);
  return out;
}

std::string SamplingDefaults::describe() const {
  std::string out;
  for (const auto& [k, v] : items()) out += (out.empty() ? "" : " ") + k + "=" + format_number(v);
  return out.empty() ? "none" : out;
}

Status apply_sampling_item(std::string_view item, SamplingDefaults* out) {
  const size_t eq = item.find('=');
  if (eq == std::string_view::npos) {
    return invalid_argument(std::string(kKey) + ": '" + std::string(item) +
                            "' is not key=value (e.g. temperature=0.2)");
  }
  const std::string_view key = trim(item.substr(0, eq));
  const std::string_view text = trim(item.substr(eq + 1));
  double v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || r.ec != std::errc() || r.ptr != text.data() + text.size()) {
    return invalid_argument(std::string(kKey) + ": " + std::string(key) + ": '" +
                            std::string(text) + "' is not a number");
  }
  Status st = set_value(key, v, out);
  if (!st.is_ok()) return invalid_argument(std::string(kKey) + ": " + st.message());
  return Status::ok();
}

Result<SamplingDefaults> parse_generation_config(std::string_view json_text) {
  const nlohmann::json j = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return invalid_argument("generation_config.json: not a JSON object");
  SamplingDefaults out;
  for (const char* key : {"temperature", "top_p", "top_k", "min_p", "repetition_penalty"}) {
    if (!j.contains(key) || j.at(key).is_null()) continue;
    if (!j.at(key).is_number()) {
      return invalid_argument(std::string("generation_config.json: ") + key + ": not a number");
    }
    Status st = set_value(key, j.at(key).get<double>(), &out);
    if (!st.is_ok()) return invalid_argument("generation_config.json: " + st.message());
  }
  // transformers samples only with do_sample: true; false asks for greedy decoding.
  if (j.contains("do_sample") && j.at("do_sample") == false) out.temperature = 0.0;
  return out;
}

Result<SamplingDefaults> default_sampling_from_config(const Config& c) {
  SamplingDefaults out;
  std::error_code ec;
  const std::filesystem::path file = std::filesystem::path(c.model.path) / "generation_config.json";
  if (std::filesystem::is_directory(c.model.path, ec) &&
      std::filesystem::is_regular_file(file, ec)) {
    std::ifstream in(file, std::ios::binary);
    if (!in) return not_found("model.path: cannot read " + file.string());
    std::stringstream ss;
    ss << in.rdbuf();
    Result<SamplingDefaults> parsed = parse_generation_config(ss.str());
    if (!parsed.is_ok()) {
      return invalid_argument("model.path: " + parsed.status().message() + " (" + file.string() +
                              ")");
    }
    out = *parsed;
  }
  for (const std::string& item : c.model.default_sampling) {
    LLMSERVE_RETURN_IF_ERROR(apply_sampling_item(item, &out));
  }
  return out;
}

}  // namespace llmserve
