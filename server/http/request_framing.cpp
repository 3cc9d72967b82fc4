#include "server/http/request_framing.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <vector>

namespace llmserve {

namespace {

bool is_token_char(char c) {
  if (std::isalnum(static_cast<unsigned char>(c))) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// The head's lines without their line ends (the blank last line excluded).
std::vector<std::string_view> head_lines(std::string_view head) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < head.size()) {
    size_t end = head.find('\n', start);
    if (end == std::string_view::npos) end = head.size();
    std::string_view line = head.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) break;
    lines.push_back(line);
    start = end + 1;
  }
  return lines;
}

// A Content-Length value: one or more comma-separated decimal lengths, all equal (RFC 9110
// section 8.6). nullopt when invalid; UINT64_MAX when too large to represent.
std::optional<uint64_t> parse_content_length(std::string_view value) {
  std::optional<uint64_t> result;
  size_t start = 0;
  while (start <= value.size()) {
    size_t comma = value.find(',', start);
    if (comma == std::string_view::npos) comma = value.size();
    const std::string_view item = trim(value.substr(start, comma - start));
    if (item.empty()) return std::nullopt;
    uint64_t n = 0;
    for (char c : item) {
      if (c < '0' || c > '9') return std::nullopt;
      const uint64_t digit = static_cast<uint64_t>(c - '0');
      n = n > (UINT64_MAX - digit) / 10 ? UINT64_MAX : n * 10 + digit;
    }
    if (result && *result != n) return std::nullopt;
    result = n;
    start = comma + 1;
  }
  return result;
}

}  // namespace

bool RequestHeadScanner::scan(std::string_view data, RequestHead* head, FramingError* error) {
  const size_t limit = std::min(data.size(), limits_.max_head_bytes);
  for (size_t i = scanned_; i < limit; ++i) {
    if (data[i] != '\n') continue;
    size_t end = i;
    if (end > line_start_ && data[end - 1] == '\r') --end;
    const bool empty = end == line_start_;
    line_start_ = i + 1;
    if (empty) {
      scanned_ = i + 1;
      if (lines_ == 0) {
        *error = {400, "the request line is empty"};
        return true;
      }
      return parse(data.substr(0, i + 1), head, error);
    }
    if (++lines_ - 1 > limits_.max_header_count) {
      *error = {431, "more than " + std::to_string(limits_.max_header_count) + " header fields"};
      return true;
    }
  }
  scanned_ = limit;
  if (data.size() >= limits_.max_head_bytes) {
    *error = {431, "request head larger than " + std::to_string(limits_.max_head_bytes) + " bytes"};
    return true;
  }
  return false;
}

bool RequestHeadScanner::parse(std::string_view text, RequestHead* head,
                               FramingError* error) const {
  const std::vector<std::string_view> lines = head_lines(text);
  const std::string_view request_line = lines.empty() ? std::string_view() : lines[0];
  const size_t sp1 = request_line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : request_line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || sp1 == 0 || sp2 == sp1 + 1 ||
      request_line.find(' ', sp2 + 1) != std::string_view::npos) {
    *error = {400, "malformed request line"};
    return true;
  }
  const std::string_view method = request_line.substr(0, sp1);
  if (!std::all_of(method.begin(), method.end(), is_token_char)) {
    *error = {400, "malformed request method"};
    return true;
  }
  if (request_line.substr(sp2 + 1).substr(0, 7) != "HTTP/1.") {
    *error = {505, "only HTTP/1.0 and HTTP/1.1 are served"};
    return true;
  }
  RequestHead h;
  h.head_bytes = text.size();
  h.method = std::string(method);
  h.target = std::string(request_line.substr(sp1 + 1, sp2 - sp1 - 1));
  h.header_count = static_cast<int>(lines.size()) - 1;

  std::optional<uint64_t> content_length;
  bool has_content_length = false;
  std::string transfer_encoding;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string_view line = lines[i];
    if (line.front() == ' ' || line.front() == '\t') {
      *error = {400, "obsolete line folding in header field " + std::to_string(i)};
      return true;
    }
    const size_t colon = line.find(':');
    const std::string_view name = line.substr(0, colon);
    if (colon == std::string_view::npos || colon == 0 ||
        !std::all_of(name.begin(), name.end(), is_token_char)) {
      *error = {400, "malformed header field " + std::to_string(i)};
      return true;
    }
    const std::string_view value = trim(line.substr(colon + 1));
    if (iequals(name, "content-length")) {
      const std::optional<uint64_t> n = parse_content_length(value);
      if (!n || (has_content_length && content_length != n)) {
        *error = {400, has_content_length && n
                           ? "conflicting Content-Length header fields"
                           : "invalid Content-Length '" + std::string(value.substr(0, 64)) + "'"};
        return true;
      }
      has_content_length = true;
      content_length = n;
    } else if (iequals(name, "transfer-encoding")) {
      if (!transfer_encoding.empty()) transfer_encoding += ",";
      transfer_encoding += std::string(value);
    } else if (iequals(name, "expect")) {
      h.expect_continue = iequals(value, "100-continue");
    }
  }
  if (!transfer_encoding.empty()) {
    if (has_content_length) {
      *error = {400, "both Transfer-Encoding and Content-Length are set"};
      return true;
    }
    if (!iequals(trim(transfer_encoding), "chunked")) {
      *error = {501, "Transfer-Encoding '" + transfer_encoding.substr(0, 64) +
                         "' is not supported (only chunked)"};
      return true;
    }
    h.body = BodyFraming::kChunked;
  } else if (has_content_length) {
    if (*content_length > limits_.max_body_bytes) {
      *error = {413, "request body is larger than the limit of " +
                         std::to_string(limits_.max_body_bytes) + " bytes"};
      return true;
    }
    h.body = BodyFraming::kLength;
    h.content_length = *content_length;
  }
  *head = std::move(h);
  return true;
}

