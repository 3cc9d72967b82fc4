#include "server/common/cut_json.h"

namespace llmserve {

namespace {

bool is_space(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

size_t skip_space(std::string_view text, size_t pos) {
  while (pos < text.size() && is_space(text[pos])) ++pos;
  return pos;
}

}  // namespace

std::optional<size_t> first_member_value(std::string_view text, std::string_view key) {
  size_t pos = skip_space(text, 0);
  if (pos >= text.size() || text[pos] != '{') return std::nullopt;
  pos = skip_space(text, pos + 1);
  const std::string quoted = "\"" + std::string(key) + "\"";
  if (text.substr(pos, quoted.size()) != quoted) return std::nullopt;
  pos = skip_space(text, pos + quoted.size());
  if (pos >= text.size() || text[pos] != ':') return std::nullopt;
  pos = skip_space(text, pos + 1);
  if (pos >= text.size()) return std::nullopt;
  return pos;
}

std::vector<nlohmann::ordered_json> complete_array_items(std::string_view text, size_t open) {
  std::vector<nlohmann::ordered_json> items;
  if (open >= text.size() || text[open] != '[') return items;
  constexpr size_t kNone = std::string_view::npos;
  size_t start = kNone;  // where the element being read began
  int depth = 0;         // nesting inside the element (0: at the array's own level)
  bool in_string = false, escaped = false;
  auto finish = [&](size_t end) {
    const auto j = nlohmann::ordered_json::parse(text.substr(start, end - start), nullptr,
                                                 /*allow_exceptions=*/false);
    if (!j.is_discarded()) items.push_back(j);
    start = kNone;
  };
  for (size_t i = open + 1; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
        if (depth == 0) finish(i + 1);
      }
      continue;
    }
    if (is_space(c)) continue;
    switch (c) {
      case '"':
        if (depth == 0 && start == kNone) start = i;
        in_string = true;
        break;
      case '{':
      case '[':
        if (depth == 0 && start == kNone) start = i;
        ++depth;
        break;
      case '}':
      case ']':
        if (depth == 0) {  // the array's own ']' (a '}' here is not JSON: stop)
          if (c == ']' && start != kNone) finish(i);
          return items;
        }
        if (--depth == 0) finish(i + 1);
        break;
      case ',':
        if (depth == 0 && start != kNone) finish(i);
        break;
      default:
        if (depth == 0 && start == kNone) start = i;
        break;
    }
  }
  return items;
}

std::optional<std::string> string_prefix(std::string_view text, size_t open) {
  if (open >= text.size() || text[open] != '"') return std::nullopt;
  bool escaped = false;
  for (size_t i = open + 1; i < text.size(); ++i) {
    if (escaped) {
      escaped = false;
    } else if (text[i] == '\\') {
      escaped = true;
    } else if (text[i] == '"') {
      const auto j = nlohmann::json::parse(text.substr(open, i + 1 - open), nullptr, false);
      if (j.is_string()) return j.get<std::string>();
      return std::nullopt;
    }
  }
  // Cut inside the string: close it, dropping what a cut left half-made (an escape such as
  // "\u00", a lone high surrogate "\ud83d", a UTF-8 character missing its last bytes).
  std::string body(text.substr(open));
  for (int dropped = 0; dropped <= 12 && body.size() >= 1; ++dropped) {
    const auto j = nlohmann::json::parse(body + "\"", nullptr, false);
    if (j.is_string()) return j.get<std::string>();
    body.pop_back();
  }
  return std::nullopt;
}

}  // namespace llmserve
