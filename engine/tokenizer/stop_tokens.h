// The ids that end generation: eos plus end-of-turn tokens common chat models use
// (<|im_end|>, <|eot_id|>, <|end_of_text|>, </s>, ...) when the vocab has them.
#pragma once

#include "engine/tokenizer/tokenizer.h"

namespace llmserve {

// Fills spec.stop_ids from spec.eos_id and spec.tokens (sorted, no duplicates).
void fill_stop_ids(TokenizerSpec& spec);

}  // namespace llmserve
