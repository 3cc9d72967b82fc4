#include "server/anthropic/volatile_system_lines.h"

namespace llmserve {

std::string strip_volatile_lines(std::string_view text, const std::vector<std::string>& prefixes) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    const size_t next = end == std::string_view::npos ? text.size() : end + 1;
    const std::string_view line = text.substr(pos, next - pos);
    bool drop = false;
    for (const std::string& p : prefixes) {
      if (!p.empty() && line.substr(0, p.size()) == p) {
        drop = true;
        break;
      }
    }
    if (!drop) out.append(line);
    pos = next;
  }
  return out;
}

}  // namespace llmserve
