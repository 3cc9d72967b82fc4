// A model's own sampling defaults, applied to a request's omitted fields (vLLM's
// --generation-config auto): from a Hugging Face model directory's generation_config.json, then
// the config key model.default_sampling ("key=value" items, e.g. for a GGUF file). A request's
// explicit fields always win: the readers start from these and overwrite what the body sets.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "engine/core/status.h"
#include "engine/sampling_params.h"

namespace llmserve {

struct SamplingDefaults {
  std::optional<double> temperature;  // 0 = greedy
  std::optional<double> top_p;
  std::optional<int32_t> top_k;
  std::optional<double> min_p;
  std::optional<double> repetition_penalty;

  bool empty() const;
  void apply(SamplingParams* p) const;  // sets the fields that are set here
  // "temperature=0.2 top_p=0.9", or "none".
  std::string describe() const;
  // The keys set, as name / value pairs in a fixed order (for /v1/models).
  std::vector<std::pair<std::string, double>> items() const;
};

// One "key=value" item over `out`: keys temperature, top_p, top_k, min_p, repetition_penalty,
// in the ranges a request may ask. INVALID_ARGUMENT naming the key and the item.
Status apply_sampling_item(std::string_view item, SamplingDefaults* out);

// generation_config.json's sampling keys (temperature, top_p, top_k, min_p, repetition_penalty);
// "do_sample": false means greedy (temperature 0). Other keys are ignored.
Result<SamplingDefaults> parse_generation_config(std::string_view json_text);

// model.path's generation_config.json when model.path is a directory holding one, then the
// model.default_sampling items over it. Errors name the file or the key.
Result<SamplingDefaults> default_sampling_from_config(const Config& c);

}  // namespace llmserve
