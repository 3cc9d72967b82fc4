// POST /v1/completions: arbitrary body bytes -> parse_completion_request (byte tokenizer, vocab
// 300). Accepted requests must satisfy the invariants in request_fuzz_checks.h.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "server/http/completion_request.h"
#include "tests/fuzz/request_fuzz_checks.h"
#include "tests/unit/server/fake_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const llmserve::testing::FakeTokenizer tok;
  static const llmserve::RequestLimits limits = llmserve::fuzz::fuzz_limits(tok.vocab_size());
  std::string_view body(reinterpret_cast<const char*>(data), size);
  auto parsed = llmserve::parse_completion_request(body, tok, limits);
  if (parsed.is_ok()) llmserve::fuzz::check_accepted(*parsed, limits);
  return 0;
}
