#include "engine/tokenizer/stop_tokens.h"

#include <algorithm>
#include <array>
#include <string_view>

namespace llmserve {

void fill_stop_ids(TokenizerSpec& spec) {
  static constexpr std::array<std::string_view, 8> kEndTokens = {
      "<|im_end|>",    "<|eot_id|>", "<|end_of_text|>", "</s>",
      "<|endoftext|>", "<|eom_id|>", "<end_of_turn>",   "<|end|>"};
  std::vector<int32_t> ids;
  if (spec.eos_id >= 0) ids.push_back(spec.eos_id);
  for (size_t i = 0; i < spec.tokens.size(); ++i) {
    const std::string& t = spec.tokens[i];
    if (t.size() > 16 || t.size() < 4) continue;
    if (std::find(kEndTokens.begin(), kEndTokens.end(), t) != kEndTokens.end()) {
      ids.push_back(static_cast<int32_t>(i));
    }
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  spec.stop_ids = std::move(ids);
}

}  // namespace llmserve
