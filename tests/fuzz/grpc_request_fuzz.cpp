// gRPC Generate / Complete: arbitrary bytes parsed as a llmserve.v1.GenerateRequest, then the
// same validation the service runs (parse_proto_request + SamplingParams::validate).
#include <cstddef>
#include <cstdint>

#include "llmserve/v1/generation.pb.h"
#include "server/grpc/proto_request.h"
#include "tests/fuzz/request_fuzz_checks.h"
#include "tests/unit/server/fake_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const llmserve::testing::FakeTokenizer tok;
  static const llmserve::RequestLimits limits = llmserve::fuzz::fuzz_limits(tok.vocab_size());
  llmserve::v1::GenerateRequest req;
  if (!req.ParseFromArray(data, static_cast<int>(size))) return 0;
  auto parsed = llmserve::parse_proto_request(req, tok, limits);
  if (parsed.is_ok()) llmserve::fuzz::check_accepted(*parsed, limits);
  return 0;
}
