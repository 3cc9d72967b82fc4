// The non-streaming body as JSON text, piece by piece: a scoring request's prompt_logprobs are
// millions of entries, so they are written straight to text (logprobs_text.h), once per prompt,
// and the route sends the pieces as they come instead of holding the whole body.
#include <algorithm>

#include "server/http/json_fields.h"
#include "server/http/openai_response.h"

namespace llmserve {

using nlohmann::json;

const std::string& ResponseBuilder::prompt_logprobs_text(size_t prompt_index) {
  if (prompt_lps_text_of_ != prompt_index) {
    prompt_lps_text_.clear();
    std::span<const TokenLogprob> lps;
    if (prompt_index < prompt_lps_.size()) lps = prompt_lps_[prompt_index];
    append_prompt_logprobs(&prompt_lps_text_, lps,
                           static_cast<size_t>(std::max(ctx_.prompt_logprobs, 0)), texts_);
    prompt_lps_text_of_ = prompt_index;
  }
  return prompt_lps_text_;
}

std::string ResponseBuilder::completion_choice(size_t i) {
  const Choice& c = choices_[i];
  const size_t prompt = i / static_cast<size_t>(std::max(ctx_.n, 1));
  const bool echo = ctx_.echo;
  std::string out = "{\"index\":" + std::to_string(i) + ",\"text\":";
  out += json_fields::dump(json(echo ? echo_text(prompt) + c.text : c.text));
  out += ",\"logprobs\":";
  if (ctx_.logprobs < 0) {
    out += "null";
  } else if (echo) {
    // The prompt's tokens (the first with null logprobs), top lists cut to `logprobs` (the
    // engine scored max(logprobs, prompt_logprobs)), then the completion's after their bytes.
    std::span<const TokenLogprob> lps;
    if (prompt < prompt_lps_.size()) lps = prompt_lps_[prompt];
    const bool has_first = prompt < ctx_.prompt_ids.size() && !ctx_.prompt_ids[prompt].empty();
    const std::string first = has_first ? token_string(ctx_.prompt_ids[prompt].front()) : "";
    std::vector<size_t> offsets;
    offsets.reserve(lps.size());
    size_t at = first.size();
    for (const TokenLogprob& lp : lps) {
      offsets.push_back(at);
      at += token_string(lp.token_id).size();
    }
    const LegacyLogprobsPart parts[] = {{lps, offsets, 0, static_cast<size_t>(ctx_.logprobs)},
                                        {c.logprobs, c.text_offsets, at, SIZE_MAX}};
    append_legacy_logprobs(&out, parts, has_first ? &first : nullptr, texts_);
  } else {
    const LegacyLogprobsPart parts[] = {{c.logprobs, c.text_offsets, 0, SIZE_MAX}};
    append_legacy_logprobs(&out, parts, nullptr, texts_);
  }
  out += ",\"finish_reason\":";
  out += c.finish == FinishReason::kNone ? "null" : json_fields::dump(finish_reason_name(c.finish));
  if (!c.stop_reason.empty()) out += ",\"stop_reason\":" + json_fields::dump(c.stop_reason);
  if (ctx_.prompt_logprobs >= 0) {
    out += ",\"prompt_logprobs\":";
    out += prompt_logprobs_text(prompt);
  }
  out += '}';
  return out;
}

bool ResponseBuilder::next_body_piece(std::string* piece) {
  const bool chat = ctx_.kind == ApiKind::kChat;
  const size_t at = body_cursor_++;
  if (at == 0) {
    const json head = {{"id", ctx_.id},
                       {"object", chat ? "chat.completion" : "text_completion"},
                       {"created", ctx_.created},
                       {"model", ctx_.model}};
    *piece = json_fields::dump(head);
    piece->back() = ',';  // the object goes on: its choices follow
    *piece += "\"choices\":[";
    return true;
  }
  if (at <= choices_.size()) {
    const size_t i = at - 1;
    *piece = i == 0 ? "" : ",";
    *piece += chat ? json_fields::dump(chat_choice(i)) : completion_choice(i);
    return true;
  }
  if (at == choices_.size() + 1) {
    *piece = "],\"usage\":" + json_fields::dump(usage_json(total_usage()));
    // vLLM puts a chat request's prompt logprobs beside its choices.
    if (chat && ctx_.prompt_logprobs >= 0)
      *piece += ",\"prompt_logprobs\":" + prompt_logprobs_text(0);
    // A producer's prefill: the handoff a P/D router relays to the decode leg (vLLM's field).
    if (kv_transfer_params_) {
      *piece += ",\"kv_transfer_params\":" + json_fields::dump(*kv_transfer_params_);
    }
    *piece += '}';
    return true;
  }
  return false;
}

std::string ResponseBuilder::final_body() {
  std::string body, piece;
  while (next_body_piece(&piece)) body += piece;
  return body;
}

json ResponseBuilder::final_response() {
  return json::parse(final_body());
}

}  // namespace llmserve
