// The descriptive answers of vllm.grpc.engine.VllmEngine: GetModelInfo, GetServerInfo and
// GetLoads, read from the engine and the server state (docs/ROUTERS.md lists each field).
#pragma once

#include <string>

#include "engine/kv_transfer/kv_handoff.h"
#include "server/common/server_state.h"
#include "vllm/grpc/engine/vllm_engine.pb.h"

namespace llmserve {

// The PD pairing protocol llmserve reports: a router pairs a prefill worker with a decode
// worker only when both report the same value, so llmserve never pairs with vLLM.
inline constexpr const char* kLlmservePairingProtocol = kKvPairingProtocol;

// tokenizer_path: where the gateway finds tokenizer.json (the model's directory), or the GGUF
// file itself, which the gateway cannot read and then asks GetTokenizer for.
::vllm::grpc::engine::GetModelInfoResponse vllm_model_info(const ServerState& state);
// uptime_seconds: since the server started; last_receive: seconds since the epoch of the last
// Generate call (0 before the first).
::vllm::grpc::engine::GetServerInfoResponse vllm_server_info(const ServerState& state,
                                                             double uptime_seconds,
                                                             double last_receive);
// One rank (0): running and waiting requests, KV use in [0, 1], capacity, prefix-cache hit rate
// and waiting prompt tokens. `dp_rank` other than 0 gives no loads.
::vllm::grpc::engine::GetLoadsResponse vllm_loads(const ServerState& state,
                                                  const ::vllm::grpc::engine::GetLoadsRequest& r);

}  // namespace llmserve
