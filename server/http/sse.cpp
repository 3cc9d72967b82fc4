#include "server/http/sse.h"

#include "server/http/json_fields.h"

namespace llmserve::sse {

std::string event(const nlohmann::json& payload) {
  return "data: " + json_fields::dump(payload) + "\n\n";
}

std::string done() {
  return "data: [DONE]\n\n";
}

std::string comment(std::string_view text) {
  return ": " + std::string(text) + "\n\n";
}

std::vector<std::string> take_events(std::string& buffer) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t end = buffer.find("\n\n", start);
    if (end == std::string::npos) break;
    std::string_view block(buffer.data() + start, end - start);
    std::string data;
    bool has_data = false;
    size_t pos = 0;
    while (pos <= block.size()) {
      size_t nl = block.find('\n', pos);
      if (nl == std::string_view::npos) nl = block.size();
      std::string_view line = block.substr(pos, nl - pos);
      if (line.rfind("data:", 0) == 0) {
        line.remove_prefix(5);
        if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
        if (has_data) data += '\n';
        data += line;
        has_data = true;
      }
      pos = nl + 1;
    }
    if (has_data) out.push_back(std::move(data));
    start = end + 2;
  }
  buffer.erase(0, start);
  return out;
}

}  // namespace llmserve::sse
