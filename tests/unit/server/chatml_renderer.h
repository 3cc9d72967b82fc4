// A ChatML renderer, like SmolLM2's template, for tests that render chats without a model.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "engine/core/status.h"

namespace llmserve::testing {

inline Result<std::string> chatml(const nlohmann::json& messages, bool add_generation_prompt) {
  std::string out;
  for (const auto& m : messages) {
    out += "<|im_start|>" + m["role"].get<std::string>() + "\n" + m["content"].get<std::string>() +
           "<|im_end|>\n";
  }
  if (add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

}  // namespace llmserve::testing
