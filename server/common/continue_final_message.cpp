#include "server/common/continue_final_message.h"

#include "server/common/field_checks.h"

namespace llmserve {

namespace {

std::string_view strip(std::string_view s) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

Result<std::string> cut_after_final_message(std::string_view rendered, std::string_view content) {
  const std::string_view core = strip(content);
  if (core.empty()) {
    return field_error("continue_final_message",
                       "the final assistant message has no content to continue");
  }
  if (const size_t at = rendered.rfind(content); at != std::string_view::npos) {
    return std::string(rendered.substr(0, at + content.size()));
  }
  const size_t at = rendered.rfind(core);
  if (at == std::string_view::npos) {
    return field_error("continue_final_message",
                       "the chat template does not write the final message's content, so it "
                       "cannot be continued");
  }
  // The template trimmed the content: its trailing spaces are not put back.
  return std::string(rendered.substr(0, at + core.size()));
}

}  // namespace llmserve
