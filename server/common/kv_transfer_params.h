// kv_transfer_params, the object a P/D router relays from the prefill leg's answer into the
// decode leg (HTTP: a top-level field; gRPC: kv_transfer_params_json), read into the engine's
// KvTransferRequest and written from its KvHandoff. The shape follows vLLM's NIXL handoff
// (do_remote_prefill, remote_engine_id, remote_request_id, remote_host, remote_port,
// remote_block_ids, tp_size) plus llmserve's pairing_protocol, KV layout, prompt check and the
// producer's signature (HMAC-SHA256 hex with the deployment's kv_transfer.secret).
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "engine/core/status.h"
#include "engine/kv_transfer/kv_handoff.h"

namespace llmserve {

// `field` names the value in errors ("kv_transfer_params"). null or an object without either flag
// asks nothing. do_remote_decode: true asks to produce. do_remote_prefill: true with another
// pairing_protocol (vLLM's handoff) asks nothing: the request is prefilled here. With ours, every
// field must be present and typed, lengths bounded (INVALID_ARGUMENT "<field>.<key>: ...").
Result<KvTransferRequest> parse_kv_transfer_params(const nlohmann::json& v, std::string_view field);

// The handoff as the producer answers it (do_remote_prefill: true).
nlohmann::json kv_transfer_params_json(const KvHandoff& h);

}  // namespace llmserve
