// Incremental parser for text/event-stream (the WHATWG server-sent events format). Bytes go in
// as they arrive, split anywhere (even between "\r" and "\n"); each complete event comes out once
// with its data lines joined by '\n'. Comments (":" lines), "id" and "retry" are ignored.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace llmserve::bench {

struct SseEvent {
  std::string event;  // the "event:" field; empty means "message"
  std::string data;   // data lines joined with '\n' (no trailing newline)
};

class SseParser {
 public:
  using EventFn = std::function<void(const SseEvent&)>;

  explicit SseParser(EventFn on_event) : on_event_(std::move(on_event)) {}

  // Consumes any number of bytes; calls on_event for every event completed by them.
  void feed(std::string_view bytes);

  // Bytes buffered in an unfinished line (diagnostics; an unterminated event is dropped at EOF).
  size_t pending_bytes() const { return line_.size(); }

 private:
  void process_line();

  EventFn on_event_;
  std::string line_;
  std::string data_;
  std::string event_;
  bool has_data_ = false;
  bool after_cr_ = false;  // the last byte seen was '\r': a following '\n' belongs to it
  bool at_start_ = true;   // a UTF-8 BOM is skipped at the start of the stream
};

}  // namespace llmserve::bench
