// What a producer answers for a prefill it keeps for a consumer (the router relays it verbatim as
// kv_transfer_params) and what a consumer reads back: where the pinned blocks are, under which
// lease, and the layout they were written in.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/kv_transfer/kv_layout.h"

namespace llmserve {

// Pairing tag of this handoff format; GetServerInfo reports it so a router pairs llmserve only
// with llmserve.
inline constexpr const char* kKvPairingProtocol = "llmserve-kv/1";

struct KvHandoff {
  std::string engine_id;  // the producer daemon (random per start)
  std::string lease_id;   // remote_request_id: names the pinned blocks on the producer
  std::string host;       // the producer's transport address
  int32_t port = 0;
  std::vector<int32_t> block_ids;  // the prompt's blocks, in order, on the producer
  int32_t num_tokens = 0;          // prompt tokens whose K/V the blocks hold
  uint64_t prompt_hash = 0;        // of the prompt's token ids (kv_prompt_hash)
  int32_t tp_size = 1;
  KvLayout layout;  // array_block_bytes left empty: the transport handshake checks those
};

// What a request asks of the KV transfer: produce (keep its prompt's blocks for a consumer) or
// consume (pull them from the producer named in `handoff` instead of computing the prompt).
struct KvTransferRequest {
  bool produce = false;
  bool consume = false;
  KvHandoff handoff;  // with consume
};

}  // namespace llmserve
