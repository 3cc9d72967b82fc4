#include "engine/sampling_params.h"

#include <cmath>
#include <sstream>

namespace llmserve {
namespace {

constexpr size_t kMaxStopStrings = 16;
constexpr size_t kMaxStopStringBytes = 1024;
constexpr int32_t kMaxSamples = 128;

// Messages start with the field name (OpenAI's `param`), e.g. "top_p must be in (0, 1], got 0".
template <typename T>
Status range_error(const char* field, const char* range, T got) {
  std::ostringstream os;
  os << field << " must be " << range << ", got " << got;
  return invalid_argument(os.str());
}

bool in_closed(float v, float lo, float hi) {
  return std::isfinite(v) && v >= lo && v <= hi;
}

}  // namespace

Status SamplingParams::validate(int32_t vocab_size, int32_t max_logprobs) const {
  if (!in_closed(temperature, 0.0f, 100.0f)) {
    return range_error("temperature", "in [0, 100]", temperature);
  }
  if (top_k < -1) return range_error("top_k", "-1, 0 (off) or >= 1", top_k);
  if (!(std::isfinite(top_p) && top_p > 0.0f && top_p <= 1.0f)) {
    return range_error("top_p", "in (0, 1]", top_p);
  }
  if (!in_closed(min_p, 0.0f, 1.0f)) return range_error("min_p", "in [0, 1]", min_p);
  if (!(std::isfinite(repetition_penalty) && repetition_penalty > 0.0f &&
        repetition_penalty <= 10.0f)) {
    return range_error("repetition_penalty", "in (0, 10]", repetition_penalty);
  }
  if (!in_closed(presence_penalty, -2.0f, 2.0f)) {
    return range_error("presence_penalty", "in [-2, 2]", presence_penalty);
  }
  if (!in_closed(frequency_penalty, -2.0f, 2.0f)) {
    return range_error("frequency_penalty", "in [-2, 2]", frequency_penalty);
  }
  for (const auto& [id, bias] : logit_bias) {
    if (id < 0 || id >= vocab_size) {
      return range_error("logit_bias", "keyed by token ids in [0, vocab size)", id);
    }
    if (!in_closed(bias, -100.0f, 100.0f)) {
      return range_error("logit_bias", "values in [-100, 100]", bias);
    }
  }
  if (max_tokens < 0) return range_error("max_tokens", ">= 0", max_tokens);
  if (min_tokens < 0) return range_error("min_tokens", ">= 0", min_tokens);
  if (min_tokens > max_tokens) {
    return range_error("min_tokens", "<= max_tokens", min_tokens);
  }
  if (stop.size() > kMaxStopStrings) return range_error("stop", "at most 16 strings", stop.size());
  for (const std::string& s : stop) {
    if (s.empty()) return invalid_argument("stop must not contain an empty string");
    if (s.size() > kMaxStopStringBytes) {
      return range_error("stop", "strings of at most 1024 bytes", s.size());
    }
  }
  for (int32_t id : stop_token_ids) {
    if (id < 0 || id >= vocab_size) {
      return range_error("stop_token_ids", "token ids in [0, vocab size)", id);
    }
  }
  if (logprobs < -1 || logprobs > max_logprobs) {
    return range_error("logprobs",
                       ("-1 (none) or in [0, " + std::to_string(max_logprobs) + "]").c_str(),
                       logprobs);
  }
  if (prompt_logprobs < -1 || prompt_logprobs > max_logprobs) {
    return range_error("prompt_logprobs",
                       ("-1 (none) or in [0, " + std::to_string(max_logprobs) + "]").c_str(),
                       prompt_logprobs);
  }
  if (n < 1 || n > kMaxSamples) return range_error("n", "in [1, 128]", n);
  return Status::ok();
}

}  // namespace llmserve
