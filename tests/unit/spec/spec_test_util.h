// Requests for the speculative-decoding tests on the default model: the 22 reference prompts
// (tests/fixtures/logits) and input-grounded chat tasks whose answers copy their input.
#pragma once

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/unit/engine/engine_test_util.h"

namespace llmserve::testing {

inline std::vector<std::vector<int32_t>> reference_prompts() {
  std::ifstream in(std::string(LLMSERVE_FIXTURES_DIR) + "/logits/smollm2_135m_q4_1_llamacpp.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  std::vector<std::vector<int32_t>> out;
  for (const auto& c : j["cases"]) out.push_back(c["prompt_ids"].get<std::vector<int32_t>>());
  return out;
}

inline std::vector<std::vector<int32_t>> grounded_prompts(const Tokenizer& tok) {
  static const char* kTasks[] = {
      "Repeat this sentence exactly: The quick brown fox jumps over the lazy dog near the old "
      "stone bridge.",
      "Copy the following list, one item per line:\napples\nbananas\ncherries\ndates\nfigs",
      "Rewrite this code with the variable x renamed to total:\nx = 0\nfor n in numbers:\n    x "
      "= x + n\nprint(x)",
      "Fix the spelling and repeat the text: Teh wether today is sunny and teh sky is blew.",
      "Quote this paragraph word for word: Water boils at one hundred degrees Celsius at sea "
      "level. At higher altitudes it boils at lower temperatures.",
      "Turn this into a JSON list of strings: red, green, blue, yellow, purple",
      "Repeat the table:\n| name | age |\n| Ann | 31 |\n| Bob | 27 |\n| Cid | 45 |",
      "Say the alphabet from A to M separated by commas.",
  };
  std::vector<std::vector<int32_t>> out;
  for (const char* task : kTasks) {
    const std::string text =
        std::string("<|im_start|>user\n") + task + "<|im_end|>\n<|im_start|>assistant\n";
    out.push_back(tok.encode(text, false, true));
  }
  return out;
}

struct Setting {
  float temperature;
  uint64_t seed;
};

// Greedy, then three temperatures with two seeds each.
inline std::vector<Setting> identity_settings() {
  return {{0.0f, 0}, {0.5f, 11}, {0.5f, 12}, {0.8f, 11}, {0.8f, 12}, {1.2f, 11}, {1.2f, 12}};
}

inline GenerateRequest spec_request(const std::vector<int32_t>& prompt, const Setting& s,
                                    int32_t max_tokens) {
  GenerateRequest r = make_request(prompt, max_tokens, s.temperature);
  if (s.temperature > 0) {
    r.params.seed = s.seed;
    r.params.top_p = 0.95f;
  }
  return r;
}

}  // namespace llmserve::testing
