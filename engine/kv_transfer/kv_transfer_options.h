// Settings of disaggregated prefill/decode (config section kv_transfer).
#pragma once

#include <cstdint>
#include <string>

namespace llmserve {

struct KvTransferOptions {
  // none | producer (keeps prefills for consumers) | consumer (pulls them) | both
  std::string role = "none";
  std::string host = "127.0.0.1";    // the transport listens here (producer)
  std::string advertise_host;        // remote_host in handoffs; "" = host
  int32_t port = 5600;               // 0 = any free port
  double lease_seconds = 30;         // a handoff's blocks stay pinned this long without a release
  double pull_timeout_seconds = 10;  // a consumer's pull gives up (local prefill) after this

  bool produces() const { return role == "producer" || role == "both"; }
  bool consumes() const { return role == "consumer" || role == "both"; }
};

}  // namespace llmserve
