// Request framing as RFC 9112 defines it: where a head ends, the body's length, and the errors
// that must be answered before any body is read.
#include "server/http/request_framing.h"

#include <gtest/gtest.h>

#include <string>

namespace llmserve {
namespace {

struct Scan {
  bool done = false;
  RequestHead head;
  FramingError error;
};

Scan scan_all(const std::string& data, FramingLimits limits = {}) {
  RequestHeadScanner scanner(limits);
  Scan s;
  s.done = scanner.scan(data, &s.head, &s.error);
  return s;
}

// The same bytes given one at a time end in the same result.
Scan scan_bytewise(const std::string& data, FramingLimits limits = {}) {
  RequestHeadScanner scanner(limits);
  Scan s;
  for (size_t n = 1; n <= data.size() && !s.done; ++n) {
    s.done = scanner.scan(std::string_view(data).substr(0, n), &s.head, &s.error);
  }
  return s;
}

TEST(RequestFraming, HeadWithContentLength) {
  const std::string req =
      "POST /v1/completions?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 12\r\n\r\n{\"prompt\":1}";
  for (const Scan& s : {scan_all(req), scan_bytewise(req)}) {
    ASSERT_TRUE(s.done);
    EXPECT_FALSE(s.error);
    EXPECT_EQ(s.head.method, "POST");
    EXPECT_EQ(s.head.target, "/v1/completions?x=1");
    EXPECT_EQ(s.head.path(), "/v1/completions");
    EXPECT_EQ(s.head.body, BodyFraming::kLength);
    EXPECT_EQ(s.head.content_length, 12u);
    EXPECT_EQ(s.head.head_bytes, req.size() - 12);
    EXPECT_EQ(s.head.header_count, 2);
  }
}

TEST(RequestFraming, IncompleteHeadWaits) {
  EXPECT_FALSE(scan_all("GET /health HTTP/1.1\r\nHost: x\r\n").done);
  EXPECT_FALSE(scan_all("GET /health HTTP/1.1\r\nHost: x\r\n\r").done);
}

TEST(RequestFraming, BareLineFeedsEndLines) {
  const Scan s = scan_all("GET /health HTTP/1.1\nHost: x\n\n");
  ASSERT_TRUE(s.done);
  EXPECT_FALSE(s.error);
  EXPECT_EQ(s.head.body, BodyFraming::kNone);
}

TEST(RequestFraming, ConflictingContentLengthIs400) {
  const Scan s = scan_all("POST / HTTP/1.1\r\nContent-Length: 38\r\nContent-Length: 5\r\n\r\n");
  ASSERT_TRUE(s.done);
  EXPECT_EQ(s.error.status, 400);
  EXPECT_NE(s.error.message.find("conflicting Content-Length"), std::string::npos);
  EXPECT_EQ(scan_all("POST / HTTP/1.1\r\nContent-Length: 5, 6\r\n\r\n").error.status, 400);
  // Repeated equal values are one length (RFC 9110 section 8.6).
  const Scan same =
      scan_all("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5, 5\r\n\r\n");
  EXPECT_FALSE(same.error);
  EXPECT_EQ(same.head.content_length, 5u);
}

TEST(RequestFraming, InvalidOrOversizedContentLength) {
  FramingLimits limits;
  limits.max_body_bytes = 8u << 20;
  EXPECT_EQ(scan_all("POST / HTTP/1.1\r\nContent-Length: 9000000\r\n\r\n", limits).error.status,
            413);
  EXPECT_EQ(scan_all("POST / HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n").error.status, 413);
  EXPECT_EQ(
      scan_all("POST / HTTP/1.1\r\nContent-Length: 999999999999999999999999\r\n\r\n").error.status,
      413);
  EXPECT_EQ(scan_all("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n").error.status, 400);
  EXPECT_EQ(scan_all("POST / HTTP/1.1\r\nContent-Length: 1e3\r\n\r\n").error.status, 400);
  EXPECT_EQ(scan_all("POST / HTTP/1.1\r\nContent-Length:\r\n\r\n").error.status, 400);
}

TEST(RequestFraming, TransferEncoding) {
  const Scan chunked = scan_all("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
  EXPECT_FALSE(chunked.error);
  EXPECT_EQ(chunked.head.body, BodyFraming::kChunked);
  EXPECT_EQ(scan_all("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n")
                .error.status,
            400);
  EXPECT_EQ(scan_all("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n").error.status, 501);
}

TEST(RequestFraming, HeaderCountAndHeadSizeLimits) {
  FramingLimits limits;
  limits.max_header_count = 10;
  std::string req = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 10; ++i) req += "X-H" + std::to_string(i) + ": v\r\n";
  EXPECT_FALSE(scan_all(req + "\r\n", limits).error);
  // The 11th header is refused as soon as it is complete, without waiting for the head's end.
  const Scan over = scan_all(req + "X-H10: v\r\n", limits);
  ASSERT_TRUE(over.done);
  EXPECT_EQ(over.error.status, 431);
  limits.max_header_count = 100000;
  limits.max_head_bytes = 1024;
  const Scan big = scan_all("GET / HTTP/1.1\r\nX: " + std::string(2000, 'a'), limits);
  ASSERT_TRUE(big.done);
  EXPECT_EQ(big.error.status, 431);
}

TEST(RequestFraming, MalformedHeads) {
  EXPECT_EQ(scan_all("GET /\r\n\r\n").error.status, 400);
  EXPECT_EQ(scan_all("GET / HTTP/2.0\r\n\r\n").error.status, 505);
  EXPECT_EQ(scan_all("GET / HTTP/1.1\r\nNoColon\r\n\r\n").error.status, 400);
  EXPECT_EQ(scan_all("GET / HTTP/1.1\r\nBad Name: v\r\n\r\n").error.status, 400);
  EXPECT_EQ(scan_all("GET / HTTP/1.1\r\nA: b\r\n  folded\r\n\r\n").error.status, 400);
}

TEST(RequestFraming, ExpectContinue) {
  EXPECT_TRUE(scan_all("POST / HTTP/1.1\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n")
                  .head.expect_continue);
}

TEST(RequestFraming, RewriteHeadDropsFramingHeaders) {
  const std::string head =
      "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n";
  EXPECT_EQ(rewrite_head(head, 7), "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 7\r\n\r\n");
}

TEST(ChunkedBody, DecodesChunksExtensionsAndTrailers) {
  const std::string body =
      "4;ext=1\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nT: v\r\n\r\nNEXT";
  ChunkedBodyDecoder whole(1 << 20);
  size_t consumed = 0;
  ASSERT_EQ(whole.feed(body, &consumed), ChunkedBodyDecoder::Result::kDone);
  EXPECT_EQ(whole.body(), "Wikipedia in\r\n\r\nchunks.");
  EXPECT_EQ(body.substr(consumed), "NEXT");
  // Byte by byte: the same body, and the same end.
  ChunkedBodyDecoder bytes(1 << 20);
  size_t total = 0;
  ChunkedBodyDecoder::Result r = ChunkedBodyDecoder::Result::kNeedMore;
  for (size_t i = 0; i < body.size() && r == ChunkedBodyDecoder::Result::kNeedMore; ++i) {
    size_t used = 0;
    r = bytes.feed(std::string_view(body).substr(i, 1), &used);
    total += used;
  }
  EXPECT_EQ(r, ChunkedBodyDecoder::Result::kDone);
  EXPECT_EQ(bytes.body(), whole.body());
  EXPECT_EQ(total, consumed);
}

TEST(ChunkedBody, ErrorsAndLimit) {
  size_t consumed = 0;
  ChunkedBodyDecoder bad_size(1 << 20);
  EXPECT_EQ(bad_size.feed("zz\r\n", &consumed), ChunkedBodyDecoder::Result::kError);
  EXPECT_EQ(bad_size.error().status, 400);
  ChunkedBodyDecoder too_long(1 << 20);
  EXPECT_EQ(too_long.feed("2\r\nabc\r\n", &consumed), ChunkedBodyDecoder::Result::kError);
  ChunkedBodyDecoder over(10);
  EXPECT_EQ(over.feed("6\r\nabcdef\r\n6\r\n", &consumed), ChunkedBodyDecoder::Result::kError);
  EXPECT_EQ(over.error().status, 413);
  ChunkedBodyDecoder huge(1 << 20);
  EXPECT_EQ(huge.feed("ffffffffffffffffff\r\n", &consumed), ChunkedBodyDecoder::Result::kError);
  EXPECT_EQ(huge.error().status, 413);
}

}  // namespace
}  // namespace llmserve
