#include "engine/pooling/rerank_prompt.h"

namespace llmserve {
namespace {

constexpr std::string_view kPrefix =
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query "
    "and the Instruct provided. Note that the answer can only be \"yes\" or \"no\"."
    "<|im_end|>\n<|im_start|>user\n";
constexpr std::string_view kSuffix = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";

}  // namespace

std::vector<int32_t> rerank_prompt_ids(const Tokenizer& tok, std::string_view query,
                                       std::string_view document, std::string_view instruction) {
  std::string user = "<Instruct>: ";
  user += instruction.empty() ? kDefaultRerankInstruction : instruction;
  user += "\n<Query>: ";
  user += query;
  user += "\n<Document>: ";
  user += document;
  std::vector<int32_t> ids = tok.encode(kPrefix, /*add_special=*/false, /*parse_special=*/true);
  const std::vector<int32_t> mid = tok.encode(user, /*add_special=*/false, /*parse_special=*/false);
  const std::vector<int32_t> end = tok.encode(kSuffix, /*add_special=*/false,
                                              /*parse_special=*/true);
  ids.insert(ids.end(), mid.begin(), mid.end());
  ids.insert(ids.end(), end.begin(), end.end());
  return ids;
}

}  // namespace llmserve
