#include "bench/serve/sse_parser.h"

namespace llmserve::bench {

void SseParser::feed(std::string_view bytes) {
  for (char c : bytes) {
    if (after_cr_) {
      after_cr_ = false;
      if (c == '\n') continue;
    }
    if (c == '\r' || c == '\n') {
      after_cr_ = c == '\r';
      process_line();
      line_.clear();
      continue;
    }
    line_.push_back(c);
    if (at_start_ && line_.size() == 3) {
      if (line_ == "\xEF\xBB\xBF") line_.clear();
      at_start_ = false;
    }
  }
}

void SseParser::process_line() {
  at_start_ = false;
  if (line_.empty()) {
    if (has_data_) {
      SseEvent ev{std::move(event_), std::move(data_)};
      if (!ev.data.empty() && ev.data.back() == '\n') ev.data.pop_back();
      on_event_(ev);
    }
    data_.clear();
    event_.clear();
    has_data_ = false;
    return;
  }
  if (line_.front() == ':') return;
  std::string_view line(line_);
  std::string_view field = line;
  std::string_view value;
  if (const size_t colon = line.find(':'); colon != std::string_view::npos) {
    field = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field == "data") {
    data_.append(value);
    data_.push_back('\n');
    has_data_ = true;
  } else if (field == "event") {
    event_.assign(value);
  }
}

}  // namespace llmserve::bench
