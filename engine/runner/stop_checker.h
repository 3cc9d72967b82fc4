// Per-sample output state after sampling: detokenizes each token, decides whether the sample
// is finished, and says which text may be streamed now (DESIGN §6).
// - EOS (the tokenizer's stop ids, unless ignore_eos) and stop_token_ids finish with kStop and
//   stop_reason = the id as text; the stop token's text is left out unless
//   include_stop_str_in_output.
// - Stop strings match on the decoded output text, across deltas; the text is cut before the
//   match (or after it with include_stop_str_in_output); stop_reason = the string. Text that
//   could still grow into a stop string is held back.
// - Stops count only after min_tokens tokens (vLLM). Then max_new_tokens -> kLength.
// The concatenation of every OutputDelta::text (plus flush()) equals text().
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/generate_request.h"
#include "engine/model/model_config.h"
#include "engine/runner/detokenizer.h"
#include "engine/sampling_params.h"

namespace llmserve {

struct OutputDelta {
  std::string text;                           // to stream now (complete UTF-8)
  FinishReason finish = FinishReason::kNone;  // kStop or kLength on the last token
  std::string stop_reason;                    // stop string, or the stop token id as text
  bool finished() const { return finish != FinishReason::kNone; }
};

// The ids that end generation: the tokenizer's stop ids, else the model config's
// (config_eos_ids: its eos_ids, else eos_id).
std::vector<int32_t> generation_eos_ids(const Tokenizer& tokenizer, const ModelConfig& cfg);
std::vector<int32_t> config_eos_ids(const ModelConfig& cfg);

class StopChecker {
 public:
  // max_new_tokens: min(params.max_tokens, max_model_len - prompt length). eos_ids: the
  // tokenizer's stop ids. context: see Detokenizer. constrained: the sample follows a grammar,
  // which allows an EOS id only as its end, so one always stops it (min_tokens and ignore_eos
  // notwithstanding: nothing may follow). `tokenizer` must outlive this object.
  StopChecker(const Tokenizer& tokenizer, const SamplingParams& params,
              std::span<const int32_t> eos_ids, int32_t max_new_tokens,
              std::span<const int32_t> context = {}, bool constrained = false);

  // Feeds one sampled token; precondition: !finished().
  OutputDelta append(int32_t token_id);
  // Ends the sample early (abort, timeout): returns the text still held back.
  std::string flush();

  bool finished() const { return finish_ != FinishReason::kNone; }
  int32_t num_tokens() const { return num_tokens_; }
  const std::string& text() const { return text_; }  // the output text (final once finished)

 private:
  bool is_stop_token(int32_t token_id) const;
  bool is_eos(int32_t token_id) const;
  // Appends decoded text, looks for stop strings, and moves what is safe into `out`.
  void add_text(std::string_view delta, bool final, OutputDelta& out);
  size_t hold_back() const;
  void finish(FinishReason reason, std::string stop_reason, OutputDelta& out);

  Detokenizer detokenizer_;
  std::vector<int32_t> eos_ids_;
  std::vector<int32_t> stop_token_ids_;
  std::vector<std::string> stop_strings_;
  bool ignore_eos_;
  bool constrained_;
  bool include_stop_;
  int32_t min_tokens_;
  int32_t max_new_tokens_;
  int32_t num_tokens_ = 0;
  std::string text_;
  size_t emitted_ = 0;
  FinishReason finish_ = FinishReason::kNone;
};

}  // namespace llmserve
