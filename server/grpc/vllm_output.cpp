#include "server/grpc/vllm_output.h"

#include <algorithm>

#include "server/common/kv_transfer_params.h"

namespace llmserve {

namespace {

namespace vpb = ::vllm::grpc::engine;

void append_logprobs(const std::vector<TokenLogprob>& lps, vpb::OutputLogProbs* out) {
  for (const TokenLogprob& lp : lps) {
    out->add_token_logprobs(lp.logprob);
    out->add_token_ids(static_cast<uint32_t>(lp.token_id));
    vpb::TopLogProbs* top = out->add_top_logprobs();
    for (const TopLogprob& t : lp.top) {
      top->add_values(t.logprob);
      top->add_token_ids(static_cast<uint32_t>(t.token_id));
    }
  }
}

}  // namespace

VllmResponseBuilder::VllmResponseBuilder(bool stream, int32_t n, std::vector<int32_t> prompt,
                                         std::vector<std::string> stops,
                                         std::vector<int32_t> stop_token_ids)
    : stream_(stream),
      prompt_(std::move(prompt)),
      stops_(std::move(stops)),
      stop_token_ids_(std::move(stop_token_ids)),
      choices_(static_cast<size_t>(std::max(n, 1))) {}

const char* VllmResponseBuilder::finish_reason(FinishReason r) {
  switch (r) {
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kAbort:
    case FinishReason::kTimeout:
      return "abort";
    case FinishReason::kError:
      return "error";
    case FinishReason::kNone:
      break;
  }
  return "";
}

// The prompt's first token has no logprob (nothing precedes it); the engine sends tokens 1...
void VllmResponseBuilder::fill_input_logprobs(const std::vector<TokenLogprob>& lps) {
  input_logprobs_.Clear();
  has_input_logprobs_ = true;
  if (!prompt_.empty()) {
    input_logprobs_.add_token_logprobs();
    input_logprobs_.add_token_ids(static_cast<uint32_t>(prompt_.front()));
    input_logprobs_.add_top_logprobs();
  }
  for (const TokenLogprob& lp : lps) {
    input_logprobs_.add_token_logprobs()->set_value(lp.logprob);
    input_logprobs_.add_token_ids(static_cast<uint32_t>(lp.token_id));
    vpb::TopLogProbs* top = input_logprobs_.add_top_logprobs();
    for (const TopLogprob& t : lp.top) {
      top->add_values(t.logprob);
      top->add_token_ids(static_cast<uint32_t>(t.token_id));
    }
  }
}

void VllmResponseBuilder::fill_complete(const StepOutput& o, Choice& c, vpb::GenerateComplete* m) {
  m->set_finish_reason(finish_reason(o.finish));
  m->set_index(static_cast<uint32_t>(o.index));
  m->set_prompt_tokens(static_cast<uint32_t>(o.usage.prompt_tokens));
  m->set_completion_tokens(static_cast<uint32_t>(c.ids.size()));
  m->set_cached_tokens(static_cast<uint32_t>(o.usage.cached_prompt_tokens));
  if (o.finish == FinishReason::kStop && !o.stop_reason.empty()) {
    const bool by_token = !c.ids.empty() && std::to_string(c.ids.back()) == o.stop_reason &&
                          (std::find(stops_.begin(), stops_.end(), o.stop_reason) == stops_.end() ||
                           std::find(stop_token_ids_.begin(), stop_token_ids_.end(),
                                     static_cast<int32_t>(c.ids.back())) != stop_token_ids_.end());
    if (by_token) {
      m->set_matched_token_id(c.ids.back());
    } else {
      m->set_matched_stop_str(o.stop_reason);
    }
  }
  if (!stream_) {
    m->mutable_output_ids()->Add(c.ids.begin(), c.ids.end());
    if (c.has_logprobs) *m->mutable_output_logprobs() = c.logprobs;
    if (has_input_logprobs_) *m->mutable_input_logprobs() = input_logprobs_;
  }
  if (o.kv_handoff) m->set_kv_transfer_params_json(kv_transfer_params_json(*o.kv_handoff).dump());
  if (o.usage.draft_tokens > 0) {
    m->set_spec_draft_tokens(static_cast<uint32_t>(o.usage.draft_tokens));
    m->set_spec_accepted_tokens(static_cast<uint32_t>(o.usage.accepted_draft_tokens));
  }
}

void VllmResponseBuilder::add(const StepOutput& o, std::vector<vpb::GenerateResponse>* out) {
  const size_t index = static_cast<size_t>(
      std::clamp<int32_t>(o.index, 0, static_cast<int32_t>(choices_.size()) - 1));
  Choice& c = choices_[index];
  const bool fresh_input_logprobs = !o.prompt_logprobs.empty();
  if (fresh_input_logprobs) fill_input_logprobs(o.prompt_logprobs);
  for (int32_t t : o.token_ids) c.ids.push_back(static_cast<uint32_t>(t));
  if (!o.logprobs.empty()) {
    c.has_logprobs = true;
    if (!stream_) append_logprobs(o.logprobs, &c.logprobs);
  }
  if (stream_ && (!o.token_ids.empty() || fresh_input_logprobs)) {
    vpb::GenerateStreamChunk* chunk = out->emplace_back().mutable_chunk();
    for (int32_t t : o.token_ids) chunk->add_token_ids(static_cast<uint32_t>(t));
    chunk->set_prompt_tokens(static_cast<uint32_t>(o.usage.prompt_tokens));
    chunk->set_completion_tokens(static_cast<uint32_t>(o.token_ids.size()));
    chunk->set_cached_tokens(static_cast<uint32_t>(o.usage.cached_prompt_tokens));
    chunk->set_index(static_cast<uint32_t>(o.index));
    if (!o.logprobs.empty()) append_logprobs(o.logprobs, chunk->mutable_output_logprobs());
    if (fresh_input_logprobs) *chunk->mutable_input_logprobs() = input_logprobs_;
  }
  if (o.finish != FinishReason::kNone && o.finish != FinishReason::kError) {
    fill_complete(o, c, out->emplace_back().mutable_complete());
  }
}

}  // namespace llmserve