std::string rewrite_head(std::string_view head_text, uint64_t content_length) {
  const std::vector<std::string_view> lines = head_lines(head_text);
  std::string out;
  out.reserve(head_text.size() + 32);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) {
      const std::string_view name = lines[i].substr(0, lines[i].find(':'));
      if (iequals(name, "transfer-encoding") || iequals(name, "content-length") ||
          iequals(name, "expect")) {
        continue;
      }
    }
    out.append(lines[i]).append("\r\n");
  }
  out.append("Content-Length: ").append(std::to_string(content_length)).append("\r\n\r\n");
  return out;
}

ChunkedBodyDecoder::Result ChunkedBodyDecoder::fail(int status, std::string message) {
  error_ = {status, std::move(message)};
  return Result::kError;
}

ChunkedBodyDecoder::Result ChunkedBodyDecoder::feed(std::string_view data, size_t* consumed) {
  constexpr size_t kMaxLineBytes = 4096;
  constexpr size_t kMaxTrailerBytes = 8192;
  size_t i = 0;
  while (i < data.size() && state_ != State::kDone) {
    const char c = data[i];
    switch (state_) {
      case State::kSize:
        if (std::isxdigit(static_cast<unsigned char>(c))) {
          if (++size_digits_ > 15) return fail(413, "chunk size too large");
          const int v = std::isdigit(static_cast<unsigned char>(c))
                            ? c - '0'
                            : std::tolower(static_cast<unsigned char>(c)) - 'a' + 10;
          chunk_left_ = chunk_left_ * 16 + static_cast<uint64_t>(v);
        } else if (size_digits_ > 0 && (c == ';' || c == ' ' || c == '\t')) {
          state_ = State::kExtension;
        } else if (size_digits_ > 0 && (c == '\r' || c == '\n')) {
          state_ = c == '\r' ? State::kSizeLf : State::kData;
        } else {
          return fail(400, "malformed chunk size");
        }
        break;
      case State::kExtension:
        if (++line_bytes_ > kMaxLineBytes) return fail(400, "chunk extension too long");
        if (c == '\r') state_ = State::kSizeLf;
        if (c == '\n') state_ = State::kData;
        break;
      case State::kSizeLf:
        if (c != '\n') return fail(400, "malformed chunk size line");
        state_ = State::kData;
        break;
      case State::kData: {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk_left_, data.size() - i));
        body_.append(data.substr(i, n));
        chunk_left_ -= n;
        i += n;
        if (chunk_left_ == 0) state_ = State::kDataCr;
        continue;
      }
      case State::kDataCr:
        if (c == '\r') {
          state_ = State::kDataLf;
        } else if (c == '\n') {
          state_ = State::kSize;
        } else {
          return fail(400, "chunk data longer than its size");
        }
        break;
      case State::kDataLf:
        if (c != '\n') return fail(400, "chunk data longer than its size");
        state_ = State::kSize;
        break;
      case State::kTrailer:
        if (++trailer_bytes_ > kMaxTrailerBytes) return fail(400, "chunked trailer too long");
        if (c == '\n') {
          if (trailer_line_empty_) state_ = State::kDone;
          trailer_line_empty_ = true;
        } else if (c != '\r') {
          trailer_line_empty_ = false;
        }
        break;
      case State::kDone:
        break;
    }
    ++i;
    // The end of a size line: the next state is chosen by the chunk's size.
    if (state_ == State::kData && chunk_left_ == 0 && size_digits_ > 0) {
      state_ = State::kTrailer;
    }
    if (state_ == State::kData && size_digits_ > 0) {
      if (body_.size() + chunk_left_ > max_body_bytes_) {
        return fail(413, "request body is larger than the limit of " +
                             std::to_string(max_body_bytes_) + " bytes");
      }
      size_digits_ = 0;
      line_bytes_ = 0;
    }
  }
  *consumed = i;
  return state_ == State::kDone ? Result::kDone : Result::kNeedMore;
}

}  // namespace llmserve
