// What a peer or a router hands a KV consumer: the first byte picks the parser. 0: the KV
// transfer's binary control messages (Hello with a layout, HelloReply, Open, OpenReply with its
// regions and remote keys, Release, ReleaseAck), which must decode within the bytes given and
// re-encode to exactly those bytes.
// Otherwise: the rest as JSON kv_transfer_params, whose accepted handoffs must survive being
// written back and read again unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include <nlohmann/json.hpp>

#include "engine/kv_transfer/kv_messages.h"
#include "server/common/kv_transfer_params.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::span<const uint8_t> rest(data + 1, size - 1);
  if (data[0] == 0) {
    auto m = llmserve::decode_kv_message(rest);
    if (m.is_ok()) {
      const std::string again = llmserve::encode_kv_message(*m);
      if (again.size() != rest.size() ||
          !std::equal(rest.begin(), rest.end(), again.begin(),
                      [](uint8_t a, char b) { return a == static_cast<uint8_t>(b); })) {
        std::abort();
      }
    }
    return 0;
  }
  const auto doc = nlohmann::json::parse(rest.begin(), rest.end(), nullptr, false);
  if (doc.is_discarded()) return 0;
  auto kt = llmserve::parse_kv_transfer_params(doc, "kv_transfer_params");
  if (!kt.is_ok() || !kt->consume) return 0;
  auto back = llmserve::parse_kv_transfer_params(llmserve::kv_transfer_params_json(kt->handoff),
                                                 "kv_transfer_params");
  if (!back.is_ok() || !back->consume || back->handoff.block_ids != kt->handoff.block_ids ||
      back->handoff.lease_id != kt->handoff.lease_id || back->handoff.port != kt->handoff.port ||
      back->handoff.prompt_hash != kt->handoff.prompt_hash ||
      back->handoff.signature != kt->handoff.signature ||
      !(back->handoff.layout == kt->handoff.layout)) {
    std::abort();
  }
  return 0;
}
