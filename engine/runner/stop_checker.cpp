#include "engine/runner/stop_checker.h"

#include <algorithm>

namespace llmserve {

std::vector<int32_t> config_eos_ids(const ModelConfig& cfg) {
  std::vector<int32_t> ids = cfg.eos_ids;
  if (ids.empty() && cfg.eos_id >= 0) ids.push_back(cfg.eos_id);
  return ids;
}

std::vector<int32_t> generation_eos_ids(const Tokenizer& tokenizer, const ModelConfig& cfg) {
  const std::vector<int32_t>& ids = tokenizer.spec().stop_ids;
  return ids.empty() ? config_eos_ids(cfg) : ids;
}

StopChecker::StopChecker(const Tokenizer& tokenizer, const SamplingParams& params,
                         std::span<const int32_t> eos_ids, int32_t max_new_tokens,
                         std::span<const int32_t> context, bool constrained)
    : detokenizer_(tokenizer, params.skip_special_tokens, context),
      eos_ids_(eos_ids.begin(), eos_ids.end()),
      stop_token_ids_(params.stop_token_ids),
      ignore_eos_(params.ignore_eos),
      constrained_(constrained),
      include_stop_(params.include_stop_str_in_output),
      min_tokens_(params.min_tokens),
      max_new_tokens_(max_new_tokens) {
  for (const std::string& s : params.stop) {
    if (!s.empty()) stop_strings_.push_back(s);
  }
}

bool StopChecker::is_stop_token(int32_t token_id) const {
  auto has = [token_id](const std::vector<int32_t>& v) {
    return std::find(v.begin(), v.end(), token_id) != v.end();
  };
  return has(stop_token_ids_) || (!ignore_eos_ && has(eos_ids_));
}

bool StopChecker::is_eos(int32_t token_id) const {
  return std::find(eos_ids_.begin(), eos_ids_.end(), token_id) != eos_ids_.end();
}

OutputDelta StopChecker::append(int32_t token_id) {
  OutputDelta out;
  if (finished()) return out;
  ++num_tokens_;
  const bool stops_active = num_tokens_ > min_tokens_;
  if ((constrained_ && is_eos(token_id)) || (stops_active && is_stop_token(token_id))) {
    if (include_stop_) add_text(detokenizer_.append(token_id), false, out);
    if (!finished()) {
      add_text(detokenizer_.flush(), true, out);
      if (!finished()) finish(FinishReason::kStop, std::to_string(token_id), out);
    }
    return out;
  }
  add_text(detokenizer_.append(token_id), false, out);
  if (!finished() && num_tokens_ >= max_new_tokens_) {
    add_text(detokenizer_.flush(), true, out);
    if (!finished()) finish(FinishReason::kLength, {}, out);
  }
  return out;
}

std::string StopChecker::flush() {
  if (finished()) return {};
  OutputDelta out;
  add_text(detokenizer_.flush(), true, out);
  return std::move(out.text);
}

void StopChecker::add_text(std::string_view delta, bool final, OutputDelta& out) {
  const size_t old_size = text_.size();
  text_.append(delta);
  if (num_tokens_ > min_tokens_ && !stop_strings_.empty() && !delta.empty()) {
    size_t best = std::string::npos;
    const std::string* match = nullptr;
    for (const std::string& s : stop_strings_) {
      // Only matches that end inside the new text; earlier text was checked already.
      const size_t from = old_size + 1 > s.size() ? old_size + 1 - s.size() : 0;
      const size_t pos = text_.find(s, from);
      if (pos != std::string::npos && pos < best) {
        best = pos;
        match = &s;
      }
    }
    if (match != nullptr) {
      text_.resize(std::max(include_stop_ ? best + match->size() : best, emitted_));
      finish(FinishReason::kStop, *match, out);
      return;
    }
  }
  const size_t safe = final ? text_.size() : text_.size() - hold_back();
  if (safe > emitted_) {
    out.text.append(text_, emitted_, safe - emitted_);
    emitted_ = safe;
  }
}

// The longest suffix of the unemitted text that is a proper prefix of some stop string.
size_t StopChecker::hold_back() const {
  if (include_stop_) return 0;
  const std::string_view pending = std::string_view(text_).substr(emitted_);
  size_t longest = 0;
  for (const std::string& s : stop_strings_) {
    for (size_t k = std::min(s.size() - 1, pending.size()); k > longest; --k) {
      if (pending.ends_with(std::string_view(s).substr(0, k))) {
        longest = k;
        break;
      }
    }
  }
  return longest;
}

void StopChecker::finish(FinishReason reason, std::string stop_reason, OutputDelta& out) {
  if (text_.size() > emitted_) {
    out.text.append(text_, emitted_, std::string::npos);
    emitted_ = text_.size();
  }
  finish_ = reason;
  out.finish = reason;
  out.stop_reason = std::move(stop_reason);
}

}  // namespace llmserve
