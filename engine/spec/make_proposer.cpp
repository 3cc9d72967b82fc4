#include "engine/spec/make_proposer.h"

#include "engine/spec/draft_model_proposer.h"
#include "engine/spec/ngram_proposer.h"

namespace llmserve {

Result<std::unique_ptr<Proposer>> make_proposer(const SpecConfig& config,
                                                const Tokenizer& target_tokenizer,
                                                const ModelRunner& target,
                                                const ModelRunnerOptions& target_options) {
  LLMSERVE_RETURN_IF_ERROR(config.validate());
  switch (config.method) {
    case SpecMethod::kNone:
      return std::unique_ptr<Proposer>();
    case SpecMethod::kNgram:
      return std::unique_ptr<Proposer>(new NgramProposer(config.ngram_min, config.ngram_max));
    case SpecMethod::kDraft: {
      LLMSERVE_ASSIGN_OR_RETURN(
          auto draft,
          DraftModelProposer::create(config.draft_model, target_tokenizer, target_options,
                                     target.num_blocks() * target.block_size(), config.num_tokens));
      return std::unique_ptr<Proposer>(std::move(draft));
    }
  }
  return invalid_argument("speculative.method: unknown value");
}

}  // namespace llmserve
