// A disk tier page file (engine/kv_offload/kv_page_file.h), as a restarted daemon finds it:
// anything may be there. A page that parses must lie within the bytes given, hold a prefix that
// is a multiple of its block size, and encode back to exactly those bytes (so no byte of it
// escaped the checksums). Seeds (tests/fuzz/corpus/kv_page): pages written by encode_kv_page
// (one and two blocks, salted or not), one torn, one with a payload byte flipped, a bare header.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "engine/kv_offload/kv_page_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  std::vector<int32_t> tokens;
  auto prefix = llmserve::parse_kv_page_prefix(bytes, tokens);
  if (prefix.is_ok() && (llmserve::kv_page_prefix_bytes(prefix->num_prefix_tokens) > size ||
                         prefix->num_prefix_tokens % prefix->block_size != 0)) {
    std::abort();
  }
  auto page = llmserve::parse_kv_page(bytes, tokens);
  if (!page.is_ok()) return 0;
  if (!prefix.is_ok()) std::abort();  // a whole page's header always parses alone
  const auto again = llmserve::encode_kv_page(page->header, page->tokens, page->payload);
  if (again.size() != size || !std::equal(again.begin(), again.end(), bytes.begin())) std::abort();
  return 0;
}
