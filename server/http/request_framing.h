// HTTP/1.1 request framing (RFC 9112) as the connection guard needs it before any worker sees
// a request: where the head ends, how long the body is, and the framing errors that must be
// answered at once (conflicting Content-Length, oversized heads, bodies over the limit).
// Incremental: each call sees the bytes it saw before plus new ones, and scans only the new ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace llmserve {

struct FramingLimits {
  size_t max_head_bytes = 64 << 10;  // request line + headers + blank line
  int max_header_count = 100;
  uint64_t max_body_bytes = 8u << 20;
};

enum class BodyFraming { kNone, kLength, kChunked };

struct RequestHead {
  size_t head_bytes = 0;  // through the blank line
  std::string method;
  std::string target;  // as sent (path and query)
  BodyFraming body = BodyFraming::kNone;
  uint64_t content_length = 0;  // kLength
  int header_count = 0;
  bool expect_continue = false;  // "Expect: 100-continue"
  std::string path() const { return target.substr(0, target.find('?')); }
};

// A framing error: the status to answer with (400, 413, 431, 501) and what was wrong.
struct FramingError {
  int status = 0;
  std::string message;
  explicit operator bool() const { return status != 0; }
};

class RequestHeadScanner {
 public:
  explicit RequestHeadScanner(FramingLimits limits) : limits_(limits) {}

  // `data` starts at the request's first byte. True once the head is complete (then `head`
  // is filled) or on an error (then `error` is set); false while more bytes are needed.
  bool scan(std::string_view data, RequestHead* head, FramingError* error);

 private:
  bool parse(std::string_view head_text, RequestHead* head, FramingError* error) const;

  FramingLimits limits_;
  size_t scanned_ = 0;
  size_t line_start_ = 0;
  int lines_ = 0;
};

// The head rebuilt for a worker: Transfer-Encoding and Expect removed, Content-Length set to
// `content_length`, lines ended by CRLF. For chunked bodies (decoded by the guard) and
// "Expect: 100-continue" (answered by the guard).
std::string rewrite_head(std::string_view head_text, uint64_t content_length);

// Decodes a chunked body incrementally (RFC 9112 section 7.1; extensions and trailers skipped).
class ChunkedBodyDecoder {
 public:
  explicit ChunkedBodyDecoder(uint64_t max_body_bytes) : max_body_bytes_(max_body_bytes) {}

  enum class Result { kNeedMore, kDone, kError };
  // Consumes `data` (bytes not fed before) up to the end of the body; `*consumed` says how
  // many (the rest belongs to the next request).
  Result feed(std::string_view data, size_t* consumed);
  const std::string& body() const { return body_; }
  const FramingError& error() const { return error_; }

 private:
  enum class State { kSize, kExtension, kSizeLf, kData, kDataCr, kDataLf, kTrailer, kDone };
  Result fail(int status, std::string message);

  uint64_t max_body_bytes_;
  State state_ = State::kSize;
  uint64_t chunk_left_ = 0;
  int size_digits_ = 0;
  size_t line_bytes_ = 0;
  size_t trailer_bytes_ = 0;
  bool trailer_line_empty_ = true;
  std::string body_;
  FramingError error_;
};

}  // namespace llmserve
