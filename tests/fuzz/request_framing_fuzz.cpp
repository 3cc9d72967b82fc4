// HTTP request framing (server/http/request_framing.h): the head scanner fed the input in
// pieces, and the chunked-body decoder fed what follows the head. Byte 0 picks the piece size.
// Checks: results do not depend on how the bytes are split, lengths stay in bounds, and a
// rewritten head scans back to the same request with the length it was given.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "server/http/request_framing.h"

namespace {

using llmserve::BodyFraming;
using llmserve::ChunkedBodyDecoder;
using llmserve::FramingError;
using llmserve::FramingLimits;
using llmserve::RequestHead;
using llmserve::RequestHeadScanner;

void check(bool ok) {
  if (!ok) std::abort();
}

struct Outcome {
  bool done = false;
  RequestHead head;
  FramingError error;
};

Outcome scan_in_pieces(std::string_view data, size_t piece, const FramingLimits& limits) {
  RequestHeadScanner scanner(limits);
  Outcome o;
  for (size_t n = std::min(piece, data.size()); !o.done; n = std::min(n + piece, data.size())) {
    o.done = scanner.scan(data.substr(0, n), &o.head, &o.error);
    if (n == data.size()) break;
  }
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const size_t piece = 1 + data[0] % 17;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  FramingLimits limits;
  limits.max_head_bytes = 2048;
  limits.max_header_count = 16;
  limits.max_body_bytes = 4096;

  const Outcome whole = scan_in_pieces(text, text.size() + 1, limits);
  const Outcome split = scan_in_pieces(text, piece, limits);
  check(whole.done == split.done && whole.error.status == split.error.status);
  if (!whole.done || whole.error) return 0;
  const RequestHead& h = whole.head;
  check(h.head_bytes <= text.size() && h.head_bytes == split.head.head_bytes);
  check(h.body != BodyFraming::kLength || h.content_length <= limits.max_body_bytes);

  const std::string rewritten = llmserve::rewrite_head(text.substr(0, h.head_bytes), 7);
  const Outcome again = scan_in_pieces(rewritten, rewritten.size() + 1, limits);
  if (!again.error) {
    check(again.done && again.head.method == h.method && again.head.target == h.target);
    check(again.head.body == BodyFraming::kLength && again.head.content_length == 7);
  }

  const std::string_view rest = text.substr(h.head_bytes);
  ChunkedBodyDecoder all(limits.max_body_bytes);
  size_t consumed_all = 0;
  const auto r_all = all.feed(rest, &consumed_all);
  ChunkedBodyDecoder pieces(limits.max_body_bytes);
  size_t consumed = 0;
  auto r = ChunkedBodyDecoder::Result::kNeedMore;
  for (size_t at = 0; at < rest.size() && r == ChunkedBodyDecoder::Result::kNeedMore;) {
    const size_t n = std::min(piece, rest.size() - at);
    size_t used = 0;
    r = pieces.feed(rest.substr(at, n), &used);
    check(used <= n);
    consumed += used;
    at += n;
  }
  check(r == r_all);
  check(all.body().size() <= limits.max_body_bytes);
  if (r_all == ChunkedBodyDecoder::Result::kDone) {
    check(consumed == consumed_all && consumed_all <= rest.size());
    check(all.body() == pieces.body());
  }
  return 0;
}
