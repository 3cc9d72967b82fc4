// What a producer answers for a prefill it keeps for a consumer (the router relays it verbatim as
// kv_transfer_params) and what a consumer reads back: where the pinned blocks are, under which
// lease token, the layout they were written in, and the producer's signature over all of it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/kv_transfer/kv_layout.h"

namespace llmserve {

// Pairing tag of this handoff format; GetServerInfo reports it so a router pairs llmserve only
// with llmserve.
inline constexpr const char* kKvPairingProtocol = "llmserve-kv/2";

struct KvHandoff {
  std::string engine_id;  // the producer daemon (random per start)
  std::string lease_id;   // remote_request_id: the lease token (128 random bits, hex)
  std::string host;       // the producer's transport address
  int32_t port = 0;
  std::vector<int32_t> block_ids;  // the prompt's blocks, in order, on the producer
  int32_t num_tokens = 0;          // prompt tokens whose K/V the blocks hold
  uint64_t prompt_hash = 0;        // of the prompt's token ids (kv_prompt_hash)
  int32_t tp_size = 1;
  KvLayout layout;  // array_block_bytes left empty: the transport handshake checks those
  // HMAC-SHA256 (hex) by the producer over every field above with the deployment's secret;
  // "" when absent (a client's own handoff).
  std::string signature;
};

// The bytes a handoff's signature covers: every field but the signature, length-prefixed.
std::string kv_handoff_signed_bytes(const KvHandoff& h);

// What a request asks of the KV transfer: produce (keep its prompt's blocks for a consumer) or
// consume (pull them from the producer named in `handoff` instead of computing the prompt).
struct KvTransferRequest {
  bool produce = false;
  bool consume = false;
  KvHandoff handoff;  // with consume
};

}  // namespace llmserve
