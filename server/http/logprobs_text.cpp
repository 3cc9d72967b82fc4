#include "server/http/logprobs_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <vector>

#include <nlohmann/json.hpp>

namespace llmserve {

namespace {

std::string quoted(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void append_int(std::string* out, int64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, r.ptr);
}

}  // namespace

std::string TokenTexts::bytes(int32_t id) const {
  return tokenizer_ ? tokenizer_->token_bytes(id) : std::to_string(id);
}

const std::string& TokenTexts::json_string(int32_t id) {
  auto it = json_.find(id);
  if (it == json_.end()) it = json_.emplace(id, quoted(bytes(id))).first;
  return it->second;
}

void append_json_number(std::string* out, double v) {
  if (!std::isfinite(v)) {
    out->append("null");
    return;
  }
  char buf[40];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  const std::string_view s(buf, static_cast<size_t>(r.ptr - buf));
  out->append(s);
  // nlohmann marks a float that prints as an integer with ".0".
  if (s.find_first_of(".e") == std::string_view::npos) out->append(".0");
}

void append_prompt_logprobs(std::string* out, std::span<const TokenLogprob> lps, size_t top_n,
                            TokenTexts& texts) {
  auto entry = [&](int32_t id, float logprob, int64_t rank) {
    out->push_back('"');
    append_int(out, id);
    out->append("\":{\"logprob\":");
    append_json_number(out, logprob);
    out->append(",\"rank\":");
    append_int(out, rank);
    out->append(",\"decoded_token\":");
    out->append(texts.json_string(id));
    out->push_back('}');
  };
  out->append("[null");  // the first prompt token has no context to be scored from
  for (const TokenLogprob& lp : lps) {
    out->append(",{");
    entry(lp.token_id, lp.logprob, lp.rank);
    for (size_t j = 0; j < std::min(top_n, lp.top.size()); ++j) {
      if (lp.top[j].token_id == lp.token_id) continue;  // written first already
      out->push_back(',');
      entry(lp.top[j].token_id, lp.top[j].logprob, static_cast<int64_t>(j) + 1);
    }
    out->push_back('}');
  }
  out->push_back(']');
}

void append_legacy_logprobs(std::string* out, std::span<const LegacyLogprobsPart> parts,
                            const std::string* first_token, TokenTexts& texts) {
  // One array per key: each walks the parts once, a comma before every item but the first.
  auto array = [&](const char* key, auto&& first_item, auto&& item) {
    out->append(key);
    out->push_back('[');
    bool any = false;
    if (first_token != nullptr) {
      first_item();
      any = true;
    }
    for (const LegacyLogprobsPart& part : parts) {
      for (size_t i = 0; i < part.lps.size(); ++i) {
        if (any) out->push_back(',');
        any = true;
        item(part, i);
      }
    }
    out->push_back(']');
  };
  array(
      "{\"tokens\":", [&] { out->append(quoted(*first_token)); },
      [&](const LegacyLogprobsPart& p, size_t i) {
        out->append(texts.json_string(p.lps[i].token_id));
      });
  array(
      ",\"token_logprobs\":", [&] { out->append("null"); },
      [&](const LegacyLogprobsPart& p, size_t i) { append_json_number(out, p.lps[i].logprob); });
  array(
      ",\"top_logprobs\":", [&] { out->append("null"); },
      [&](const LegacyLogprobsPart& p, size_t i) {
        // Keyed by text: two ids with the same text keep the first (the more likely).
        std::vector<std::string> keys;
        out->push_back('{');
        bool any = false;
        const auto& top = p.lps[i].top;
        for (size_t j = 0; j < std::min(p.top_n, top.size()); ++j) {
          std::string key = texts.bytes(top[j].token_id);
          if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
          keys.push_back(std::move(key));
          if (any) out->push_back(',');
          any = true;
          out->append(texts.json_string(top[j].token_id));
          out->push_back(':');
          append_json_number(out, top[j].logprob);
        }
        out->push_back('}');
      });
  array(
      ",\"text_offset\":", [&] { out->push_back('0'); },
      [&](const LegacyLogprobsPart& p, size_t i) {
        const size_t at = i < p.offsets.size() ? p.offsets[i] : 0;
        append_int(out, static_cast<int64_t>(at + p.offset_shift));
      });
  out->push_back('}');
}

}  // namespace llmserve
