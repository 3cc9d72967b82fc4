// Settings of disaggregated prefill/decode (config section kv_transfer).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace llmserve {

struct KvTransferOptions {
  // none | producer (keeps prefills for consumers) | consumer (pulls them) | both
  std::string role = "none";
  std::string host = "127.0.0.1";      // the transport listens here; UCX uses only its interface
  std::string advertise_host;          // remote_host in handoffs; "" = host
  int32_t port = 5600;                 // 0 = any free port
  double lease_seconds = 30;           // a handoff's blocks stay pinned this long without a release
  double pull_timeout_seconds = 10;    // a consumer's reads give up (local prefill) after this
  double connect_timeout_seconds = 2;  // a consumer's connect + open gives up after this
  // The deployment's shared secret (>= 16 bytes): authenticates the daemons to each other and
  // signs handoffs. Required with a role.
  std::string secret;
  // The deployment's other daemons ("host" or "host:port"): a producer accepts connections only
  // from these hosts and a consumer pulls only from these (or from handoffs signed with the
  // secret). Empty = any, the secret still required.
  std::vector<std::string> peers;
  // Consumer: accept a handoff that carries no valid signature (a client's own
  // kv_transfer_params) when its producer is in peers. Off: only signed handoffs are pulled.
  bool accept_client_params = false;
  // Producer: blocks pinned for consumers at most, over all leases; past it a prefill answers no
  // handoff (its consumer prefills locally). 0 = half of the KV cache.
  int64_t max_pinned_blocks = 0;

  bool produces() const { return role == "producer" || role == "both"; }
  bool consumes() const { return role == "consumer" || role == "both"; }
};

}  // namespace llmserve
