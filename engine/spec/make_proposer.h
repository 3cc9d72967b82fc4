// The proposer speculative.method asks for (null for none).
#pragma once

#include <memory>

#include "engine/core/status.h"
#include "engine/runner/model_runner.h"
#include "engine/spec/proposer.h"
#include "engine/spec/spec_config.h"
#include "engine/tokenizer/tokenizer.h"

namespace llmserve {

Result<std::unique_ptr<Proposer>> make_proposer(const SpecConfig& config,
                                                const Tokenizer& target_tokenizer,
                                                const ModelRunner& target,
                                                const ModelRunnerOptions& target_options);

}  // namespace llmserve
