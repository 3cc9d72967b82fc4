#include "server/http/openai_response.h"

#include "server/common/kv_transfer_params.h"
#include "server/http/tool_call_response.h"

namespace llmserve {

using nlohmann::json;

json usage_json(const Usage& u) {
  json j = {{"prompt_tokens", u.prompt_tokens},
            {"completion_tokens", u.completion_tokens},
            {"total_tokens", u.prompt_tokens + u.completion_tokens}};
  if (u.cached_prompt_tokens > 0) {
    j["prompt_tokens_details"] = {{"cached_tokens", u.cached_prompt_tokens}};
  }
  return j;
}

ResponseBuilder::ResponseBuilder(ResponseContext ctx)
    : ctx_(std::move(ctx)),
      choices_(ctx_.num_prompts * static_cast<size_t>(std::max(ctx_.n, 1))),
      usage_(ctx_.num_prompts),
      prompt_lps_(ctx_.num_prompts),
      texts_(ctx_.tokenizer) {}

size_t ResponseBuilder::choice_index(size_t prompt_index, const StepOutput& out) const {
  const size_t i = prompt_index * static_cast<size_t>(std::max(ctx_.n, 1)) +
                   static_cast<size_t>(std::max(out.index, 0));
  return i < choices_.size() ? i : choices_.size() - 1;
}

void ResponseBuilder::note_usage(size_t prompt_index, const StepOutput& out) {
  if (prompt_index < usage_.size()) usage_[prompt_index] = out.usage;
  if (!out.prompt_logprobs.empty() && prompt_index < prompt_lps_.size()) {
    prompt_lps_[prompt_index] = out.prompt_logprobs;
  }
  if (out.finish == FinishReason::kError && error_.is_ok()) {
    error_ = out.error.is_ok() ? internal_error("generation failed") : out.error;
  }
}

Usage ResponseBuilder::total_usage() const {
  Usage t;
  for (const auto& u : usage_) {
    t.prompt_tokens += u.prompt_tokens;
    t.completion_tokens += u.completion_tokens;
    t.cached_prompt_tokens += u.cached_prompt_tokens;
  }
  return t;
}

std::string ResponseBuilder::token_string(int32_t id) const {
  return ctx_.tokenizer ? ctx_.tokenizer->token_bytes(id) : std::to_string(id);
}

json ResponseBuilder::logprobs_json(const std::vector<TokenLogprob>& lps,
                                    const std::vector<size_t>& offsets) const {
  if (ctx_.kind == ApiKind::kChat) {
    auto bytes_of = [](const std::string& s) {
      json b = json::array();
      for (unsigned char c : s) b.push_back(static_cast<int>(c));
      return b;
    };
    json content = json::array();
    for (const auto& lp : lps) {
      const std::string tok = token_string(lp.token_id);
      json top = json::array();
      for (const auto& t : lp.top) {
        const std::string ts = token_string(t.token_id);
        top.push_back({{"token", ts}, {"logprob", t.logprob}, {"bytes", bytes_of(ts)}});
      }
      content.push_back({{"token", tok},
                         {"logprob", lp.logprob},
                         {"bytes", bytes_of(tok)},
                         {"top_logprobs", std::move(top)}});
    }
    // The spec requires `refusal` beside `content` (null: this server never refuses).
    return json{{"content", std::move(content)}, {"refusal", nullptr}};
  }
  json tokens = json::array(), token_logprobs = json::array(), top = json::array(),
       text_offset = json::array();
  for (size_t i = 0; i < lps.size(); ++i) {
    tokens.push_back(token_string(lps[i].token_id));
    token_logprobs.push_back(lps[i].logprob);
    json t = json::object();
    for (const auto& x : lps[i].top) t[token_string(x.token_id)] = x.logprob;
    top.push_back(std::move(t));
    text_offset.push_back(i < offsets.size() ? offsets[i] : 0);
  }
  return json{{"tokens", std::move(tokens)},
              {"token_logprobs", std::move(token_logprobs)},
              {"top_logprobs", std::move(top)},
              {"text_offset", std::move(text_offset)}};
}

json concat_logprobs(const json& a, const json& b) {
  json out = a;
  for (const char* key : {"tokens", "token_logprobs", "top_logprobs", "text_offset"}) {
    for (const auto& x : b.at(key)) out[key].push_back(x);
  }
  return out;
}

namespace {

// A streamed piece of reasoning under both names clients read: DeepSeek's and vLLM's.
json reasoning_delta(const std::string& text) {
  return {{"reasoning_content", text}, {"reasoning", text}};
}

}  // namespace

json ResponseBuilder::chunk_base() const {
  json j = {{"id", ctx_.id},
            {"object", ctx_.kind == ApiKind::kChat ? "chat.completion.chunk" : "text_completion"},
            {"created", ctx_.created},
            {"model", ctx_.model},
            {"choices", json::array()}};
  if (ctx_.include_usage) j["usage"] = nullptr;
  return j;
}

std::vector<json> ResponseBuilder::chunks_for(size_t prompt_index, const StepOutput& out) {
  note_usage(prompt_index, out);
  const size_t ci = choice_index(prompt_index, out);
  Choice& c = choices_[ci];
  // Completions with echo: the first chunk of a choice starts with its prompt.
  std::string text = out.text;
  json echo_lp;
  const bool echo_now = ctx_.kind == ApiKind::kCompletion && ctx_.echo && !c.echo_sent;
  if (echo_now) {
    c.echo_sent = true;
    text = echo_text(prompt_index) + text;
    if (ctx_.logprobs >= 0) {
      size_t bytes = 0;
      echo_lp = echo_logprobs(prompt_index, &bytes);
      c.bytes += bytes;
    }
  }
  std::vector<size_t> offsets;
  for (const auto& lp : out.logprobs) {
    offsets.push_back(c.bytes);
    c.bytes += token_string(lp.token_id).size();
  }
  const bool want_lp = ctx_.logprobs >= 0 && !out.logprobs.empty();
  const bool finished = out.finish != FinishReason::kNone;
  std::vector<json> chunks;
  if (ctx_.kind == ApiKind::kChat) {
    if (!c.role_sent) {
      json j = chunk_base();
      j["choices"].push_back({{"index", ci},
                              {"delta", {{"role", "assistant"}, {"content", ""}}},
                              {"logprobs", nullptr},
                              {"finish_reason", nullptr}});
      chunks.push_back(std::move(j));
      c.role_sent = true;
    }
    std::string finish = finished ? finish_reason_name(out.finish) : "";
    // This output's deltas: reasoning, then content (held back with tools); logprobs go with
    // the first one.
    std::vector<json> deltas;
    std::string content = out.text;
    if (ctx_.reasoning != ReasoningStart::kOff) {
      if (!c.splitter) c.splitter.emplace(ctx_.reasoning);
      ReasoningPieces p = c.splitter->feed(out.text);
      if (finished) {
        ReasoningPieces tail = c.splitter->finish();
        p.reasoning += tail.reasoning;
        p.content += tail.content;
      }
      if (!p.reasoning.empty()) deltas.push_back(reasoning_delta(p.reasoning));
      content = std::move(p.content);
    }
    if (ctx_.tools) {
      c.held += content;
    } else if (!content.empty()) {
      deltas.push_back({{"content", content}});
    }
    if (deltas.empty() && want_lp) {
      deltas.push_back(ctx_.tools ? json::object() : json{{"content", ""}});
    }
    for (size_t k = 0; k < deltas.size(); ++k) {
      json j = chunk_base();
      j["choices"].push_back(
          {{"index", ci},
           {"delta", std::move(deltas[k])},
           {"logprobs", k == 0 && want_lp ? logprobs_json(out.logprobs, offsets) : json()},
           {"finish_reason", nullptr}});
      chunks.push_back(std::move(j));
    }
    if (ctx_.tools) {
      if (finished) {
        const ToolReply reply =
            parse_tool_reply(c.held, tool_call_id_seed(ctx_.id, ci), ctx_.tool_format);
        // A reply cut short (length, timeout) keeps its reason: calls may be missing.
        if (reply.is_call() && out.finish == FinishReason::kStop) finish = "tool_calls";
        for (json& delta : tool_reply_deltas(reply)) {
          json j = chunk_base();
          j["choices"].push_back({{"index", ci},
                                  {"delta", std::move(delta)},
                                  {"logprobs", nullptr},
                                  {"finish_reason", nullptr}});
          chunks.push_back(std::move(j));
        }
      }
    }
    if (finished) {
      json j = chunk_base();
      j["choices"].push_back({{"index", ci},
                              {"delta", json::object()},
                              {"logprobs", nullptr},
                              {"finish_reason", finish}});
      chunks.push_back(std::move(j));
    }
    return chunks;
  }
  if (!text.empty() || want_lp || finished || !echo_lp.is_null()) {
    json j = chunk_base();
    json lp = want_lp ? logprobs_json(out.logprobs, offsets) : json();
    if (!echo_lp.is_null()) lp = lp.is_null() ? echo_lp : concat_logprobs(echo_lp, lp);
    json choice = {{"index", ci},
                   {"text", text},
                   {"logprobs", std::move(lp)},
                   {"finish_reason", finished ? json(finish_reason_name(out.finish)) : json()}};
    if (finished && !out.stop_reason.empty()) choice["stop_reason"] = out.stop_reason;
    j["choices"].push_back(std::move(choice));
    chunks.push_back(std::move(j));
  }
  return chunks;
}

std::optional<json> ResponseBuilder::usage_chunk() const {
  if (!ctx_.include_usage) return std::nullopt;
  json j = chunk_base();
  j["usage"] = usage_json(total_usage());
  return j;
}

void ResponseBuilder::accumulate(size_t prompt_index, const StepOutput& out) {
  note_usage(prompt_index, out);
  Choice& c = choices_[choice_index(prompt_index, out)];
  for (const auto& lp : out.logprobs) {
    c.text_offsets.push_back(c.bytes);
    c.bytes += token_string(lp.token_id).size();
    c.logprobs.push_back(lp);
  }
  c.text += out.text;
  if (out.finish != FinishReason::kNone) {
    c.finish = out.finish;
    c.stop_reason = out.stop_reason;
  }
  if (out.kv_handoff) kv_transfer_params_ = kv_transfer_params_json(*out.kv_handoff);
}

json ResponseBuilder::chat_choice(size_t i) const {
  const Choice& c = choices_[i];
  const json finish = c.finish == FinishReason::kNone ? json() : json(finish_reason_name(c.finish));
  const json lp = ctx_.logprobs >= 0 ? logprobs_json(c.logprobs, c.text_offsets) : json();
  const bool reasoning = ctx_.reasoning != ReasoningStart::kOff;
  const ReasoningPieces pieces =
      reasoning ? split_reasoning(c.text, ctx_.reasoning) : ReasoningPieces{std::string(), c.text};
  // `refusal` is required by the spec (null: no refusal).
  json message = {{"role", "assistant"}, {"content", pieces.content}, {"refusal", nullptr}};
  json reason = finish;
  if (ctx_.tools) {
    const ToolReply reply =
        parse_tool_reply(pieces.content, tool_call_id_seed(ctx_.id, i), ctx_.tool_format);
    message["content"] = reply.content;
    if (reply.is_call()) {
      if (reply.content.empty()) message["content"] = nullptr;
      message["tool_calls"] = tool_calls_json(reply.calls);
      // A reply cut short (length, timeout) keeps its reason: calls may be missing.
      if (c.finish == FinishReason::kStop) reason = "tool_calls";
    }
  }
  if (reasoning) {
    // vLLM's and DeepSeek's shape: no content after the reasoning is null, not "".
    const json r = pieces.reasoning.empty() ? json() : json(pieces.reasoning);
    if (!r.is_null() && message["content"] == "") message["content"] = nullptr;
    message["reasoning_content"] = r;
    message["reasoning"] = r;
  }
  return {
      {"index", i}, {"message", std::move(message)}, {"logprobs", lp}, {"finish_reason", reason}};
}

}  // namespace llmserve
